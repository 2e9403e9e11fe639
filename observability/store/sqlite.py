"""The embedded store: SQLite in WAL mode, one writer, readers that never block it.

Everything outside this module talks to :class:`Store` through typed events, so a later
backend (Prometheus plus a trace backend beyond one machine) can replace it behind the same
methods. Writes are batched in one transaction and idempotent by each record's natural key.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from observability import events as ev
from observability.findings import Finding
from observability.store.codec import decode
from observability.store.schema import MIGRATIONS, ROUTES, SCHEMA_VERSION, TABLES, TIME_COLUMNS

__all__ = ["Store", "StoreError", "StoreFullError", "WriteResult"]

_UNBINDABLE = (
    OverflowError,
    UnicodeEncodeError,
    TypeError,
    sqlite3.InterfaceError,
    sqlite3.DataError,
    sqlite3.IntegrityError,
)
"""What one record SQLite cannot hold raises (an integer past int64, a lone surrogate)."""

_FULL_BELOW_BYTES = 1 << 20
"""Less free space than this under the store makes a failed write a full disk."""


class StoreError(RuntimeError):
    """The store cannot be opened or written; the message says why."""


class StoreFullError(StoreError):
    """The disk (or the file's size cap) is full: nothing of the batch was written."""


@dataclass(frozen=True)
class WriteResult:
    inserted: int
    duplicates: int
    ignored: int
    """Events of a kind the store does not keep."""
    rejected: int = 0
    """Events SQLite cannot hold (a time past 2262, text that is not UTF-8): skipped one by
    one so that one poisoned record never blocks the batch it came in."""


class Store:
    """One SQLite file. Open read-write once per process (the collector), read-only elsewhere."""

    def __init__(self, path: Path | str, *, readonly: bool = False, timeout_s: float = 5.0):
        self.path = Path(path)
        self.readonly = readonly
        try:
            if readonly:
                if not self.path.exists():
                    raise StoreError(f"no store at {self.path}")
                self._db = sqlite3.connect(
                    f"file:{self.path}?mode=ro", uri=True, timeout=timeout_s,
                    check_same_thread=False,
                )  # fmt: skip
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, timeout=timeout_s, check_same_thread=False)
                self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
            version = self.schema_version()
        except sqlite3.DatabaseError as err:
            raise StoreError(f"cannot open store {self.path}: {err}") from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema {version}, newer than this program's "
                f"{SCHEMA_VERSION}: upgrade triton-observability"
            )

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        current = self.schema_version()
        for number, script in enumerate(MIGRATIONS, start=1):
            if number <= current:
                continue
            with self._db:
                self._db.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={number};\nCOMMIT;")

    # -- writing -----------------------------------------------------------------------
    def write(self, events: Iterable[object], source: str = "") -> WriteResult:
        """Store a batch in one transaction. ``source`` names the stream log lines and trace
        spans came from (a log file's identity, a trace file family of one server run)."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        batch = list(events)
        try:
            return self._write(batch, source, per_event=False)
        except _UNBINDABLE:
            return self._write(batch, source, per_event=True)

    def _write(self, batch: list[object], source: str, per_event: bool) -> WriteResult:
        inserted = duplicates = ignored = rejected = 0
        try:
            for chunk in ([e] for e in batch) if per_event else (batch,):
                try:
                    with self._db:
                        cur = self._db.cursor()
                        for event in chunk:
                            rows = self._insert(cur, event, source)
                            if rows is None:
                                ignored += 1
                            else:
                                inserted += rows[0]
                                duplicates += rows[1]
                except _UNBINDABLE:
                    if not per_event:
                        raise
                    rejected += 1
        except sqlite3.OperationalError as err:
            if self._full(err):
                raise StoreFullError(f"store {self.path} is full: {err}") from None
            raise StoreError(f"writing to {self.path} failed: {err}") from None
        return WriteResult(inserted, duplicates, ignored, rejected)

    def _full(self, err: sqlite3.Error) -> bool:
        """SQLite says "database or disk is full", but a write into the WAL that meets
        ENOSPC comes back as "disk I/O error": the free space tells them apart."""
        if "full" in str(err).lower():
            return True
        try:
            st = os.statvfs(Path(self.path).parent)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < _FULL_BELOW_BYTES

    def _insert(self, cur: sqlite3.Cursor, event: object, source: str) -> tuple[int, int] | None:
        """``(inserted, duplicates)`` of one record, routed by its type (``schema.ROUTES``);
        ``None`` for a type the store does not keep."""
        route = ROUTES.get(type(event))
        if route is None:
            return None
        if route.rows is not None:
            rows = route.rows(event, source)
            before = self._db.total_changes
            cur.executemany(route.sql, rows)
            added = self._db.total_changes - before
            return added, len(rows) - added
        assert route.row is not None
        cur.execute(route.sql, route.row(event, source))
        return (1, 0) if cur.rowcount == 1 else (0, 1)

    def save_findings(self, findings: Iterable[Finding]) -> None:
        """Record the findings of one detection pass; those of earlier passes that are not
        among them become inactive (resolved), with their history kept."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        rows = [
            (json.dumps(f.key), f.kind, f.model, f.severity.value, f.first_seen_ns,
             f.last_seen_ns, f.to_json())
            for f in findings
        ]  # fmt: skip
        try:
            with self._db:
                self._db.execute("UPDATE findings SET active = 0")
                self._db.executemany(
                    "INSERT INTO findings VALUES (?,?,?,?,?,?,1,?) ON CONFLICT(key) DO UPDATE "
                    "SET severity=excluded.severity, last_seen_ns=excluded.last_seen_ns, "
                    "active=1, body=excluded.body, "
                    "first_seen_ns=min(findings.first_seen_ns, excluded.first_seen_ns)",
                    rows,
                )
        except sqlite3.OperationalError as err:
            if self._full(err):
                raise StoreFullError(f"store {self.path} is full: {err}") from None
            raise StoreError(f"writing findings to {self.path} failed: {err}") from None

    def findings(self, active_only: bool = False) -> list[Finding]:
        sql = "SELECT body, first_seen_ns FROM findings"
        if active_only:
            sql += " WHERE active = 1"
        out = []
        for body, first in self._db.execute(sql + " ORDER BY first_seen_ns"):
            finding = Finding.from_dict(json.loads(body))
            out.append(replace(finding, first_seen_ns=first))
        return out

    # -- reading -----------------------------------------------------------------------
    def count(self, table: str) -> int:
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}")
        return int(self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def log_records(
        self,
        kinds: Iterable[str] | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        request_id: str | None = None,
    ) -> Iterator[object]:
        """Log events in time order (then file order), decoded to their dataclasses."""
        where: list[str] = []
        args: list[str | int] = []
        if kinds is not None:
            names = list(kinds)
            where.append(f"kind IN ({','.join('?' * len(names))})")
            args += names
        if since_ns is not None:
            where.append("at_ns >= ?")
            args.append(since_ns)
        if until_ns is not None:
            where.append("at_ns < ?")
            args.append(until_ns)
        if request_id is not None:
            where.append("request_id = ?")
            args.append(request_id)
        sql = "SELECT kind, body FROM log_records"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY at_ns, source, offset"
        for kind, body in self._db.execute(sql, args):
            yield decode(kind, body)

    def metric_samples(
        self, name: str, since_ns: int | None = None, until_ns: int | None = None
    ) -> Iterator[tuple[str, int, ev.MetricSample]]:
        """``(target, at_ns, sample)`` for one sample name, in time order."""
        sql = "SELECT target, at_ns, body FROM metric_samples WHERE name = ?"
        args: list[object] = [name]
        if since_ns is not None:
            sql += " AND at_ns >= ?"
            args.append(since_ns)
        if until_ns is not None:
            sql += " AND at_ns < ?"
            args.append(until_ns)
        for target, at_ns, body in self._db.execute(sql + " ORDER BY at_ns", args):
            yield target, at_ns, decode("MetricSample", body)  # type: ignore[misc]

    def _bodies(
        self, table: str, kind: str, order: str, since: tuple[str, int] | None = None
    ) -> Iterator[object]:
        where, args = "", []
        if since is not None:
            where, args = f" WHERE {since[0]} >= ?", [since[1]]
        sql = f"SELECT body FROM {table}{where} ORDER BY {order}"
        for (body,) in self._db.execute(sql, args):
            yield decode(kind, body)

    def scrapes(self, since_ns: int | None = None) -> Iterator[ev.ScrapeStatus]:
        since = None if since_ns is None else ("at_ns", since_ns)
        yield from self._bodies("scrapes", "ScrapeStatus", "at_ns", since)  # type: ignore[misc]

    def model_stats(self, since_ns: int | None = None) -> Iterator[ev.ModelStats]:
        since = None if since_ns is None else ("at_ns", since_ns)
        yield from self._bodies("model_stats", "ModelStats", "at_ns", since)  # type: ignore[misc]

    def metric_scrapes(self, since_ns: int) -> Iterator[ev.MetricsScrape]:
        """Stored samples regrouped into the scrapes they came from, in time order."""
        sql = (
            "SELECT target, at_ns, body FROM metric_samples WHERE at_ns >= ? ORDER BY at_ns, target"
        )
        key: tuple[str, int] | None = None
        samples: list[ev.MetricSample] = []
        for target, at_ns, body in self._db.execute(sql, (since_ns,)):
            if key is not None and key != (target, at_ns):
                yield ev.MetricsScrape(key[1], key[0], tuple(samples))
                samples = []
            key = (target, at_ns)
            samples.append(decode("MetricSample", body))  # type: ignore[arg-type]
        if key is not None:
            yield ev.MetricsScrape(key[1], key[0], tuple(samples))

    def log_rows(
        self, since_ns: int, until_ns: int | None = None, request_ids: Iterable[str] = ()
    ) -> Iterator[tuple[str, object]]:
        """``(source, record)`` from ``since_ns`` on, or of the given request ids only."""
        ids = list(request_ids)
        sql = "SELECT source, kind, body FROM log_records WHERE at_ns >= ?"
        args: list[object] = [since_ns]
        if until_ns is not None:
            sql += " AND at_ns < ?"
            args.append(until_ns)
        if ids:
            sql += f" AND request_id IN ({','.join('?' * len(ids))})"
            args += ids
        for source, kind, body in self._db.execute(sql + " ORDER BY at_ns, source, offset", args):
            yield source, decode(kind, body)

    def open_request_ids(self, since_ns: int, until_ns: int) -> list[str]:
        """Ids with more lifecycles begun than released between two instants (queued or
        executing at ``until_ns``), counted in SQL so that nothing is decoded."""
        sql = """
            SELECT request_id FROM log_records
            WHERE at_ns >= ? AND at_ns < ? AND request_id IS NOT NULL AND request_id != ''
              AND kind IN ('RequestPrepared', 'RequestStateChange')
            GROUP BY request_id
            HAVING max(sum(kind = 'RequestPrepared'),
                       sum(kind = 'RequestStateChange'
                           AND json_extract(body, '$.to_state') = 'PENDING'))
                 > sum(kind = 'RequestStateChange'
                       AND json_extract(body, '$.to_state') = 'RELEASED')
        """
        return [rid for (rid,) in self._db.execute(sql, (since_ns, until_ns))]

    def trace_spans(self) -> Iterator[ev.TraceSpan]:
        yield from self._bodies("trace_spans", "TraceSpan", "source, trace_id")  # type: ignore[misc]

    def otlp_spans(self, since_ns: int | None = None) -> Iterator[ev.OtlpSpan]:
        since = None if since_ns is None else ("start_ns", since_ns)
        yield from self._bodies("otlp_spans", "OtlpSpan", "start_ns", since)  # type: ignore[misc]

    def time_range(self) -> tuple[int, int] | None:
        """Earliest and latest event time across tables (ns), ``None`` when empty."""
        lows, highs = [], []
        for table, col in TIME_COLUMNS.items():
            lo, hi = self._db.execute(f"SELECT min({col}), max({col}) FROM {table}").fetchone()
            if lo is not None:
                lows.append(lo)
                highs.append(hi)
        return (min(lows), max(highs)) if lows else None

    def latest_log_ns(self) -> int | None:
        """Time of the newest stored log record: how far the log is known to be complete."""
        row = self._db.execute("SELECT max(at_ns) FROM log_records").fetchone()
        return None if row[0] is None else int(row[0])

    # -- housekeeping --------------------------------------------------------------------
    def size_bytes(self) -> int:
        page_count = self._db.execute("PRAGMA page_count").fetchone()[0]
        page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int(page_count * page_size)

    def apply_retention(
        self,
        max_age_s: float | None = None,
        max_bytes: int | None = None,
        now_ns: int | None = None,
    ) -> int:
        """Delete what is older than ``max_age_s``, then the oldest tenth at a time while the
        file is over ``max_bytes``. Returns the rows deleted."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        try:
            return self._apply_retention(max_age_s, max_bytes, now_ns)
        except sqlite3.Error as err:  # a DELETE needs room in the WAL too: a full disk
            if self._full(err):
                raise StoreFullError(f"store {self.path} is full: {err}") from None
            raise StoreError(f"retention on {self.path} failed: {err}") from None

    def _apply_retention(
        self, max_age_s: float | None, max_bytes: int | None, now_ns: int | None
    ) -> int:
        deleted = 0
        with self._db:
            if max_age_s is not None:
                cutoff = (now_ns if now_ns is not None else time.time_ns()) - int(max_age_s * 1e9)
                for table, col in TIME_COLUMNS.items():
                    cur = self._db.execute(f"DELETE FROM {table} WHERE {col} < ?", (cutoff,))
                    deleted += cur.rowcount
        self._db.executescript("PRAGMA incremental_vacuum;")
        for _ in range(60):
            if max_bytes is None or self.size_bytes() <= max_bytes:
                break
            removed = 0
            with self._db:
                for table, col in TIME_COLUMNS.items():
                    # The oldest tenth of each table's rows, whatever their time spread.
                    cur = self._db.execute(
                        f"DELETE FROM {table} WHERE {col} <= (SELECT {col} FROM {table} "
                        f"ORDER BY {col} LIMIT 1 OFFSET (SELECT count(*) / 10 FROM {table}))"
                    )
                    removed += cur.rowcount
            deleted += removed
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.executescript("PRAGMA incremental_vacuum;")
            if not removed:
                break
        return deleted
