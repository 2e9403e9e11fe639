"""The live log collector on a real file, poll after poll."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.logs.collector import LogCollector, _runs
from collectors.tail.fingerprint import FileIdentity
from collectors.tail.tailer import Line
from observability import events as ev
from tests.hypothesis_profiles import examples

HEADER = (
    b'I1125 08:26:03.759038 7474 python_be.cc:1310] "model stream, instance stream_0_0, '
    b'executing 1 requests"\n'
)
STALLED = (
    b"triton-obs bls: STALLED stream model=stream instance=stream_0_0 request_id='' "
    b"responses=2 idle=1.57s stall=1.5s age=1.59s trace_id=9d40faf80c80b4951e9140d03226c0e2\n"
)


def test_stub_text_at_the_start_of_a_poll_takes_the_last_headers_time(tmp_path: Path) -> None:
    """A stub's stderr line has no time of its own. When a poll begins with one (the
    library's STALLED or HUNG report, written seconds after Triton's last line), it must
    not be dated 0 — the epoch falls out of every window, and the report with it."""
    log = tmp_path / "triton.log"
    log.write_bytes(HEADER)
    collector = LogCollector(log, tmp_path / "tail.json")
    [first] = [e for b in collector.collect() for e in b.events]
    assert isinstance(first, ev.InstanceExecuting)
    collector.commit()
    with log.open("ab") as f:
        f.write(STALLED)
    [stub] = [e for b in collector.collect() for e in b.events]
    assert isinstance(stub, ev.StubOutput) and "STALLED stream" in stub.text
    assert stub.at_ns == first.header.at_ns
    collector.close()


def _runs_line_by_line(lines: list[Line]) -> list[list[Line]]:
    """The loop ``_runs`` replaced: a new run at a new file or a gap."""
    runs: list[list[Line]] = []
    for line in lines:
        last = runs[-1][-1] if runs else None
        if last is None or line.file != last.file or line.offset != last.end:
            runs.append([])
        runs[-1].append(line)
    return runs


_FILES = [FileIdentity(1, 2, "ab", 2, True), FileIdentity(1, 3, "cd", 2, True)]


@settings(max_examples=examples(500), deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2), st.binary(min_size=1, max_size=4)),
        max_size=30,
    )
)
def test_runs_cut_where_the_file_changes_or_a_gap_opens(
    steps: list[tuple[int, int, bytes]],
) -> None:
    """Cut by list passes, as a loop a line cut them. File 2 is an equal copy of file 0's
    identity (not the same object): it continues file 0's run."""
    files = [*_FILES, FileIdentity(1, 2, "ab", 2, True)]
    lines: list[Line] = []
    ends = [0, 0, 0]
    for which, gap, data in steps:
        line = Line(files[which], ends[which % 2] + gap, data)
        ends[which % 2] = line.end
        lines.append(line)
    assert list(_runs(lines)) == _runs_line_by_line(lines)
