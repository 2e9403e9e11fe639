"""The store's schema, as numbered migrations applied in order, and which table each record
type goes to (:data:`ROUTES`).

Each table keeps the indexed columns detectors filter on and the event's full JSON body.
Primary keys are the natural identity of each record (file identity + byte offset for log
lines, target + time for scrapes, trace ids for spans), which makes every write idempotent:
ingesting the same bundle twice or replaying a log after a crash stores nothing twice.

A new record type is a migration that creates its table and a :class:`Route` in
:data:`ROUTES`; the store's writer knows no type by name.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from observability import events as ev
from observability.store.codec import encode, kind_of

__all__ = [
    "LOG_TYPES",
    "MIGRATIONS",
    "ROUTES",
    "SCHEMA_VERSION",
    "TABLES",
    "TIME_COLUMNS",
    "Route",
]

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema.
    """
    CREATE TABLE log_records (
        source TEXT NOT NULL, offset INTEGER NOT NULL, kind TEXT NOT NULL,
        at_ns INTEGER NOT NULL, request_id TEXT, model TEXT, body TEXT NOT NULL,
        PRIMARY KEY (source, offset, kind)
    ) WITHOUT ROWID;
    CREATE INDEX log_records_kind_at ON log_records (kind, at_ns);
    CREATE INDEX log_records_request ON log_records (request_id);
    CREATE INDEX log_records_at ON log_records (at_ns);

    CREATE TABLE metric_samples (
        target TEXT NOT NULL, at_ns INTEGER NOT NULL, name TEXT NOT NULL,
        labels TEXT NOT NULL, value REAL NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (target, at_ns, name, labels)
    ) WITHOUT ROWID;
    CREATE INDEX metric_samples_name_at ON metric_samples (name, at_ns);
    CREATE INDEX metric_samples_at ON metric_samples (at_ns);

    CREATE TABLE scrapes (
        target TEXT NOT NULL, at_ns INTEGER NOT NULL, up INTEGER NOT NULL,
        body TEXT NOT NULL, PRIMARY KEY (target, at_ns)
    ) WITHOUT ROWID;
    CREATE INDEX scrapes_at ON scrapes (at_ns);

    CREATE TABLE model_stats (
        model TEXT NOT NULL, version TEXT NOT NULL, at_ns INTEGER NOT NULL,
        body TEXT NOT NULL, PRIMARY KEY (model, version, at_ns)
    ) WITHOUT ROWID;
    CREATE INDEX model_stats_at ON model_stats (at_ns);

    CREATE TABLE trace_spans (
        source TEXT NOT NULL, trace_id INTEGER NOT NULL, parent_id INTEGER,
        model TEXT, request_id TEXT, start_ns INTEGER, end_ns INTEGER, body TEXT NOT NULL,
        PRIMARY KEY (source, trace_id)
    ) WITHOUT ROWID;
    CREATE INDEX trace_spans_request ON trace_spans (request_id);

    CREATE TABLE otlp_spans (
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT,
        name TEXT, service TEXT, start_ns INTEGER, end_ns INTEGER, status TEXT,
        body TEXT NOT NULL, PRIMARY KEY (trace_id, span_id)
    ) WITHOUT ROWID;
    CREATE INDEX otlp_spans_start ON otlp_spans (start_ns);
    """,
    # 2: findings, as the detectors last saw them (one row per finding key).
    """
    CREATE TABLE findings (
        key TEXT PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL,
        severity TEXT NOT NULL, first_seen_ns INTEGER NOT NULL, last_seen_ns INTEGER NOT NULL,
        active INTEGER NOT NULL, body TEXT NOT NULL
    );
    CREATE INDEX findings_seen ON findings (last_seen_ns);
    """,
    # 3: a trace span's identity includes its first timestamp. Triton numbers traces from 1
    # in every server run and writes trace.json.0 again after a restart, so (file, trace id)
    # alone made the spans of the second run duplicates of the first's, and they were lost.
    # 0 stands for a span without timestamps (a primary key column cannot be NULL here).
    """
    CREATE TABLE trace_spans_v3 (
        source TEXT NOT NULL, trace_id INTEGER NOT NULL, parent_id INTEGER,
        model TEXT, request_id TEXT, start_ns INTEGER NOT NULL, end_ns INTEGER,
        body TEXT NOT NULL,
        PRIMARY KEY (source, trace_id, start_ns)
    ) WITHOUT ROWID;
    INSERT INTO trace_spans_v3
        SELECT source, trace_id, parent_id, model, request_id, COALESCE(start_ns, 0), end_ns,
               body
        FROM trace_spans;
    DROP TABLE trace_spans;
    ALTER TABLE trace_spans_v3 RENAME TO trace_spans;
    CREATE INDEX trace_spans_request ON trace_spans (request_id);
    """,
    # 4: a sample's value may be NaN (Triton writes NaN for an empty summary). SQLite binds
    # NaN as NULL, which NOT NULL plus INSERT OR IGNORE turned into a silently dropped row;
    # the column is NULL for NaN now and the body keeps the value.
    """
    CREATE TABLE metric_samples_v4 (
        target TEXT NOT NULL, at_ns INTEGER NOT NULL, name TEXT NOT NULL,
        labels TEXT NOT NULL, value REAL, body TEXT NOT NULL,
        PRIMARY KEY (target, at_ns, name, labels)
    ) WITHOUT ROWID;
    INSERT INTO metric_samples_v4 SELECT * FROM metric_samples;
    DROP TABLE metric_samples;
    ALTER TABLE metric_samples_v4 RENAME TO metric_samples;
    CREATE INDEX metric_samples_name_at ON metric_samples (name, at_ns);
    CREATE INDEX metric_samples_at ON metric_samples (at_ns);
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class Route:
    """How records of one type become rows of one table."""

    table: str
    sql: str
    """``INSERT OR IGNORE`` of one row: a duplicate key is counted, never an error."""
    row: Callable[[Any, str], tuple[Any, ...]] | None = None
    """``row(event, source)`` → the one row of a record."""
    rows: Callable[[Any, str], list[tuple[Any, ...]]] | None = None
    """For a record that is many rows (a scrape's samples), instead of ``row``."""


def _labels_key(labels: ev.Labels) -> str:
    return json.dumps(sorted(labels), separators=(",", ":"))


def _log_row(e: Any, source: str) -> tuple[Any, ...]:
    header = getattr(e, "header", None)
    at_ns, offset = (header.at_ns, header.offset) if header is not None else (e.at_ns, e.offset)
    return (
        source, offset, kind_of(e), at_ns, getattr(e, "request_id", None),
        getattr(e, "model", None), encode(e),
    )  # fmt: skip


def _trace_row(e: ev.TraceSpan, source: str) -> tuple[Any, ...]:
    stamps = [ns for _, ns in e.timestamps]
    return (
        source or e.source, e.trace_id, e.parent_id, e.model, e.request_id,
        min(stamps, default=0), max(stamps, default=None), encode(e),
    )  # fmt: skip


def _otlp_row(e: ev.OtlpSpan, _source: str) -> tuple[Any, ...]:
    return (
        e.trace_id, e.span_id, e.parent_span_id, e.name, e.service, e.start_ns, e.end_ns,
        e.status, encode(e),
    )  # fmt: skip


_LOG = Route("log_records", "INSERT OR IGNORE INTO log_records VALUES (?,?,?,?,?,?,?)", _log_row)

LOG_TYPES: tuple[type, ...] = (
    *(
        t
        for name in ev.__all__
        if isinstance(t := getattr(ev, name), type)
        and dataclasses.is_dataclass(t)
        and any(f.name == "header" for f in dataclasses.fields(t))
    ),
    ev.StubOutput,
)
"""Every record of a log line: those with a ``LogRecord`` header, and a stub's bare text."""

ROUTES: dict[type, Route] = {
    **{t: _LOG for t in LOG_TYPES},
    ev.MetricsScrape: Route(
        "metric_samples",
        "INSERT OR IGNORE INTO metric_samples VALUES (?,?,?,?,?,?)",
        rows=lambda e, _source: [
            (e.target, e.at_ns, s.name, _labels_key(s.labels), s.value, encode(s))
            for s in e.samples
        ],
    ),
    ev.ScrapeStatus: Route(
        "scrapes",
        "INSERT OR IGNORE INTO scrapes VALUES (?,?,?,?)",
        lambda e, _source: (e.target, e.at_ns, int(e.up), encode(e)),
    ),
    ev.ModelStats: Route(
        "model_stats",
        "INSERT OR IGNORE INTO model_stats VALUES (?,?,?,?)",
        lambda e, _source: (e.model, e.version, e.at_ns, encode(e)),
    ),
    ev.TraceSpan: Route(
        "trace_spans", "INSERT OR IGNORE INTO trace_spans VALUES (?,?,?,?,?,?,?,?)", _trace_row
    ),
    ev.OtlpSpan: Route(
        "otlp_spans", "INSERT OR IGNORE INTO otlp_spans VALUES (?,?,?,?,?,?,?,?,?)", _otlp_row
    ),
}
"""Record type → its table. A type not here is not kept (``WriteResult.ignored``)."""

TIME_COLUMNS: dict[str, str] = {
    "log_records": "at_ns",
    "metric_samples": "at_ns",
    "scrapes": "at_ns",
    "model_stats": "at_ns",
    "otlp_spans": "start_ns",
}
"""Each table's wall-clock column, which retention deletes by. ``trace_spans`` has none:
Triton's trace timestamps are its monotonic clock."""

TABLES: frozenset[str] = frozenset({*(r.table for r in ROUTES.values()), "findings"})
