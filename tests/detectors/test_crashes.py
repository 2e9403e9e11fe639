"""A tritonserver that crashes: the fatal signal and backtrace it prints, read from a real
2.51 recording (tests/fixtures/foreign/tts_queue_full: a SIGSEGV inside
TRITONSERVER_ServerInferAsync, called from the python backend, about a second after a BLS
child was rejected by a full queue; see its PROVENANCE.md and README Round 11).

Before, the batches the crash left open were read as two critical hangs, and nothing said the
server had died.
"""

from __future__ import annotations

from observability import events as ev
from observability.detectors.crashes import crash_of, crashes
from observability.findings import Severity
from tests.foreign.parsed import analysis, parsed


def test_the_recorded_crash_is_one_crash_with_its_named_frames() -> None:
    stub = [e for e in parsed("tts_queue_full").events if isinstance(e, ev.StubOutput)]
    found = crashes(sorted(stub, key=lambda e: e.offset))
    assert len([e for e in stub if crash_of(e)]) >= 2, "every faulting thread printed it"
    (crash,) = found
    assert crash.signal == 11 and "segmentation fault" in crash.what
    assert any(f.startswith("TRITONSERVER_ServerInferAsync") for f in crash.frames)


def test_a_graceful_signal_is_not_a_crash() -> None:
    assert crash_of(ev.StubOutput(1, 0, "Signal (15) received.")) is None
    assert crash_of(ev.StubOutput(1, 0, "Signal (2) received.")) is None
    assert crash_of(ev.StubOutput(1, 0, "Signal (6) received.")) == 6


def test_a_crashed_server_is_down_and_its_open_batches_are_not_hangs() -> None:
    found = analysis("tts_queue_full").findings
    down = [f for f in found if f.kind == "target_down"]
    assert [f.severity for f in down] == [Severity.CRITICAL]
    assert "crashed" in down[0].summary and "Signal (11)" in down[0].summary
    assert [f for f in found if f.kind == "hung_request"] == []
