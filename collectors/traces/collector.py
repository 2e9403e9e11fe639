"""Collect spans from a trace file and its rollover files as Triton writes them.

Why a file is held back: a rollover file is written in one go, but a reader can catch it
half-written, and a server killed mid-write leaves it cut for good. A truncated file is
therefore read only once its size has stayed the same for one more ``collect()`` (or a
later rollover file exists); then its complete records are emitted and the truncation is
counted. Each file's spans are emitted once; a file that later grows emits only spans
with ids not emitted from it before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from collectors.base import Batch, Collector, Health
from collectors.traces.files import trace_files
from collectors.traces.parser import parse_trace_file_lenient
from observability.events import TraceSpan

__all__ = ["TraceCollectorCounters", "TraceFileCollector"]


@dataclass
class TraceCollectorCounters:
    files_read: int = 0
    spans: int = 0
    truncated_files: int = 0
    skipped_records: int = 0
    unreadable: int = 0
    problems: list[str] = field(default_factory=list)
    """The most recent problems (bounded), each naming its file."""


@dataclass
class _FileState:
    size: int = -1
    emitted: set[int] = field(default_factory=set)
    done: bool = False


_MAX_PROBLEMS = 100


class TraceFileCollector(Collector):
    """``collect()`` returns the spans that appeared since the last call, in file order, as
    one batch named by the trace file's path (``[]`` when none appeared)."""

    signal = "traces"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.counters = TraceCollectorCounters()
        self._files: dict[str, _FileState] = {}

    def _problem(self, text: str) -> None:
        self.counters.problems.append(text)
        del self.counters.problems[:-_MAX_PROBLEMS]

    def health(self) -> Health:
        c = self.counters
        skipped = {
            reason: n
            for reason, n in (
                ("record", c.skipped_records),
                ("truncated_file", c.truncated_files),
                ("unreadable_file", c.unreadable),
            )
            if n
        }
        return Health(True, c.problems[-1] if c.problems else "", c.files_read, skipped)

    def collect(self) -> list[Batch]:
        spans = self.spans()
        return [Batch(str(self.path), spans)] if spans else []

    def spans(self) -> list[TraceSpan]:
        """The spans that appeared since the last call, in file order."""
        out: list[TraceSpan] = []
        files = trace_files(self.path)
        for position, file in enumerate(files):
            state = self._files.setdefault(file.name, _FileState())
            try:
                size = file.stat().st_size
            except OSError:
                continue
            if state.done and size == state.size:
                continue
            try:
                text = file.read_text(encoding="utf-8", errors="replace")
            except OSError as err:
                self.counters.unreadable += 1
                self._problem(f"{file.name}: {err}")
                continue
            parsed = parse_trace_file_lenient(text, file.name)
            later_exists = position < len(files) - 1 and file.name != self.path.name
            settled = size == state.size or later_exists
            state.size = size
            if parsed.truncated and not settled:
                continue  # maybe still being written: look again next time
            self.counters.files_read += 1
            if parsed.truncated:
                self.counters.truncated_files += 1
            self.counters.skipped_records += parsed.skipped_records
            for problem in parsed.problems:
                self._problem(f"{file.name}: {problem}")
            for span in parsed.spans:
                if span.trace_id not in state.emitted:
                    state.emitted.add(span.trace_id)
                    out.append(span)
            state.done = True
        self.counters.spans += len(out)
        return out
