"""The store's schema, as numbered migrations applied in order.

Each table keeps the indexed columns detectors filter on and the event's full JSON body.
Primary keys are the natural identity of each record (file identity + byte offset for log
lines, target + time for scrapes, trace ids for spans), which makes every write idempotent:
ingesting the same bundle twice or replaying a log after a crash stores nothing twice.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

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
