"""``triton-obs ingest``: replay a bundle into a store, idempotently.

Timestamps come from the bundle (snapshot file names, log headers with the bundle's year and
zone), never from the wall clock at ingest. Every record's store key derives from the bundle
id and the record's position, so ingesting twice stores nothing twice. A broken part is
skipped with a note; the rest still goes in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from collectors.logs.parser import ParseStats, parse_lines
from collectors.metrics.parser import parse_metrics_lenient
from collectors.stats.parser import parse_model_stats_lenient
from collectors.traces.parser import parse_trace_file_lenient
from observability import events as ev
from observability.bundle.layout import Bundle, open_bundle
from observability.store import Store

__all__ = ["IngestReport", "bundle_events", "ingest"]

_BATCH = 5000


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


def _log_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        yield from fh


def _batches(items: Iterable[object], size: int = _BATCH) -> Iterator[list[object]]:
    batch: list[object] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _read_text(path: Path, notes: list[str]) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        notes.append(f"skipped {path.name}: {err}")
        return None


def bundle_events(bundle: Bundle, report: IngestReport) -> Iterator[tuple[str, str, list[object]]]:
    """``(part, source, events)`` batches from every part of the bundle, in a fixed order."""
    meta, notes = bundle.meta, report.notes
    bid = meta.bundle_id
    for unix_ms, path in bundle.metrics:
        text = _read_text(path, notes)
        if text is None:
            continue
        page = parse_metrics_lenient(text)
        for problem in page.problems[:5]:
            notes.append(f"metrics/{path.name}: skipped a line: {problem}")
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
        text = _read_text(path, notes)
        if text is None:
            continue
        try:
            parsed = parse_model_stats_lenient(text, unix_ms * 1_000_000)
        except ValueError as err:
            notes.append(f"skipped stats/{path.name}: {err}")
            continue
        notes.extend(f"stats/{path.name}: {p}" for p in parsed.problems[:5])
        yield "stats", "", list(parsed.stats)
    for path in bundle.traces:
        text = _read_text(path, notes)
        if text is None:
            continue
        try:
            parsed_trace = parse_trace_file_lenient(text, source=path.name)
        except ValueError as err:
            notes.append(f"skipped {path.name}: {err}")
            continue
        if parsed_trace.truncated:
            notes.append(f"{path.name} is truncated: kept {len(parsed_trace.spans)} spans")
        yield "traces", f"{bid}/{path.name}", list(parsed_trace.spans)
    if bundle.otlp:
        from collectors.otlp import spans_from_otlp_json

        for _unix_ms, path in bundle.otlp:
            text = _read_text(path, notes)
            if text is None:
                continue
            try:
                spans = spans_from_otlp_json(json.loads(text))
            except ValueError as err:
                notes.append(f"skipped otlp/{path.name}: {err}")
                continue
            yield "otlp", "", list(spans)
    if bundle.log is not None:
        stats = ParseStats()
        start = int(meta.sources.get("log_start_offset") or 0)
        records = parse_lines(
            _log_lines(bundle.log),
            year=meta.year,
            utc_offset_s=meta.log_utc_offset_s,
            offset=start,
            stats=stats,
        )
        for batch in _batches(records):
            yield "log", f"{bid}/triton.log", batch
        report.log_skipped = {k: v for k, v in stats.skipped.items() if k != "info"}


def ingest(
    root: Path | str,
    store: Store,
    on_batch: Callable[[str, int], None] | None = None,
) -> IngestReport:
    bundle = open_bundle(root)
    report = IngestReport(bundle.meta.bundle_id, notes=list(bundle.notes))
    for part, source, batch in bundle_events(bundle, report):
        result = store.write(batch, source=source)
        report.add(part, result.inserted, result.duplicates)
        if on_batch is not None:
            on_batch(part, len(batch))
    return report
