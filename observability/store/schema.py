"""The store's schema, as numbered migrations applied in order, and the streams records go
to (:data:`ROUTES`: record type → :class:`Stream`).

Since schema 5 the records of a stream (log lines, metric scrapes, stats, Triton trace spans,
OTLP spans) live in compressed columnar blocks (:mod:`observability.store.blocks`), grouped by
source, with each block's time span indexed; small batches wait in ``staged`` (one JSON row per
record) until their source has a block's worth. Every record has a natural key (file identity
+ byte offset + kind for log lines, target + time for scrapes, trace ids for spans), which
makes every write idempotent: ingesting the same bundle twice or replaying a log after a crash
stores nothing twice.

A new record type is a :class:`Stream` in :data:`STREAMS` and its entry in :data:`ROUTES`; the
store's writer knows no type by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

from observability import events as ev

__all__ = [
    "LOG",
    "LOG_TYPES",
    "MIGRATIONS",
    "ROUTES",
    "SCHEMA_VERSION",
    "SETUP_KINDS",
    "STREAMS",
    "TABLES",
    "Stream",
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
    # 5: records kept as compressed columnar blocks (issue 13: a row and three indexes per
    # log line made the store twice its raw bundle and thirty times its gzip). What arrives in
    # small batches is staged as one JSON row per record (its key unique: idempotent writes,
    # kill -9 safe) until a stream's source has a block's worth, then compacted into
    # ``blocks``. The old tables' rows move to ``staged`` as they are (same keys, same JSON);
    # the store compacts them when it opens.
    """
    CREATE TABLE staged (
        seq INTEGER PRIMARY KEY, stream TEXT NOT NULL, source TEXT NOT NULL,
        origin TEXT NOT NULL, key TEXT NOT NULL, at_ns INTEGER, kind TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE UNIQUE INDEX staged_key ON staged (stream, key);
    CREATE INDEX staged_at ON staged (stream, at_ns);
    CREATE TABLE blocks (
        id INTEGER PRIMARY KEY, stream TEXT NOT NULL, source TEXT NOT NULL,
        min_at_ns INTEGER NOT NULL, max_at_ns INTEGER NOT NULL, written_ns INTEGER NOT NULL,
        records INTEGER NOT NULL, data BLOB NOT NULL
    );
    CREATE INDEX blocks_stream_at ON blocks (stream, max_at_ns);

    INSERT INTO staged (stream, source, origin, key, at_ns, kind, body)
        SELECT 'log', source, source, source || '|' || offset || '|' || kind, at_ns, kind, body
        FROM log_records ORDER BY source, offset;
    INSERT INTO staged (stream, source, origin, key, at_ns, kind, body)
        SELECT 'metrics', target, target, target || '|' || at_ns, at_ns, 'MetricsScrape',
               json_object('at_ns', at_ns, 'target', target,
                           'samples', json_group_array(json(body)))
        FROM metric_samples GROUP BY target, at_ns ORDER BY at_ns;
    INSERT INTO staged (stream, source, origin, key, at_ns, kind, body)
        SELECT 'scrapes', target, target, target || '|' || at_ns, at_ns, 'ScrapeStatus', body
        FROM scrapes ORDER BY at_ns;
    INSERT INTO staged (stream, source, origin, key, at_ns, kind, body)
        SELECT 'stats', '', '', model || '|' || version || '|' || at_ns, at_ns, 'ModelStats', body
        FROM model_stats ORDER BY at_ns;
    INSERT INTO staged (stream, source, origin, key, at_ns, kind, body)
        SELECT 'traces', '', source, source || '|' || trace_id || '|' || start_ns, start_ns,
               'TraceSpan', body
        FROM trace_spans ORDER BY source, trace_id;
    INSERT INTO staged (stream, source, origin, key, at_ns, kind, body)
        SELECT 'otlp', '', '', trace_id || '|' || span_id, start_ns, 'OtlpSpan', body
        FROM otlp_spans ORDER BY start_ns;
    DROP TABLE log_records;
    DROP TABLE metric_samples;
    DROP TABLE scrapes;
    DROP TABLE model_stats;
    DROP TABLE trace_spans;
    DROP TABLE otlp_spans;
    """,
    # 6: the setup lines in force, whatever their age: Triton logs a model's config and the
    # rate limiter's pool only at load, and a restarted ``watch`` needs them for as long as
    # the server runs (``detectors/live.py``), not only for loads within its lookback. One
    # row per log, kind and name (a model, or "" for the pool); the newest line wins. Kept
    # by retention: they are the server's state, not history.
    """
    CREATE TABLE setup (
        source TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
        at_ns INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (source, kind, name)
    ) WITHOUT ROWID;
    """,
    # 7: no table changes. A block's text columns may be stored as their distinct values and
    # an index a record (``blocks._pack``'s form 6), which code of schema 6 cannot read: the
    # version makes that code refuse the store, instead of failing on its newer blocks.
    "SELECT 1;",
    # 8: no table changes. New blocks are zstd, which code of schema 7 cannot read; the
    # blocks written before stay xz (or zlib) and are read as they are.
    "SELECT 1;",
)

SCHEMA_VERSION = len(MIGRATIONS)

SETUP_KINDS: tuple[type[ev.ModelConfig], type[ev.RateLimiterPool]] = (
    ev.ModelConfig,
    ev.RateLimiterPool,
)
"""The setup lines: written once at load, true until the next (migration 6's ``setup``,
and what ``watch``'s live window keeps whatever their age)."""


@dataclass(frozen=True)
class Stream:
    """One kind of signal as the store keeps it: which records, their identity, their time."""

    name: str
    key: Callable[[Any, str], str]
    """``key(event, source)``: the record's natural identity, unique in its stream (a log
    line's file and byte offset, a scrape's target and time, a span's ids). A record whose key
    is stored already is a duplicate: a replayed bundle or a restarted collector."""
    at_ns: Callable[[Any], int]
    """The time readers select by (wall clock, except Triton trace files' monotonic clock)."""
    source: Callable[[Any, str], str]
    """What a block groups by: a log file, a scrape target; one block never mixes two."""
    wall_clock: bool = True
    """``False``: ``at_ns`` is not wall-clock time, and retention by age goes by when the
    record was stored instead."""
    block_records: int = 8192
    """A source's staged records are compacted into a block once there are this many."""
    per_record_source: bool = False
    """Whether ``source`` depends on the record (a scrape's target), not only on the batch's
    source: a batch of one stream whose source does not is keyed without a lookup a record."""
    keyed: Callable[[list[Any], str], tuple[list[str], list[int]]] | None = None
    """``keyed(events, source)``: every record's ``key`` and ``at_ns`` at once, the same as
    one call of each a record; for the stream written a million records at a time (the log),
    and one whose key holds its time (a trace span's start)."""


def _log_offset(e: Any) -> int:
    header = getattr(e, "header", None)
    return int(header.offset if header is not None else e.offset)


def _log_at(e: Any) -> int:
    header = getattr(e, "header", None)
    return int(header.at_ns if header is not None else e.at_ns)


def _log_key(e: Any, source: str) -> str:
    header = getattr(e, "header", None)
    offset = header.offset if header is not None else e.offset
    return f"{source}|{offset}|{type(e).__name__}"  # type name: codec.kind_of


def _log_keyed(events: list[Any], source: str) -> tuple[list[str], list[int]]:
    """:func:`_log_key` and :func:`_log_at` of a batch, in list passes (a function call a
    record each was a fifth of an ingest outside the parser)."""
    headers = list(map(getattr, events, repeat("header"), repeat(None)))
    offsets = [e.offset if h is None else h.offset for h, e in zip(headers, events, strict=True)]
    times = [e.at_ns if h is None else h.at_ns for h, e in zip(headers, events, strict=True)]
    keys = [f"{source}|{o}|{t.__name__}" for o, t in zip(offsets, map(type, events), strict=True)]
    return keys, list(map(int, times))


_SECOND = itemgetter(1)


def _trace_start(e: ev.TraceSpan) -> int:
    return min(map(_SECOND, e.timestamps), default=0)


def _trace_key(e: ev.TraceSpan, source: str, start: int) -> str:
    return f"{source or e.source}|{e.trace_id}|{start}"


def _traces_keyed(events: list[Any], source: str) -> tuple[list[str], list[int]]:
    """Each span's start found once for its key and its time (twice was a fortieth of a
    trace file's ingest)."""
    starts = list(map(_trace_start, events))
    return list(map(_trace_key, events, repeat(source), starts)), starts


def _per_target(name: str, block_records: int) -> Stream:
    """A stream of what one scrape target answered, one record per scrape."""
    return Stream(
        name,
        key=lambda e, _s: f"{e.target}|{e.at_ns}",
        at_ns=lambda e: e.at_ns,
        source=lambda e, _s: e.target,
        block_records=block_records,
        per_record_source=True,
    )


LOG = Stream(
    "log",
    key=_log_key,
    at_ns=_log_at,
    source=lambda _e, source: source,
    keyed=_log_keyed,
)
STREAMS: dict[str, Stream] = {
    s.name: s
    for s in (
        LOG,
        _per_target("metrics", block_records=120),
        _per_target("scrapes", block_records=2048),
        Stream(
            "stats",
            key=lambda e, _s: f"{e.model}|{e.version}|{e.at_ns}",
            at_ns=lambda e: e.at_ns,
            source=lambda _e, _s: "",
            block_records=512,
        ),
        Stream(
            "traces",
            key=lambda e, source: _trace_key(e, source, _trace_start(e)),
            at_ns=_trace_start,
            source=lambda _e, _s: "",  # Triton writes a few spans per file: one block for all
            wall_clock=False,
            keyed=_traces_keyed,
        ),
        Stream(
            "otlp",
            key=lambda e, _s: f"{e.trace_id}|{e.span_id}",
            at_ns=lambda e: e.start_ns,
            source=lambda _e, _s: "",
        ),
    )
}
"""Every stream the store keeps, by name."""

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

ROUTES: dict[type, Stream] = {
    **{t: LOG for t in LOG_TYPES},
    ev.MetricsScrape: STREAMS["metrics"],
    ev.ScrapeStatus: STREAMS["scrapes"],
    ev.ModelStats: STREAMS["stats"],
    ev.TraceSpan: STREAMS["traces"],
    ev.OtlpSpan: STREAMS["otlp"],
}
"""Record type → its stream. A type not here is not kept (``WriteResult.ignored``)."""

TABLES: dict[str, str] = {
    "log_records": "log",
    "metric_samples": "metrics",
    "scrapes": "scrapes",
    "model_stats": "stats",
    "trace_spans": "traces",
    "otlp_spans": "otlp",
}
"""The names :meth:`Store.count` answers to (the tables of schema 4) → their stream."""
