"""``triton-obs ingest``: replay a bundle into a store, idempotently.

Timestamps come from the bundle (snapshot file names, log headers with the bundle's year and
zone), never from the wall clock at ingest. Every record's store key derives from the bundle
id and the record's position, so ingesting twice stores nothing twice. A broken part is
skipped with a note; the rest still goes in.

A bundle may come from anyone, so no part of it may stop the ingest or cost unbounded
memory: each file is read up to its limit, the log a bounded line at a time, a parser that
fails on a file costs only that file, and a batch the store refuses (a value out of its
range) is retried record by record, keeping what fits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

from collectors.logs.framing import Framing
from collectors.logs.hotpath import ColumnSink, line_viewer
from collectors.logs.parser import ParseStats, column_sink
from collectors.logs.reader import parse_log_runs
from collectors.metrics.parser import parse_metrics_lenient
from collectors.stats.parser import parse_model_stats_lenient
from collectors.tail.reader import whole_lines
from collectors.traces.parser import parse_trace_file_lenient
from observability import events as ev
from observability.bundle.layout import (
    SCRAPES,
    Bundle,
    PartError,
    open_bundle,
    open_part,
    read_part,
)
from observability.gcpause import gc_paused
from observability.store import Store
from observability.store.blocks import ColumnBlock
from observability.store.schema import LOG

__all__ = ["IngestReport", "bundle_events", "ingest", "ingest_bundle"]

_BATCH = LOG.block_records
"""A log's batch is one store block: written straight as a block, never staged."""
_T = TypeVar("_T")


@dataclass
class IngestReport:
    bundle_id: str
    inserted: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    notes: list[str] = field(default_factory=list)
    log_skipped: dict[str, int] = field(default_factory=dict)

    def add(self, part: str, inserted: int, duplicates: int) -> None:
        self.inserted[part] = self.inserted.get(part, 0) + inserted
        self.duplicates += duplicates


_CHUNK = 1 << 20
"""How much of the log one read takes: a read a line cost an ingest a tenth of its time."""


_VIEW = line_viewer() or whole_lines
"""A read's lines: the compiled view over the read where it was built (the scan reads them
where they lie), else a list of them."""


class _LogLines:
    """A log's lines, none longer than ``limit``: ``for line in file`` would hold a 1 GB line
    (a tensor dumped by a stub) whole. A longer line is skipped through its newline, never held
    beyond ``limit`` bytes, and ends the run, so the next run restarts the parser at the true
    byte offset of what follows. The lines and offsets are those of ``readline(limit)`` a line
    (tests/bundle/test_log_lines.py); the file is read ``chunk`` bytes at a time."""

    def __init__(self, fh: BinaryIO, offset: int, limit: int, chunk: int = _CHUNK) -> None:
        self._fh = fh
        self.offset = offset
        """Where the next line handed out starts."""
        self._limit = limit
        self._chunk = max(chunk, 1)
        self._buf = b""
        """Read and not handed out: whole lines, then at most ``limit`` bytes of one begun."""
        self.eof = False
        self.skipped: list[tuple[int, int]] = []
        """``(offset, length)`` of each over-long line."""

    def runs(self) -> Iterator[Sequence[bytes]]:
        """The lines up to the end or the next over-long line, a sequence per read (no
        generator step a line; no bytes object a line where the view was built)."""
        limit = self._limit
        while True:
            buf = self._buf
            end = buf.rfind(b"\n") + 1
            if end:
                lines = _VIEW(buf, end, limit)
                if lines is not None:
                    self._buf = buf[end:]
                    self.offset += end
                    yield lines
                    continue
                listed = whole_lines(buf, end, end) or []  # one is too long: which
                for n, line in enumerate(listed):
                    if len(line) > limit:
                        cut = sum(map(len, listed[:n]))
                        self._buf = buf[cut:]
                        self.offset += cut
                        if n:
                            yield listed[:n]
                        self._skip_line()
                        return
            if len(buf) >= limit:  # a line begun that no newline ends within the limit
                self._skip_line()
                return
            more = self._fh.read(self._chunk)
            if not more:
                if buf:
                    self._buf = b""
                    self.offset += len(buf)
                    yield [buf]
                self.eof = True
                return
            self._buf = buf + more

    def _skip_line(self) -> None:
        """Drop the over-long line ``_buf`` begins with, reading on to its newline (or the
        file's end) without holding it."""
        start, length, buf = self.offset, 0, self._buf
        while (end := buf.find(b"\n") + 1) == 0:
            length += len(buf)
            buf = self._fh.read(self._chunk)
            if not buf:
                break
        length += end
        self._buf = buf[end:]
        self.offset += length
        self.skipped.append((start, length))


def _rebatched(
    runs: Iterable[list[_T] | ColumnBlock], size: int = _BATCH
) -> Iterator[list[_T] | ColumnBlock]:
    """The items of ``runs`` (lists of any length) in lists of ``size``, the last shorter
    (a log's batch is one store block); a block in columns passes as it is."""
    held: list[_T] = []
    for run in runs:
        if isinstance(run, ColumnBlock):
            yield run
            continue
        held += run
        if len(held) >= size:
            cut = len(held) - len(held) % size
            for i in range(0, cut, size):
                yield held[i : i + size]
            held = held[cut:]
    if held:
        yield held


def _cut(
    runs: Iterable[list[Any]], sink: ColumnSink | None
) -> Iterator[list[object] | ColumnBlock]:
    """A framed log's runs as they come; a plain log's sink (what ``parse_runs`` yields when
    given one) cut into a block each time it holds a block's worth. The sink's last short
    block is the caller's to take, once the whole log is read."""
    for run in runs:
        if sink is None or run is not sink:
            yield cast(list[object], run)
            continue
        while len(sink) >= _BATCH:
            yield ColumnBlock.cut(sink, _BATCH)


def _problem(err: BaseException) -> str:
    text = str(err)
    text = text if len(text) <= 200 else text[:200] + "…"
    return f"{type(err).__name__}: {text}" if not isinstance(err, ValueError) else text


def _parsed(
    label: str, notes: list[str], parse: Callable[..., _T], *args: object, **kw: object
) -> _T | None:
    """``parse(*args, **kw)``, or None with a note. Any exception counts: a parser's bug on a
    hostile file must cost that file, not the ingest of the rest of the bundle."""
    try:
        return parse(*args, **kw)
    except RecursionError:
        notes.append(f"skipped {label}: nested too deeply")
    except Exception as err:  # the boundary for untrusted input: noted, never raised
        notes.append(f"skipped {label}: {_problem(err)}")
    return None


def _text(bundle: Bundle, label: str, path: Path, part: str, notes: list[str]) -> str | None:
    try:
        data = read_part(path, bundle.limits.part_bytes(part))
    except PartError as err:
        notes.append(f"skipped {label}: {err}")
        return None
    return data.decode("utf-8", errors="replace")


_SCRAPE_TARGETS = ("metrics", "stats")


def failed_scrapes(text: str) -> tuple[list[ev.ScrapeStatus], list[str]]:
    """``scrapes.jsonl`` -> a down ``ScrapeStatus`` per failed scrape, and what was skipped
    (pure). A bad line costs that line."""
    out: list[ev.ScrapeStatus] = []
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            at_ns = int(row["unix_ms"]) * 1_000_000
            target = row["target"]
            if target not in _SCRAPE_TARGETS or not 0 <= at_ns < 2**63:
                raise ValueError(f"target {target!r} at {row['unix_ms']!r}")
            out.append(ev.ScrapeStatus(at_ns, target, False, 0.0, str(row.get("error", ""))[:500]))
        except (ValueError, KeyError, TypeError) as err:
            problems.append(f"line {n} skipped: {err!r}"[:200])
    return out, problems


def _otlp_spans(text: str) -> list[object]:
    from collectors.otlp import spans_from_otlp_json

    return list(spans_from_otlp_json(json.loads(text)))


_Batch = list[object] | ColumnBlock


def bundle_events(
    bundle: Bundle, report: IngestReport, log_format: str | None = None
) -> Iterator[tuple[str, str, list[object]]]:
    """``(part, source, events)`` batches from every part of the bundle, in a fixed order.
    ``log_format`` overrides the log's frame (default: the bundle's, else ``auto``)."""
    return cast(Iterator[tuple[str, str, list[object]]], _parts(bundle, report, log_format))


def _parts(
    bundle: Bundle, report: IngestReport, log_format: str | None = None, columns: bool = False
) -> Iterator[tuple[str, str, _Batch]]:
    """:func:`bundle_events`; with ``columns``, a plain log's records come as blocks already
    in columns (:class:`ColumnBlock`), never made as records (what a store needs of them)."""
    meta, notes = bundle.meta, report.notes
    bid = meta.bundle_id
    for unix_ms, path in bundle.metrics:
        label = f"metrics/{path.name}"
        text = _text(bundle, label, path, "metrics", notes)
        page = None if text is None else _parsed(label, notes, parse_metrics_lenient, text)
        if page is None:
            continue
        for problem in page.problems[:5]:
            notes.append(f"{label}: skipped a line: {problem}")
        samples = tuple(s for fam in page.families for s in fam.samples)
        at_ns = unix_ms * 1_000_000
        yield (
            "metrics",
            "",
            [
                ev.MetricsScrape(at_ns, "metrics", samples),
                ev.ScrapeStatus(at_ns, "metrics", True, 0.0),
            ],
        )
    for unix_ms, path in bundle.stats:
        label = f"stats/{path.name}"
        text = _text(bundle, label, path, "stats", notes)
        at_ns = unix_ms * 1_000_000
        parsed = (
            None if text is None else _parsed(label, notes, parse_model_stats_lenient, text, at_ns)
        )
        if parsed is None:
            continue
        notes.extend(f"{label}: {p}" for p in parsed.problems[:5])
        # A bundle that records failed scrapes says when stats answered again too (older
        # bundles record no failure to end, and a replay of them stores nothing new).
        up = [ev.ScrapeStatus(at_ns, "stats", True, 0.0)] if bundle.scrapes is not None else []
        yield "stats", "", [*parsed.stats, *up]
    if bundle.scrapes is not None:
        text = _text(bundle, SCRAPES, bundle.scrapes, "scrapes", notes)
        failed = None if text is None else _parsed(SCRAPES, notes, failed_scrapes, text)
        if failed is not None:
            statuses, problems = failed
            notes.extend(f"{SCRAPES}: {p}" for p in problems[:5])
            yield "metrics", "", list(statuses)
    for path in bundle.traces:
        text = _text(bundle, path.name, path, "trace", notes)
        parsed_trace = (
            None
            if text is None
            else _parsed(path.name, notes, parse_trace_file_lenient, text, source=path.name)
        )
        if parsed_trace is None:
            continue
        if parsed_trace.truncated:
            notes.append(f"{path.name} is truncated: kept {len(parsed_trace.spans)} spans")
        yield "traces", f"{bid}/{path.name}", list(parsed_trace.spans)
    if bundle.otlp:
        for _unix_ms, path in bundle.otlp:
            label = f"otlp/{path.name}"
            text = _text(bundle, label, path, "otlp", notes)
            spans = None if text is None else _parsed(label, notes, _otlp_spans, text)
            if spans is not None:
                yield "otlp", "", spans
    if bundle.log is not None:
        yield from _log_events(bundle, report, log_format or meta.log_format, columns)


def _log_events(
    bundle: Bundle, report: IngestReport, log_format: str, columns: bool
) -> Iterator[tuple[str, str, _Batch]]:
    meta, notes = bundle.meta, report.notes
    try:
        fh = open_part(bundle.log) if bundle.log is not None else None
    except PartError as err:
        notes.append(f"skipped triton.log: {err}")
        return
    if fh is None:
        return
    stats = ParseStats()
    framing = Framing(log_format)
    source = f"{meta.bundle_id}/triton.log"
    sink = column_sink() if columns else None
    with fh:
        lines = _LogLines(fh, meta.log_start_offset, bundle.limits.log_line_bytes)
        try:
            while not lines.eof:
                runs = parse_log_runs(
                    lines.runs(),
                    framing=framing,
                    today=meta.date or date.today(),
                    year=meta.year,
                    utc_offset_s=meta.log_utc_offset_s,
                    offset=lines.offset,
                    stats=stats,
                    into=sink,
                )
                for batch in _rebatched(_cut(runs, sink)):
                    yield "log", source, batch
        except OSError as err:
            notes.append(f"triton.log: reading stopped at byte {lines.offset}: {err}")
        if sink is not None and len(sink):  # the last short block, or what a failed read left
            yield "log", source, ColumnBlock.cut(sink, len(sink))
    if lines.skipped:
        at = ", ".join(str(off) for off, _n in lines.skipped[:5])
        notes.append(
            f"triton.log: skipped {len(lines.skipped)} line(s) longer than "
            f"{bundle.limits.log_line_bytes:,} bytes (at byte {at})"
        )
    report.log_skipped = {k: v for k, v in stats.skipped.items() if k != "info"}
    if lines.skipped:
        report.log_skipped["too_long"] = len(lines.skipped)


def _write(store: Store, part: str, source: str, batch: _Batch, report: IngestReport) -> None:
    """Store one batch; records SQLite cannot hold (an integer past int64 from a forged
    file) are skipped by the store one by one, so the good records still go in and what
    was stored before is untouched: say how many."""
    if isinstance(batch, ColumnBlock):
        result = store.write_block(batch, source)
    else:
        result = store.write(batch, source=source)
    if result.rejected:
        report.notes.append(f"{part}: skipped {result.rejected} record(s) with values out of range")
    report.add(part, result.inserted, result.duplicates)


def ingest_bundle(
    bundle: Bundle,
    store: Store,
    on_batch: Callable[[str, int], None] | None = None,
    log_format: str | None = None,
) -> IngestReport:
    """Ingest an already opened bundle (see :func:`ingest`)."""
    report = IngestReport(bundle.meta.bundle_id, notes=list(bundle.notes))
    # A bundle is complete: its parts go straight into blocks, made in bulk (gcpause.py).
    with gc_paused(), store.bulk():
        for part, source, batch in _parts(bundle, report, log_format, columns=True):
            _write(store, part, source, batch, report)
            if on_batch is not None:
                on_batch(part, len(batch))
            del batch  # freed now, while the write has them in cache, not after the next batch
    store.compact()  # what an earlier writer staged for the same sources
    return report


def ingest(
    root: Path | str,
    store: Store,
    on_batch: Callable[[str, int], None] | None = None,
    log_format: str | None = None,
) -> IngestReport:
    """Ingest the bundle folder or archive ``root`` into ``store``."""
    with open_bundle(root) as bundle:
        return ingest_bundle(bundle, store, on_batch, log_format)
