"""A record that gains a field keeps reading its old blocks.

Blocks store a record type as positional columns (``store/blocks.py``), so a field added to
an event (always last, with a default: ``ModelConfig.preserve_ordering``, the fifteenth
session) leaves every block written before it one column short. Those blocks are what a
user's store holds after an upgrade; they must decode, the new field at its default.
"""

from __future__ import annotations

import json

import pytest

from observability import events as ev
from observability.store import blocks
from tests.foreign.parsed import parsed


def _configs() -> list[ev.ModelConfig]:
    """The configs dq's models logged at load (a real 2.51 log): dq_rank's batcher keeps
    responses in order, dq_gateway has no batcher."""
    found = [e for e in parsed("dq_child_hang_in_batch").events if isinstance(e, ev.ModelConfig)]
    assert {c.model for c in found if c.preserve_ordering} == {"dq_rank"}
    assert {c.model for c in found if not c.preserve_ordering} >= {"dq_gateway"}
    return found


def _without_last_columns(block: bytes, kind: str, n: int) -> bytes:
    """The block as a writer that did not know ``kind``'s last ``n`` fields wrote it."""
    body = json.loads(blocks._inflate(block))
    body["c"][kind] = body["c"][kind][:-n]
    return blocks._compress(json.dumps(body, separators=(",", ":")).encode())


def test_a_block_written_before_a_field_was_added_reads_it_as_its_default() -> None:
    configs = _configs()
    old = _without_last_columns(blocks.encode_block(configs), "ModelConfig", 1)
    read = [e for _, e in blocks.decode_block(old)]
    assert [c.preserve_ordering for c in read] == [False] * len(configs)
    assert read == [ev.ModelConfig(c.header, c.model, c.outputs, c.decoupled) for c in configs], (
        "every other field as written"
    )


def test_a_block_short_of_a_field_without_a_default_is_refused() -> None:
    short = _without_last_columns(blocks.encode_block(_configs()), "ModelConfig", 2)
    with pytest.raises(blocks.BlockError, match="ModelConfig: 7 columns"):
        blocks.decode_block(short)


def test_todays_blocks_read_back_whole() -> None:
    configs = _configs()
    assert [e for _, e in blocks.decode_block(blocks.encode_block(configs))] == configs
