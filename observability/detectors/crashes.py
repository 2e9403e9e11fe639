"""tritonserver crashing: the fatal signal it prints, and the backtrace after it.

Why: a crashed server leaves its last requests and batches open in the log forever, and
without this every hang detector read them as hangs (tests/fixtures/foreign tts_queue_full:
two critical ``hung_request`` for a server that had segfaulted). Triton's signal handler
writes ``Signal (11) received.`` and then a numbered backtrace, without log headers, so the
parser keeps them as ``StubOutput``; a handled ``Signal (15) received.`` (SIGTERM, SIGINT)
starts a graceful exit and is not a crash.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from observability import events as ev

__all__ = ["SAME_CRASH_NS", "Crash", "crash_of", "crashes"]

FATAL = {
    4: "an illegal instruction (SIGILL)",
    6: "an abort (SIGABRT)",
    7: "a bus error (SIGBUS)",
    8: "a floating-point exception (SIGFPE)",
    11: "a segmentation fault (SIGSEGV)",
}
_SIGNAL = re.compile(r"^\s*Signal \((\d+)\) received\.")
_FRAME = re.compile(r"^\s*\d+# (\S+) in (\S+)")
SAME_CRASH_NS = 10_000_000_000
"""The signal lines of one crash (one per thread that faults) come within this of each other,
and the dying server's other threads may log that long after the first."""


@dataclass(frozen=True)
class Crash:
    at_ns: int
    offset: int
    signal: int
    frames: tuple[str, ...]
    """Named frames of the backtrace, innermost first: ``function (library)``."""

    @property
    def what(self) -> str:
        return FATAL[self.signal]


def crash_of(record: object) -> int | None:
    """The fatal signal a log record announces, else None."""
    if type(record) is not ev.StubOutput:
        return None
    m = _SIGNAL.match(record.text)
    if m is None:
        return None
    signal = int(m.group(1))
    return signal if signal in FATAL else None


def crashes(records: Iterable[object]) -> list[Crash]:
    """Each crash in log records in time order, with its backtrace's named frames (pure)."""
    out: list[Crash] = []
    current: tuple[int, int, int] | None = None
    frames: list[str] = []
    for r in records:
        signal = crash_of(r)
        if signal is not None and isinstance(r, ev.StubOutput):
            if current is not None and r.at_ns - current[0] < SAME_CRASH_NS:
                continue  # every crashing thread prints it: one crash
            if current is not None:
                out.append(Crash(*current, tuple(frames)))
            current, frames = (r.at_ns, r.offset, signal), []
        elif current is not None and type(r) is ev.StubOutput:
            m = _FRAME.match(r.text)
            if m and not m.group(1).startswith("0x"):
                frames.append(f"{m.group(1)} ({m.group(2).rsplit('/', 1)[-1]})")
    if current is not None:
        out.append(Crash(*current, tuple(frames)))
    return out
