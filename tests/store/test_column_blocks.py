"""The scan's column sink (``collectors/logs/_hotpath.c``'s ``Sink``) and the blocks cut from
it (``blocks.ColumnBlock``): a block encoded from columns is the block of the same records
(byte for byte), its records read back are the records a list sink gets, and its span says
when a block cannot be held without keys (what ``_blockpack.log_run`` says of a list).

The logs are real: the demo's four recordings of Triton 2.51 (tests/fixtures/recordings).
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from collectors.logs.hotpath import ColumnSink
from collectors.logs.parser import ParseStats, column_sink, parse_runs
from observability import events as ev
from observability.store import codec
from observability.store.blocks import ColumnBlock, encode_block, encode_columns

REPO = Path(__file__).resolve().parents[2]
_RECORDINGS = sorted((REPO / "tests/fixtures/recordings").glob("*/bundle.tar.gz"))

pytestmark = pytest.mark.skipif(column_sink() is None, reason="the compiled scan is not built")


def _log(bundle: Path) -> list[bytes]:
    with tarfile.open(bundle) as tf:
        for member in tf:
            if member.name.endswith("triton.log"):
                data = tf.extractfile(member).read()  # type: ignore[union-attr]
                return data.splitlines(keepends=True)
    raise AssertionError(f"no log in {bundle}")


def _runs(lines: list[bytes], size: int) -> list[list[bytes]]:
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def _block(sink: object, n: int) -> ColumnBlock:
    return ColumnBlock.cut(sink, n)


@pytest.mark.parametrize("bundle", _RECORDINGS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("block", [8192, 777])
def test_blocks_cut_from_columns_are_the_blocks_of_the_records(bundle: Path, block: int) -> None:
    """Blocks cut as the runs come (a block's worth whenever the sink holds one), of two sizes
    that put the cuts in different places; the records the Python loop made among them too."""
    lines = _log(bundle)
    records = [e for run in parse_runs(_runs(lines, 4096), year=2026) for e in run]
    sink = column_sink()
    assert sink is not None
    stats = ParseStats()
    blocks: list[ColumnBlock] = []
    for held in parse_runs(_runs(lines, 4096), year=2026, into=sink, stats=stats):
        assert held is sink
        while len(sink) >= block:
            blocks.append(_block(sink, block))
    blocks.append(_block(sink, len(sink)))
    assert len(sink) == 0
    assert stats.records == len(records) == sum(map(len, blocks))
    at = 0
    for i, b in enumerate(blocks):
        mine = records[at : at + len(b)]
        at += len(b)
        assert b.records() == mine, f"block {i}: the records read back differ"
        assert encode_columns(b) == encode_block(mine), f"block {i}: the bytes differ"
        times = [e.header.at_ns if hasattr(e, "header") else e.at_ns for e in mine]
        offsets = [e.header.offset if hasattr(e, "header") else e.offset for e in mine]
        assert b.span == (min(times), max(times), offsets[0], offsets[-1])
    # the records the scan wrote as columns are most of them, and some came from Python
    parts = [(t, type(part)) for b in blocks for t, part in zip(b.kinds, b.parts, strict=True)]
    kept = {t for t, form in parts if form is list}
    written = {t for t, form in parts if form is tuple}
    assert ev.RequestStateChange in written
    assert kept, "no kind the scan never makes (a model's config, a state change)"


def _hdr(at: int, off: int) -> ev.LogRecord:
    return ev.LogRecord(at, ev.LogLevel.INFO, "f.cc", 1, off)


def _state(at: int, off: int, rid: str = "r") -> ev.RequestStateChange:
    return ev.RequestStateChange(_hdr(at, off), rid, "INITIALIZED", "PENDING")


def _filled(*records: object) -> ColumnSink:
    sink = column_sink()
    assert sink is not None
    for r in records:
        sink.append(r)
    return sink


def _appended(*records: object) -> ColumnBlock:
    sink = _filled(*records)
    return _block(sink, len(sink))


def test_appended_records_keep_their_order_and_kinds() -> None:
    model = ev.ModelStateChange(_hdr(5, 15), "m", 1, "READY", "")
    out = ev.StubOutput(6, 40, "a print")
    records = [_state(1, 10), model, _state(2, 20, "s"), out, _state(7, 50)]
    block = _appended(*records)
    assert block.kinds == [ev.RequestStateChange, ev.ModelStateChange, ev.StubOutput]
    assert block.order == b"[0,1,0,2,0]"
    assert type(block.parts[0]) is tuple and type(block.parts[1]) is list
    assert block.records() == records
    assert block.of({ev.ModelStateChange}) == [model]
    assert block.span == (1, 7, 10, 50)
    assert encode_columns(block) == encode_block(records)
    assert codec.kind_of(block.records()[1]) == "ModelStateChange"


def test_take_cuts_the_front_and_keeps_the_rest() -> None:
    records = [_state(i, 10 * i) for i in range(1, 6)]
    sink = _filled(*records)
    first = _block(sink, 2)
    assert len(sink) == 3
    rest = _block(sink, 99)  # no more than it holds
    assert (len(first), len(rest), len(sink)) == (2, 3, 0)
    assert first.records() + rest.records() == records
    assert first.order == b"2" and rest.span == (3, 5, 30, 50)


@pytest.mark.parametrize(
    ("records", "why"),
    [
        ([_state(1, 20), _state(2, 10)], "an offset goes back"),
        ([_state(1, 10), _state(2, 10, "s")], "one offset holds two records of one kind"),
        ([_state(1, 10), _state(2**63, 20)], "a time past 64 bits"),
        ([_state(1, 10), ev.StubOutput(2, -(2**64), "x")], "an offset past 64 bits"),
    ],
)
def test_a_block_that_cannot_be_held_without_keys_has_no_span(
    records: list[object], why: str
) -> None:
    block = _appended(*records)
    assert block.span is None, why
    assert block.records() == records


def test_one_offset_may_hold_records_of_two_kinds() -> None:
    """A line read as two records (a prepared request and its state): one offset each kind."""
    prepared = ev.RequestPrepared(_hdr(1, 10), "r", "m", 1, 1, 0)
    block = _appended(prepared, _state(1, 10))
    assert block.span == (1, 1, 10, 10)


def test_a_list_sink_still_gets_records_after_a_column_sink() -> None:
    """The scan writes into a Sink only while it scans into one."""
    lines = _log(_RECORDINGS[0])[:3000]
    sink = column_sink()
    assert sink is not None
    for _ in parse_runs([lines], year=2026, into=sink):
        pass
    assert len(sink) > 0
    records = [e for run in parse_runs([lines], year=2026) for e in run]
    assert len(records) == len(sink)
    assert all(e is not None for e in records)
    assert _block(sink, len(sink)).records() == records


def test_a_sink_refuses_what_is_not_a_record() -> None:
    sink = column_sink()
    assert sink is not None
    with pytest.raises(AttributeError):
        sink.append(ev.RequestStateChange.__new__(ev.RequestStateChange))  # slots unset
    assert len(sink) == 0


def test_times_and_offsets_past_64_bits_move_a_kind_to_its_lists() -> None:
    """A kind's times and offsets are held as C numbers until one is not a 64-bit int; then
    all of them, held and to come, are the kind's column lists: no value is lost or changed,
    before or after, in a block cut before the move or across it."""
    before = [_state(i, 10 * i) for i in range(1, 4)]
    sink = _filled(*before)
    first = _block(sink, 2)
    assert isinstance(first.parts[0], tuple) and type(first.parts[0][0]) is bytes
    past = [_state(2**64, 40), _state(5, 2**70), _state(6, 2**71)]
    for r in past:
        sink.append(r)
    rest = _block(sink, len(sink))
    assert isinstance(rest.parts[0], tuple) and type(rest.parts[0][0]) is list
    assert first.records() + rest.records() == before + past
    assert rest.span is None and first.span == (1, 2, 10, 20)
    assert encode_columns(first) == encode_block(before[:2])
    assert encode_columns(rest) == encode_block(before[2:] + past)


def test_a_delta_past_64_bits_is_packed_as_a_list_of_records_is() -> None:
    records = [_state(-(2**63), 10), _state(2**63 - 1, 20), _state(0, 30)]
    block = _appended(*records)
    assert block.span == (-(2**63), 2**63 - 1, 10, 30)
    assert encode_columns(block) == encode_block(records)
    assert block.records() == records


def test_the_scan_writes_into_a_kind_moved_to_its_lists() -> None:
    """A kind whose times went past 64 bits (a record the Python loop made) takes the scan's
    next records of that kind as int objects in its lists."""
    lines = _log(_RECORDINGS[0])[:3000]
    sink = column_sink()
    assert sink is not None
    odd = _state(2**64, 0)
    sink.append(odd)
    for _ in parse_runs([lines], year=2026, offset=1, into=sink):
        pass
    records = [e for run in parse_runs([lines], year=2026, offset=1) for e in run]
    assert any(type(e) is ev.RequestStateChange for e in records)
    block = _block(sink, len(sink))
    assert block.records() == [odd, *records]
    assert encode_columns(block) == encode_block([odd, *records])
