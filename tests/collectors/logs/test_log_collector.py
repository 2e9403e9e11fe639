"""The live log collector on a real file, poll after poll."""

from __future__ import annotations

from pathlib import Path

from collectors.logs.collector import LogCollector
from observability import events as ev

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
