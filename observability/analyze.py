"""``triton-obs analyze``: a bundle in, findings out, offline.

The bundle is ingested into a store (a temporary one unless given), then every detector runs
over the bundle's own window, evaluated at its end: the same rules ``watch`` applies live.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from observability.bundle import open_bundle
from observability.bundle.ingest import ingest
from observability.detectors import Window, run_detectors
from observability.detectors.registry import default_detectors
from observability.findings import Finding, parse_iso
from observability.store import Store

__all__ = ["AnalysisResult", "analyze_bundle", "analyze_store"]


@dataclass
class AnalysisResult:
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)


def analyze_store(
    store: Store,
    since_ns: int,
    until_ns: int,
    clock_offset_ns: int | None = None,
    **settings: object,
) -> list[Finding]:
    window = Window(
        since_ns=since_ns, until_ns=until_ns, store=store, clock_offset_ns=clock_offset_ns
    )
    return run_detectors(default_detectors(**settings), window)


def analyze_bundle(
    root: Path | str, store_path: Path | None = None, **settings: object
) -> AnalysisResult:
    bundle = open_bundle(root)
    meta = bundle.meta
    with (
        tempfile.TemporaryDirectory(prefix="triton-obs-analyze-") as tmp,
        Store(store_path or Path(tmp) / "store.db") as store,
    ):
        report = ingest(root, store)
        span = store.time_range()
        try:
            since, until = parse_iso(meta.started_at), parse_iso(meta.ended_at)
        except ValueError:
            if span is None:
                return AnalysisResult([], [*report.notes, "the bundle holds no signals"])
            since, until = span
        if span is not None:
            since = min(since, span[0])
        findings = analyze_store(store, since, until, meta.epoch_minus_monotonic_ns, **settings)
    return AnalysisResult(findings, report.notes)
