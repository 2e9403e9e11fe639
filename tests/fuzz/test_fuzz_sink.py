"""Fuzz the column sink (``collectors/logs/_hotpath.c``'s ``Sink``) with the log fuzzer's
garbage (real recorded lines cut, glued and mutated: ``test_fuzz_logs._log``), at any year,
offset and block size: the blocks cut from the columns hold exactly the records a list gets,
encode to the same bytes as those records' block, and vouch for a span only where
``_blockpack.log_run`` would vouch for the same records.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.logs.parser import column_sink, parse_runs
from observability.store import codec
from observability.store.blocks import ColumnBlock, encode_block, encode_columns
from tests.fuzz import test_fuzz_logs
from tests.fuzz._support import fuzz_settings

pytestmark = pytest.mark.skipif(column_sink() is None, reason="the compiled scan is not built")


@fuzz_settings(300)
@given(
    data=test_fuzz_logs._log(),
    year=st.sampled_from([1970, 2026, 2262, 2263, 9999]),
    offset=st.sampled_from([0, 7, 2**62, 2**63 - 1]),
    size=st.integers(1, 40),
    run=st.integers(1, 30),
)
def test_blocks_from_the_sink_are_the_records_blocks(
    data: bytes, year: int, offset: int, size: int, run: int
) -> None:
    lines = data.splitlines(keepends=True)
    runs = [lines[i : i + run] for i in range(0, len(lines), run)]
    records = [e for got in parse_runs(runs, year=year, offset=offset) for e in got]
    sink = column_sink()
    assert sink is not None
    blocks: list[ColumnBlock] = []
    for held in parse_runs(runs, year=year, offset=offset, into=sink):
        assert held is sink
        while len(sink) >= size:
            blocks.append(ColumnBlock.cut(sink, size))
    blocks.append(ColumnBlock.cut(sink, size))
    assert sum(map(len, blocks)) == len(records)
    at = 0
    for block in blocks:
        mine = records[at : at + len(block)]
        at += len(block)
        assert block.records() == mine
        if mine:
            assert encode_columns(block) == encode_block(mine)
        checked = codec.compiled.log_run(mine) if codec.compiled is not None and mine else None
        if block.span is not None and checked is not None:
            assert block.span[2:] == checked[1:]
            assert block.span[:2] == (min(checked[0]), max(checked[0]))
        assert (block.span is None) == (checked is None)
