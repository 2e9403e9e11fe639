"""Blocks are zstd since schema 8; the xz blocks of schemas 6-7 and the zlib blocks of schema 5
stay in migrated stores and must read back as they were written. The records are those of a
real Triton 2.51 log (``tests/fixtures/logs/glog_2.51_session.log``)."""

from __future__ import annotations

import lzma
import zlib
from pathlib import Path

import pytest
import zstandard

from collectors.logs.parser import parse_lines
from observability.store import blocks

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "glog_2.51_session.log"


def _records() -> list[object]:
    lines = LOG.read_bytes().splitlines(keepends=True)
    records = list(parse_lines(lines, year=2026))
    assert len(records) > 100
    return records


def test_new_blocks_are_zstd_and_read_back() -> None:
    records = _records()
    block = blocks.encode_block(records)
    assert block.startswith(blocks._ZSTD_MAGIC)
    assert [e for _, e in blocks.decode_block(block)] == records


@pytest.mark.parametrize(
    "older",
    [
        lambda body: lzma.compress(body, format=lzma.FORMAT_XZ, preset=1),
        zlib.compress,
    ],
    ids=["xz (schemas 6-7)", "zlib (schema 5)"],
)
def test_blocks_of_earlier_schemas_read_as_they_were_written(older) -> None:
    records = _records()
    body = blocks._inflate(blocks.encode_block(records))
    assert [e for _, e in blocks.decode_block(older(body))] == records


def test_a_damaged_zstd_header_is_refused_not_allocated() -> None:
    """A page damaged to claim a terabyte body: a BlockError, no MemoryError or swap."""
    forged = blocks._ZSTD_MAGIC + bytes([0xE0]) + (1 << 40).to_bytes(8, "little") + b"\0" * 8
    assert zstandard.frame_content_size(forged) == 1 << 40
    with pytest.raises(blocks.BlockError, match="zstd block of"):
        blocks.decode_block(forged)


def test_a_truncated_zstd_block_is_a_block_error() -> None:
    block = blocks.encode_block(_records())
    with pytest.raises(blocks.BlockError):
        blocks.decode_block(block[: len(block) // 2])
