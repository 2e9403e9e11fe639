"""Tail Triton's verbose log into typed events, committing read positions only once stored.

The tailer hands out lines with their byte offsets; the store keys records by (file identity,
offset), so a collector killed between storing and committing re-reads a few lines and
stores nothing twice.
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from collectors.base import Batch, Collector, Health
from collectors.logs.framing import Framing
from collectors.logs.parser import ParseStats
from collectors.logs.reader import parse_log
from collectors.tail.tailer import Line, Tailer
from observability.gcpause import gc_paused

__all__ = ["LogCollector"]


_file, _offset, _data = (operator.attrgetter(n) for n in ("file", "offset", "data"))


def _runs(lines: list[Line]) -> Iterator[list[Line]]:
    """Consecutive lines of one file with no gap: each is parsed from its first offset.

    In list passes: a poll is usually one run (one read's lines share their identity object
    and follow each other), and a loop a line was a tenth of a busy log's collection."""
    if not lines:
        return
    files = list(map(_file, lines))
    offsets = list(map(_offset, lines))
    ends = list(map(operator.add, offsets, map(len, map(_data, lines))))
    cuts = [
        i
        for i in itertools.compress(
            range(1, len(lines)),
            map(
                operator.or_,
                map(operator.is_not, files, files[1:]),
                map(operator.ne, ends, offsets[1:]),
            ),
        )
        if files[i] != files[i - 1] or offsets[i] != ends[i - 1]
    ]
    start = 0
    for cut in cuts:
        yield lines[start:cut]
        start = cut
    yield lines[start:]


def source_of(line: Line) -> str:
    """The store's name for a log file: device, inode and first-bytes fingerprint.

    The fingerprint tells a copytruncated file (same inode, new first bytes) from the old
    content. The tailer emits no line before the identity is final (its first line is
    complete), so one file always has one name.
    """
    f = line.file
    return f"log:{f.dev}:{f.inode}:{f.fingerprint}"


class LogCollector(Collector):
    """``collect()`` → one batch per file run; ``commit()`` after they are stored."""

    signal = "log"

    def __init__(
        self,
        path: Path | str,
        checkpoint_path: Path | str,
        utc_offset_s: int = 0,
        log_format: str = "auto",
    ) -> None:
        self.path = Path(path)
        self.tailer = Tailer(self.path, checkpoint_path)
        self.stats = ParseStats()
        self.framing = Framing(log_format)
        """The file's frame (docker, compose, CRI, ...): decided on its first lines, kept
        through rotations (the runtime that writes the file does not change)."""
        self.utc_offset_s = utc_offset_s
        self._uncommitted: list[Line] = []

    def collect(self) -> list[Batch]:
        # A busy poll's lines and the tailer's queue entries: tuples by the hundred thousand,
        # none in a cycle, that the collector's passes walked while they were made.
        with gc_paused():
            lines = self.tailer.poll()
        self._uncommitted.extend(lines)
        today = datetime.now(timezone.utc).date()
        out = []
        for run in _runs(lines):
            with gc_paused():  # records made in bulk, none in a cycle (gcpause.py)
                events = parse_log(
                    map(_data, run),
                    framing=self.framing,
                    today=today,
                    year=today.year,
                    utc_offset_s=self.utc_offset_s,
                    offset=run[0].offset,
                    stats=self.stats,
                    # A poll may begin with a stub's text (a HUNG or STALLED report, a
                    # traceback), which has no time of its own: the last header's, or now.
                    start_ns=self.stats.last_at_ns or time.time_ns(),
                )
            out.append(Batch(source_of(run[0]), events))
        return out

    def health(self) -> Health:
        stats = self.stats
        return Health(read=stats.lines, skipped=dict(stats.skipped), lag_bytes=self.lag_bytes())

    def commit(self) -> None:
        if self._uncommitted:
            self.tailer.commit_through(self._uncommitted[-1])
            self._uncommitted = []

    def lag_bytes(self) -> int:
        """Bytes in the files past the last line handed out (rotated ones included)."""
        return self.tailer.lag_bytes()

    def close(self) -> None:
        self.tailer.close()
