"""Every source of signals, once: how ``collect`` builds it and where a bundle keeps it.

The collect runner iterates :data:`SOURCES` (a cycle reads them in this order), the bundle
layout and ingest enumerate the same list, and the store routes what they produce by record
type (``observability/store/schema.py``). A new source is its collector (a
:class:`collectors.base.Collector`), its parser, its table in the schema, and one entry here.

Collectors are imported when built, so listing the sources costs no import of the OTLP or
HTTP machinery.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from collectors.base import Collector
from observability import events as ev
from observability.collect.config import CollectConfig

__all__ = ["SOURCES", "BundlePart", "Source", "source"]

Reader = Callable[[str, str, int], tuple[list[object], list[str]]]
"""``read(text, label, at_ns)`` → the records of one bundle file and notes on what it
skipped (each naming ``label``); may raise: ingest notes the file as skipped."""


@dataclass(frozen=True)
class BundlePart:
    """Where a bundle keeps a signal: snapshots in a folder, or files at its top."""

    folder: str = ""
    """Snapshots: ``<folder>/<unix_ms>.<suffix>``, one per scrape or request."""
    suffix: str = ""
    files: re.Pattern[str] | None = None
    """Files at the bundle's top whose names match; group 1, when present, orders them
    (a rollover number; the file without one comes first)."""
    limit: str = "snapshot_bytes"
    """The :class:`~observability.bundle.layout.Limits` field bounding one file."""
    read: Reader | None = None
    """How ingest turns one file into records; ``None``: the part is streamed (the log)."""


@dataclass(frozen=True)
class Source:
    signal: str
    """Names the signal everywhere: the runner's store part, the self-metrics label, the
    bundle part (``Collector.signal`` of what ``build`` returns)."""
    build: Callable[[CollectConfig], Collector | None]
    """The collector the configuration asks for, or ``None`` when it asks for none."""
    scraped: bool
    """Asked every ``interval_s`` whatever the store's state (an answer not asked for is
    lost); otherwise read every ``log_interval_s`` and left waiting while the store lags
    (files and the receiver's queue hold what is not read yet)."""
    bundle: BundlePart


# -- how each is built ------------------------------------------------------------------


def _metrics(cfg: CollectConfig) -> Collector | None:
    from collectors.metrics.collector import MetricsCollector

    return MetricsCollector(cfg.metrics_url) if cfg.metrics_url else None


def _stats(cfg: CollectConfig) -> Collector | None:
    from collectors.stats.collector import StatsCollector

    return StatsCollector(cfg.url) if cfg.url else None


def _log(cfg: CollectConfig) -> Collector | None:
    from collectors.logs.collector import LogCollector
    from observability.collect.logglob import GlobLogCollector, is_glob

    if not cfg.log:
        return None
    checkpoint = cfg.checkpoint or cfg.store.with_name(cfg.store.name + ".tail.json")
    if is_glob(cfg.log):  # every file it matches, as they come and go (pod logs)
        prefix = cfg.checkpoint or cfg.store.with_name(cfg.store.name + ".tail")
        return GlobLogCollector(str(cfg.log), prefix, cfg.log_utc_offset_s, cfg.log_format)
    return LogCollector(cfg.log, checkpoint, cfg.log_utc_offset_s, cfg.log_format)


def _traces(cfg: CollectConfig) -> Collector | None:
    from collectors.traces.collector import TraceFileCollector

    return TraceFileCollector(cfg.trace) if cfg.trace else None


def _otlp(cfg: CollectConfig) -> Collector | None:
    from collectors.otlp.receiver import OtlpReceiver

    return None if cfg.otlp_port is None else OtlpReceiver(cfg.host, cfg.otlp_port)


# -- how ingest reads each from a bundle ----------------------------------------------------


def _read_metrics(text: str, label: str, at_ns: int) -> tuple[list[object], list[str]]:
    from collectors.metrics.parser import parse_metrics_lenient

    page = parse_metrics_lenient(text)
    notes = [f"{label}: skipped a line: {problem}" for problem in page.problems[:5]]
    samples = tuple(s for fam in page.families for s in fam.samples)
    scrape = ev.MetricsScrape(at_ns, "metrics", samples)
    return [scrape, ev.ScrapeStatus(at_ns, "metrics", True, 0.0)], notes


def _read_stats(text: str, label: str, at_ns: int) -> tuple[list[object], list[str]]:
    from collectors.stats.parser import parse_model_stats_lenient

    parsed = parse_model_stats_lenient(text, at_ns)
    return list(parsed.stats), [f"{label}: {p}" for p in parsed.problems[:5]]


def _read_traces(text: str, label: str, at_ns: int) -> tuple[list[object], list[str]]:
    from collectors.traces.parser import parse_trace_file_lenient

    parsed = parse_trace_file_lenient(text, source=label)
    notes = [f"{label} is truncated: kept {len(parsed.spans)} spans"] if parsed.truncated else []
    return list(parsed.spans), notes


def _read_otlp(text: str, label: str, at_ns: int) -> tuple[list[object], list[str]]:
    from collectors.otlp.decode import spans_from_otlp_json

    return list(spans_from_otlp_json(json.loads(text))), []


SOURCES: tuple[Source, ...] = (
    Source("metrics", _metrics, True, BundlePart("metrics", "prom", read=_read_metrics)),
    Source("stats", _stats, True, BundlePart("stats", "json", read=_read_stats)),
    Source("log", _log, False, BundlePart(files=re.compile(r"^triton\.log$"), limit="log_bytes")),
    Source(
        "traces",
        _traces,
        False,
        BundlePart(
            files=re.compile(r"^trace\.json(?:\.(\d{1,9}))?$"),
            limit="trace_bytes",
            read=_read_traces,
        ),
    ),
    Source("otlp", _otlp, False, BundlePart("otlp", "json", read=_read_otlp)),
)


def source(signal: str) -> Source:
    """The entry of one signal; ``KeyError`` for a name that is none."""
    for entry in SOURCES:
        if entry.signal == signal:
            return entry
    raise KeyError(signal)
