"""``triton-obs analyze``: a bundle in, findings out, offline.

The bundle (a folder or a ``.tar.gz`` of one) is ingested into a store (a temporary one
unless given), then every detector runs over the bundle's own window, evaluated at its end:
the same rules ``watch`` applies live.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from observability import events as ev
from observability.bundle import Bundle, BundleError, BundleMeta, open_bundle
from observability.bundle.ingest import IngestReport, bundle_events, ingest_bundle
from observability.bundle.layout import NoMetaError
from observability.bundle.loose import is_tar, open_loose, open_loose_archive
from observability.detectors import DetectorFailure, Window, run_detectors
from observability.detectors.registry import default_detectors
from observability.detectors.signals import Coverage, coverage
from observability.detectors.work import ModelWork, in_flight
from observability.findings import Finding, parse_iso
from observability.gcpause import gc_paused
from observability.store import Store

__all__ = [
    "AnalysisResult",
    "ParsedBundle",
    "analyze_bundle",
    "analyze_events",
    "analyze_store",
    "parse_bundle",
]


@dataclass
class AnalysisResult:
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)
    coverage: Coverage | None = None
    """The signals the bundle held and the kinds it could not show (``None``: no signals)."""
    work: list[ModelWork] = field(default_factory=list)
    """Work in flight per model and instance at the bundle's end."""
    failed: list[str] = field(default_factory=list)
    """A line for each detector that raised on this input (``run_detectors``): it reported
    nothing. Named first in ``notes`` too."""


def _result(window: Window, notes: list[str], **settings: object) -> AnalysisResult:
    # ``**settings`` could fill ``kinds``: until default_detectors makes it positional-only.
    detectors = default_detectors(**settings)  # type: ignore[arg-type]
    raised: list[DetectorFailure] = []
    findings = run_detectors(detectors, window, raised)
    failed = [str(f) for f in raised]
    notes = [  # first: the CLI shows twenty notes, and a bundle may bring more
        f"detector {line} — it reported nothing on this input (a bug: please report it)"
        for line in failed
    ] + notes
    return AnalysisResult(findings, notes, coverage(window), in_flight(window), failed)


def analyze_store(
    store: Store,
    since_ns: int,
    until_ns: int,
    clock_offset_ns: int | None = None,
    log_read: bool = False,
    **settings: object,
) -> AnalysisResult:
    """``log_read``: the store's log records are all a log said (an ingested bundle's log,
    even an empty one), not a sign that no log was read (see ``Window.log_read``)."""
    window = Window(since_ns, until_ns, store, clock_offset_ns=clock_offset_ns, log_read=log_read)
    return _result(window, [], **settings)


def analyze_bundle(
    root: Path | str,
    store_path: Path | None = None,
    log_format: str | None = None,
    **settings: object,
) -> AnalysisResult:
    """Findings of a bundle folder or archive. Without ``store_path`` the events stay in
    memory (no store to write: several times faster on a large log); with it they are
    ingested and kept. An archive's temporary folder is gone when this returns.
    ``log_format`` forces the log's frame (``collectors/logs/framing.py``).

    ``root`` may also be what users have instead of a bundle: a log, a /metrics page, a
    stats or trace file, or a folder of them (``bundle/loose.py``)."""
    with _open(Path(root)) as bundle:
        return _analyze(bundle, store_path, log_format, **settings)


def _open(root: Path) -> Bundle:
    """A bundle; else what users have instead: files, a folder or an archive of them."""
    try:
        return open_bundle(root)
    except NoMetaError:
        if root.is_file():
            return open_loose_archive(root)
        return open_loose(root)
    except BundleError:
        if root.is_file() and not is_tar(root):
            return open_loose(root)
        raise


def _analyze(
    bundle: Bundle, store_path: Path | None, log_format: str | None, **settings: object
) -> AnalysisResult:
    meta = bundle.meta
    if store_path is not None:
        with Store(store_path) as store:
            report = ingest_bundle(bundle, store, log_format=log_format)
            span = store.time_range()
            if _untimed_loose(bundle) and span is not None:
                logged = store.latest_log_ns()  # the same rule as in memory, below
                span = (span[0], logged) if logged is not None else span
            since, until = _bounds(meta.started_at, meta.ended_at, span)
            if since is None or until is None:
                return AnalysisResult([], [*report.notes, "the bundle holds no signals"])
            offset, read = meta.epoch_minus_monotonic_ns, bundle.log is not None
            result = analyze_store(store, since, until, offset, read, **settings)
        result.notes = report.notes
        return result
    parsed = parse_bundle(bundle, log_format)
    return analyze_events(parsed, **settings)


@dataclass
class ParsedBundle:
    """A bundle's signals parsed into events: what the in-memory analysis reads."""

    meta: BundleMeta
    events: list[object]
    notes: list[str]
    untimed: bool
    """Gathered files whose snapshots say nothing of when the capture ended."""
    log_read: bool = False
    """The bundle had a log, perhaps an empty one (``Window.log_read``)."""


def parse_bundle(bundle: Bundle, log_format: str | None = None) -> ParsedBundle:
    report = IngestReport(bundle.meta.bundle_id, notes=list(bundle.notes))
    with gc_paused():  # records made in bulk (gcpause.py)
        events = [
            e for _part, _source, batch in bundle_events(bundle, report, log_format) for e in batch
        ]
    untimed, read = _untimed_loose(bundle), bundle.log is not None
    return ParsedBundle(bundle.meta, events, report.notes, untimed, read)


def analyze_events(parsed: ParsedBundle, **settings: object) -> AnalysisResult:
    """Findings of a parsed bundle, in memory (``analyze_bundle`` without ``store_path``).
    Apart from parsing so that a caller holding the events (a test corpus read many times)
    runs exactly the analysis ``analyze`` runs."""
    meta, events = parsed.meta, parsed.events
    span = _event_range(events, meta.epoch_minus_monotonic_ns)
    if parsed.untimed and span is not None:
        # No capture end: judge at the log's last line, not at a snapshot's file time.
        lines = [_time_of(e) for e in events if getattr(e, "header", None) is not None]
        span = (span[0], max(lines)) if lines else span
    since, until = _bounds(meta.started_at, meta.ended_at, span)
    if since is None or until is None:
        return AnalysisResult([], [*parsed.notes, "the bundle holds no signals"])
    offset, read = meta.epoch_minus_monotonic_ns, parsed.log_read
    window = Window(since, until, events=events, clock_offset_ns=offset, log_read=read)
    with gc_paused():  # the detectors' indexes of the window: made in bulk too (gcpause.py)
        return _result(window, list(parsed.notes), **settings)


def _untimed_loose(bundle: Bundle) -> bool:
    """Files gathered by hand whose snapshots say nothing of when the capture ended."""
    sources = bundle.meta.sources
    return bool(sources.get("loose")) and not sources.get("snapshots_timed")


def _event_range(events: list[object], clock_offset_ns: int | None) -> tuple[int, int] | None:
    """The events' span. Trace-file spans count on the monotonic clock plus the host's
    offset, or on their own when nothing else has a time (a bundle of trace files only)."""
    stamps = [t for e in events if (t := _time_of(e))]
    traced = [
        ns + (clock_offset_ns or 0)
        for e in events
        if isinstance(e, ev.TraceSpan) and (clock_offset_ns is not None or not stamps)
        for _, ns in e.timestamps
    ]
    stamps += traced
    return (min(stamps), max(stamps)) if stamps else None


def _time_of(event: object) -> int:
    header = getattr(event, "header", None)
    if header is not None:
        return int(header.at_ns)
    return int(getattr(event, "at_ns", 0) or getattr(event, "start_ns", 0) or 0)


def _bounds(
    started_at: str, ended_at: str, span: tuple[int, int] | None
) -> tuple[int | None, int | None]:
    """The window: the capture's own start and end, widened to the first event seen (a log
    copied from its start holds requests older than the capture)."""
    try:
        since, until = parse_iso(started_at), parse_iso(ended_at)
    except ValueError:
        if span is None:
            return None, None
        since, until = span
    if span is not None:
        since = min(since, span[0])
    return since, until
