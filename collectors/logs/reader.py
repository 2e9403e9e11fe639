"""A Triton log in whatever frame it arrives in, to typed events: ``framing`` then the parser.

Why a separate step: ``parse_lines`` is the hot path and reads plain glog lines; a frame
(docker, compose, CRI, json-file, a log UI) is decided once per file and, for a plain file,
costs nothing more than peeking at its first line. A framed file is unwrapped in chunks and
the records' offsets are moved back to the physical lines (``framing.remap``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import date
from itertools import chain, islice
from typing import TYPE_CHECKING

from collectors.logs.framing import DECIDE_LINES, Framing, decide, remap, unframe
from collectors.logs.hotpath import ColumnSink
from collectors.logs.parser import (
    Event,
    ParseOptions,
    ParseStats,
    parse_lines,
    parse_runs,
    runs_of,
)

if TYPE_CHECKING:  # typing.Unpack for **kwargs is Python 3.11+ (the package supports 3.10)
    from typing_extensions import Unpack

__all__ = ["parse_log", "parse_log_runs"]

_CHUNK = 20_000
"""Physical lines unwrapped at a time: a whole file is never held in memory."""


class LogOptions(ParseOptions, total=False):
    """:func:`parse_log_runs`'s keywords beside ``framing`` and ``year``."""

    today: date | None


def parse_log(
    lines: Iterable[bytes], *, framing: Framing, year: int, **options: Unpack[LogOptions]
) -> list[Event]:
    """``parse_lines`` for a log in any frame, all at once (the collector's poll); the
    keywords are :func:`parse_log_runs`'s. A list, not a generator: a step a record was a
    tenth of a busy log's collection."""
    runs = parse_log_runs(runs_of(lines), framing=framing, year=year, **options)
    return list(chain.from_iterable(runs))


def parse_log_runs(
    runs: Iterable[Sequence[bytes]],
    *,
    framing: Framing,
    year: int,
    utc_offset_s: int = 0,
    offset: int = 0,
    final: bool = True,
    stats: ParseStats | None = None,
    start_ns: int = 0,
    today: date | None = None,
    into: ColumnSink | None = None,
) -> Iterator[list[Event]]:
    """``parse_runs`` for a log in any frame, its records a list per run of lines;
    ``framing`` is the file's, kept by the caller across calls like ``stats``. ``today``
    dates headers that carry no date when no prefix does (the capture's start, or the wall
    clock for a live file). ``into`` is ``parse_runs``' for a plain log; a framed one's
    records still come as lists (the caller takes either)."""
    stats = stats if stats is not None else ParseStats()
    runs_it = iter(runs)
    head: list[Sequence[bytes]] = []
    if not framing.detected:
        seen = 0
        for run in runs_it:
            head.append(run)
            for line in run[: DECIDE_LINES - seen]:
                decide(line, framing)
                if framing.detected:
                    break
            seen += len(run)
            if framing.detected or seen >= DECIDE_LINES:
                break
    if framing.date is None and today is not None:
        framing.date = (today.year, today.month, today.day)
    if not framing.detected or framing.plain:
        yield from parse_runs(
            chain(head, runs_it),
            year=year,
            utc_offset_s=utc_offset_s,
            offset=offset,
            final=final,
            stats=stats,
            start_ns=start_ns,
            into=into,
        )
        return
    body = chain.from_iterable(chain(head, runs_it))
    off = offset
    while True:
        chunk = list(islice(body, _CHUNK))
        last = len(chunk) < _CHUNK
        if not chunk and not (last and final and framing.partial):
            return
        unframed = unframe(chunk, off, framing, final=final and last)
        records = parse_lines(
            unframed.lines,
            year=framing.year or year,
            utc_offset_s=utc_offset_s,
            offset=0,
            final=True,
            stats=stats,
            start_ns=stats.last_at_ns or start_ns,
        )
        yield list(remap(records, unframed))  # type: ignore[arg-type]
        off += sum(len(line) for line in chunk)
        stats.resume_offset = off
        if last:
            return
