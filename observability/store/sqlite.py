"""The embedded store: SQLite in WAL mode, one writer, readers that never block it.

Everything outside this module talks to :class:`Store` through typed events, so a later
backend (Prometheus plus a trace backend beyond one machine) can replace it behind the same
methods. Writes are batched in one transaction and idempotent by each record's natural key.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from observability import events as ev
from observability.findings import Finding
from observability.gcpause import gc_paused
from observability.store import codec
from observability.store.blocks import (
    BlockError,
    ColumnBlock,
    decode_block,
    encode_block,
    encode_columns,
)
from observability.store.codec import decode, encode, kind_of
from observability.store.schema import (
    LOG,
    LOG_TYPES,
    MIGRATIONS,
    ROUTES,
    SCHEMA_VERSION,
    SETUP_KINDS,
    STREAMS,
    TABLES,
)

__all__ = ["Store", "StoreError", "StoreFullError", "WriteResult"]

_c_log_run: Callable[[list[object]], tuple[list[int], int, int] | None] | None
# Not compiled: every log batch takes the keyed path (the same blocks).
_c_log_run = codec.compiled.log_run if codec.compiled is not None else None

_UNBINDABLE = (
    OverflowError,
    UnicodeEncodeError,
    TypeError,
    sqlite3.InterfaceError,
    sqlite3.DataError,
    sqlite3.IntegrityError,
)
"""What one record SQLite cannot hold raises (an integer past int64, a lone surrogate)."""

log = logging.getLogger(__name__)

_WAL_KEEP_BYTES = 4 << 20
"""What SQLite keeps of the WAL file once a checkpoint has emptied it (``journal_size_limit``):
about what its automatic checkpoint lets it reach (1,000 pages). Without it the file stays at
its largest (a compaction, a bundle's ingest), its pages reused for minutes of writes: a full
disk then went unseen for over 40 s (the soak's disk-full fault, CI 2026-11-27), and the space
is held by a file of dead pages."""

_FULL_BELOW_BYTES = 1 << 20
"""Less free space than this under the store makes a failed write a full disk."""


_KEY_CACHE_BLOCKS = 64
"""Blocks whose record keys are kept in memory for the duplicate check (the newest are the
ones a live collector's next records can overlap)."""

_BLOCKS_SINCE = 5
"""The schema that keeps records as blocks."""

_SETUP_TYPES = frozenset(SETUP_KINDS)
"""Records also kept in ``setup``, the newest of each kind and name of a log."""

_CACHE_RECORDS = 300_000
"""Decoded records a store keeps for readers that ask again (~100 MB at most)."""

_LIFECYCLE = frozenset({"RequestPrepared", "RequestStateChange"})

_IDLE_COMPACT_S = 60.0
"""A source whose staged records got nothing new for this long is compacted as it is: a log
file rotated away (or a trace file family of a stopped server) never fills a block, and its
staged rows (JSON, two indexes) took ten times the room (the hour soak: 120 of 140 MB)."""


def _offset(record: object) -> int:
    header = getattr(record, "header", None)
    return int(header.offset if header is not None else getattr(record, "offset", 0))


def _bindable(groups: dict[tuple[str, str], dict[str, tuple[int, object]]]) -> None:
    """Raise what SQLite would raise on these records' block (a time past int64, a source
    that is not UTF-8) before :meth:`Store.bulk` holds any: held records are bound only
    when their block is written, after the writer was told they were stored."""
    for (_stream, src), group in groups.items():
        src.encode("utf-8")
        for at, _ in group.values():
            if not -(2**63) <= at < 2**63:
                raise OverflowError(f"time {at} does not fit in 64 bits")


_LOG_TYPES = frozenset(LOG_TYPES)


def _even_parts(keys: list[str], size: int) -> Iterator[list[str]]:
    """``keys`` (at least ``size``) in as few parts of at most ``size`` as can hold them, of
    even lengths: a live batch of a block's worth or more is all blocks, none under half a
    block. Staging its remainder as JSON rows, to be decoded and packed again a minute
    later, was 60% of what a busy log's writes cost (a poll of 22,900 records left 6,500)."""
    parts = -(-len(keys) // size)
    step, extra = divmod(len(keys), parts)
    at = 0
    for i in range(parts):
        n = step + (i < extra)
        yield keys[at : at + n]
        at += n


@dataclass
class _Run:
    """A log's records held in :meth:`Store.bulk` without keys, in order."""

    times: list[int] = field(default_factory=list)
    events: list[object] = field(default_factory=list)
    blocks: list[ColumnBlock] = field(default_factory=list)
    """Or its records as blocks, already in columns (:meth:`Store.write_block`): a run
    holds one or the other."""
    last: int | None = None
    """The last record's byte offset (kept after its block is written)."""

    def __bool__(self) -> bool:
        return bool(self.times or self.blocks)


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
        self._keys: dict[int, frozenset[str]] = {}
        self._staged: Counter[tuple[str, str]] | None = None
        self._staged_last: dict[tuple[str, str], float] = {}
        """(stream, source) -> when a record was last staged for it (monotonic)."""
        self._staged_held: dict[tuple[str, str], tuple[list[str], list[object]]] = {}
        """(stream, source) -> the keys and records this writer staged for it since its last
        compaction, in order: what the compaction would decode again from their JSON, when
        the staged rows are exactly these (decoding them was two fifths of storing a span on
        the live path)."""
        self._cache: dict[tuple[int, int, frozenset[str] | None], list[tuple[str, object]]] = {}
        self._cached = 0
        self._bulk: dict[tuple[str, str], dict[str, tuple[int, object, str]]] | None = None
        """(stream, source) -> records held for whole blocks while :meth:`bulk` is open."""
        self._runs: dict[str, _Run | None] = {}
        """A log's source -> its records held unkeyed while :meth:`bulk` is open (None: the
        source takes the keyed path for the rest of the ``with``)."""
        self._envelopes: dict[tuple[str, str], tuple[int, int] | None] = {}
        """(stream, source) -> the times every block of it spans (None: it has none), learnt
        once while :meth:`bulk` is open and widened by each block written."""
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
                self._db.execute(f"PRAGMA journal_size_limit={_WAL_KEEP_BYTES}")
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
        if current > SCHEMA_VERSION:
            return  # refused by the caller, untouched
        for number, script in enumerate(MIGRATIONS, start=1):
            if number <= current:
                continue
            with self._db:
                self._db.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={number};\nCOMMIT;")
        if 0 < current < _BLOCKS_SINCE:
            self._compact_due(everything=True)  # what schema 4 held, now as blocks
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")

    # -- writing -----------------------------------------------------------------------
    def write(self, events: Iterable[object], source: str = "") -> WriteResult:
        """Store a batch in one transaction. ``source`` names the stream log lines and trace
        spans came from (a log file's identity, a trace file family of one server run)."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        batch = list(events)
        # A busy log's batch makes tens of thousands of keys, tuples and blocks' columns, none
        # in a cycle: the collector's passes over them (and over everything a live window
        # holds) were a third of a write (gcpause.py).
        with gc_paused():
            try:
                result = self._write(batch, source, per_event=False)
            except _UNBINDABLE:
                result = self._write(batch, source, per_event=True)
            if self._bulk is not None:
                self._flush_bulk(everything=False)
            self._compact_due()
        return result

    def write_block(self, block: ColumnBlock, source: str) -> WriteResult:
        """Store a log's block as a column sink cut it (a bundle's ingest, in :meth:`bulk`):
        held as it is where :meth:`write` would hold its records without keys, stored
        through :meth:`write` as records otherwise (a store that has the log already)."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        if self._bulk is None or not _LOG_TYPES.issuperset(block.kinds):
            return self.write(block.records(), source)
        with gc_paused():
            if not self._run_of_block(block, source):
                return self.write(block.records(), source)
            setup = block.of(_SETUP_TYPES)
            try:
                if setup:
                    with self._db:
                        self._keep_setup(setup, source)
            except sqlite3.OperationalError as err:
                raise self._failure(err) from None
            self._flush_bulk(everything=False)
            self._compact_due()
        return WriteResult(len(block), 0, 0, 0)

    def _write(self, batch: list[object], source: str, per_event: bool) -> WriteResult:
        inserted = duplicates = ignored = rejected = 0
        try:
            for chunk in ([e] for e in batch) if per_event else (batch,):
                try:
                    with self._db:
                        added, dups, unknown = self._insert(chunk, source)
                    inserted += added
                    duplicates += dups
                    ignored += unknown
                except _UNBINDABLE:
                    if not per_event:
                        raise
                    rejected += 1
        except sqlite3.OperationalError as err:
            raise self._failure(err) from None
        return WriteResult(inserted, duplicates, ignored, rejected)

    def _failure(self, err: sqlite3.Error, doing: str = "writing to") -> StoreError:
        """What a failed statement raises: a full disk as :class:`StoreFullError`."""
        if self._full(err):
            return StoreFullError(f"store {self.path} is full: {err}")
        return StoreError(f"{doing} {self.path} failed: {err}")

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

    def _insert(self, events: list[object], source: str) -> tuple[int, int, int]:
        """``(inserted, duplicates, ignored)`` of a batch, in the caller's transaction.

        Records are grouped by stream and source; a record whose key a block or the staging
        table holds already is a duplicate. A group of at least a block's worth goes straight
        into blocks, the rest into ``staged``."""
        ignored = duplicates = 0
        types = set(map(type, events))  # one pass for both questions
        if not _SETUP_TYPES.isdisjoint(types):
            self._keep_setup([e for e in events if type(e) in _SETUP_TYPES], source)
        if self._bulk is not None and _LOG_TYPES.issuperset(types) and self._run_of(events, source):
            return len(events), 0, 0
        groups = self._one_stream(events, source)
        if groups is None:
            groups = {}
            for event in events:
                stream = ROUTES.get(type(event))
                if stream is None:
                    ignored += 1
                    continue
                group = groups.setdefault((stream.name, stream.source(event, source)), {})
                key = stream.key(event, source)
                if key in group:
                    duplicates += 1
                else:
                    group[key] = (stream.at_ns(event), event)
        if self._bulk is not None:
            _bindable(groups)
        inserted = 0
        for (name, src), group in groups.items():
            stream = STREAMS[name]
            fresh = self._not_in_blocks(name, src, group)
            duplicates += len(group) - len(fresh)
            if self._bulk is not None:
                added = self._hold(name, src, fresh, source)
                inserted += added
                duplicates += len(fresh) - added
                continue
            keys = list(fresh)
            if len(keys) >= stream.block_records and not (
                self._staged_counts()[(name, src)] and self._staged_any(name, keys)
            ):
                for part in _even_parts(keys, stream.block_records):
                    records = [fresh[k] for k in part]
                    self._put(name, src, [at for at, _ in records], [e for _, e in records],
                              [source] * len(part) if source != src else (), part)  # fmt: skip
                inserted += len(keys)
                keys = []
            before = self._db.total_changes
            self._db.executemany(
                "INSERT OR IGNORE INTO staged (stream, source, origin, key, at_ns, kind, body) "
                "VALUES (?,?,?,?,?,?,?)",
                [(name, src, source, k, fresh[k][0], kind_of(fresh[k][1]), encode(fresh[k][1]))
                 for k in keys],
            )  # fmt: skip
            added = self._db.total_changes - before
            inserted += added
            duplicates += len(keys) - added
            if added == len(keys):
                held_keys, held = self._staged_held.setdefault((name, src), ([], []))
                held_keys += keys
                held += [fresh[k][1] for k in keys]
            else:  # which rows were ignored only the table knows: the compaction decodes
                self._staged_held.pop((name, src), None)
            self._staged_counts()[(name, src)] += added
            if added:
                self._staged_last[(name, src)] = time.monotonic()
        return inserted, duplicates, ignored

    def _keep_setup(self, events: list[object], source: str) -> None:
        """The newest setup line of each kind and name of the log (schema 6's ``setup``)."""
        rows = []
        for e in events:
            assert isinstance(e, ev.ModelConfig | ev.RateLimiterPool)
            name = e.model if isinstance(e, ev.ModelConfig) else ""
            rows.append((source, kind_of(e), name, e.header.at_ns, encode(e)))
        self._db.executemany(
            "INSERT INTO setup (source, kind, name, at_ns, body) VALUES (?,?,?,?,?) "
            "ON CONFLICT (source, kind, name) DO UPDATE SET at_ns = excluded.at_ns, "
            "body = excluded.body WHERE excluded.at_ns >= setup.at_ns",
            rows,
        )

    def setup_lines(self) -> list[tuple[str, object]]:
        """``(source, record)`` of the setup lines in force, of every log the store holds:
        each model's last config and the rate limiter's last pool (none in a store of a
        schema before 6, read-only)."""
        try:
            rows = self._db.execute(
                "SELECT source, kind, body FROM setup ORDER BY at_ns, source, kind, name"
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        return [(source, decode(kind, body)) for source, kind, body in rows]

    def _run_of(self, events: list[object], source: str) -> bool:
        """Hold a log's batch without keying its records, when none can be a duplicate: the
        store had nothing of its source when :meth:`bulk` began, and its offsets go on from
        where the held ones stopped (a bundle's ingest: its log read once, in order). A key
        string and a dict entry a line were a third of an ingest; a batch that is not such a
        run spills what is held into the keyed path, which then checks it as before. Every
        record is a log's (the caller checks)."""
        if _c_log_run is None:
            return False
        run = self._run(source)
        if run is None:
            return False
        checked = _c_log_run(events) if not run.blocks else None
        if checked is None or (run.last is not None and checked[1] <= run.last):
            self._spill(source)
            return False
        times, _first, run.last = checked
        run.times += times
        run.events += events
        return True

    def _run_of_block(self, block: ColumnBlock, source: str) -> bool:
        """:meth:`_run_of` for a block in columns: held as it is, its span checked as
        ``log_run`` checks a list (the sink did that as it cut the block)."""
        run = self._run(source)
        if run is None:
            return False
        span = block.span
        if span is None or run.times or (run.last is not None and span[2] <= run.last):
            self._spill(source)
            return False
        run.blocks.append(block)
        run.last = span[3]
        return True

    def _run(self, source: str) -> _Run | None:
        """``source``'s run, begun at its first batch in :meth:`bulk` (None: keyed)."""
        if source not in self._runs:
            self._runs[source] = self._new_run(source)
        return self._runs[source]

    def _new_run(self, source: str) -> _Run | None:
        """A run for ``source`` if the store holds nothing of it yet (else None: keyed)."""
        try:
            source.encode("utf-8")
        except UnicodeEncodeError:
            return None
        assert self._bulk is not None
        if self._bulk.get((LOG.name, source)) or self._staged_counts()[(LOG.name, source)]:
            return None
        stored = self._db.execute(
            "SELECT 1 FROM blocks WHERE stream = ? AND source = ? LIMIT 1", (LOG.name, source)
        ).fetchone()
        return None if stored else _Run()

    def _spill(self, source: str) -> None:
        """Hand ``source``'s run to the keyed path: its held records, keyed; no more runs."""
        run = self._runs.get(source)
        self._runs[source] = None
        if not run:
            return
        assert self._bulk is not None and LOG.keyed is not None
        events = run.events + [e for block in run.blocks for e in block.records()]
        keys, times = LOG.keyed(events, source)
        held = self._bulk.setdefault((LOG.name, source), {})
        for k, at, e in zip(keys, times, events, strict=True):
            held[k] = (at, e, source)

    @staticmethod
    def _one_stream(
        events: list[object], source: str
    ) -> dict[tuple[str, str], dict[str, tuple[int, object]]] | None:
        """The batch by stream and source, keyed, when it is one stream of one source with no
        key twice (a log's batch: the usual case, made by list passes instead of a dict
        lookup per record); None otherwise."""
        kinds = set(map(type, events))
        streams = {ROUTES.get(t) for t in kinds}
        if len(streams) != 1:
            return None
        (stream,) = streams
        if stream is None or stream.per_record_source:
            return None
        if stream.keyed is not None:
            keys, times = stream.keyed(events, source)
        else:
            keys = list(map(stream.key, events, itertools.repeat(source)))
            times = list(map(stream.at_ns, events))
        group = dict(zip(keys, zip(times, events, strict=True), strict=True))
        if len(group) != len(keys):
            return None  # a key twice: the record-by-record path keeps the first
        return {(stream.name, stream.source(events[0], source)): group}

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Write whole blocks only, never ``staged``, inside the ``with``: for a writer that
        has everything at hand (a bundle's ingest), where staging every small part (a trace
        file, a scrape) as JSON rows only to compact them at the end was most of the ingest.
        What :meth:`write` accepts inside is held in memory (a block's worth per stream and
        source at most) and stored by the end of the ``with``, so it is acknowledged then,
        not before: a writer killed inside loses what it wrote there, and runs again. Its
        sources are its own while it is open: what another writer stores for them then (the
        same bundle ingested twice at once) is not looked for, as its held records are not."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        if self._bulk is not None:
            yield
            return
        self._bulk, self._runs, self._envelopes = {}, {}, {}
        try:
            yield
            self._flush_bulk(everything=True)
        finally:
            self._bulk, self._runs, self._envelopes = None, {}, {}

    def _hold(
        self, stream: str, src: str, fresh: dict[str, tuple[int, object]], source: str
    ) -> int:
        """Hold ``fresh`` for :meth:`bulk`'s blocks; how many were new (not held already, not
        staged by an earlier writer)."""
        assert self._bulk is not None
        held = self._bulk.setdefault((stream, src), {})
        keys = [k for k in fresh if k not in held]
        if keys and self._staged_counts()[(stream, src)]:
            keys = self._not_staged(stream, keys)
        for k in keys:
            held[k] = (*fresh[k], source)
        return len(keys)

    def _flush_bulk(self, everything: bool) -> None:
        """Store the held records as blocks: every whole block's worth, and with
        ``everything`` the rest too (one short block per stream and source)."""
        assert self._bulk is not None
        written: list[tuple[dict[str, tuple[int, object, str]], list[str]]] = []
        cut: list[tuple[_Run, int]] = []
        cut_blocks: list[tuple[_Run, int]] = []
        try:
            with self._db:
                for src, run in self._runs.items():
                    if not run:
                        continue
                    size, n = LOG.block_records, len(run.times)
                    upto = n if everything else n - n % size
                    for i in range(0, upto, size):
                        j = min(i + size, upto)
                        self._put(LOG.name, src, run.times[i:j], run.events[i:j])
                    if upto:
                        cut.append((run, upto))
                    whole = 0
                    for block in run.blocks:
                        if len(block) < size and not everything:
                            break  # a short block is the log's last (or an end of bulk)
                        assert block.span is not None
                        self._put_encoded(LOG.name, src, block.span[0], block.span[1],
                                          len(block), encode_columns(block))  # fmt: skip
                        whole += 1
                    if whole:
                        cut_blocks.append((run, whole))
                for (stream, src), held in self._bulk.items():
                    size = STREAMS[stream].block_records
                    if not held or (len(held) < size and not everything):
                        continue  # after every write: only a full block's worth is written
                    keys = list(held)
                    upto = len(keys) if everything else len(keys) - len(keys) % size
                    for i in range(0, upto, size):
                        part = keys[i : min(i + size, upto)]
                        self._put_block(stream, src, [held[k] for k in part], part)
                    written.append((held, keys[:upto]))
        except sqlite3.OperationalError as err:
            raise self._failure(err) from None
        for held, keys in written:  # committed: a failed transaction left them all held
            for k in keys:
                del held[k]
        for run, upto in cut:
            del run.times[:upto], run.events[:upto]
        for run, whole in cut_blocks:
            del run.blocks[:whole]

    def _not_staged(self, stream: str, keys: list[str]) -> list[str]:
        staged = set(self._staged_of(stream, keys))
        return [k for k in keys if k not in staged]

    def _staged_any(self, stream: str, keys: list[str]) -> bool:
        return next(self._staged_of(stream, keys), None) is not None

    def _staged_of(self, stream: str, keys: list[str]) -> Iterator[str]:
        """The keys of ``keys`` that ``staged`` holds, 500 a query (SQLite's bound
        parameters)."""
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            sql = (
                f"SELECT key FROM staged WHERE stream = ? AND key IN ({','.join('?' * len(part))})"
            )
            yield from (k for (k,) in self._db.execute(sql, [stream, *part]))

    def _not_in_blocks(
        self, stream: str, src: str, group: dict[str, tuple[int, object]]
    ) -> dict[str, tuple[int, object]]:
        """The records of ``group`` no block holds: only blocks of the same source whose
        time span covers one of them are looked into (usually the newest, already known)."""
        if not group:
            return group
        times = [at for at, _ in group.values()]
        lo, hi = min(times), max(times)
        if self._bulk is not None:
            # A bulk writer is its sources' only writer (it holds what it wrote in memory
            # until its blocks are written, unseen by any other): what it knows of their
            # blocks' times stays true, and a trace file's spans need no query of their own.
            envelope = self._envelope(stream, src)
            if envelope is None or hi < envelope[0] or lo > envelope[1]:
                return group
        rows = self._db.execute(
            "SELECT id, data FROM blocks WHERE stream = ? AND source = ? AND max_at_ns >= ? "
            "AND min_at_ns <= ?",
            (stream, src, lo, hi),
        ).fetchall()
        if not rows:
            return group
        held: set[str] = set()
        for block_id, data in rows:
            held |= self._block_keys(block_id, data, stream, src)
        if held.isdisjoint(group):  # the usual case: the newest block only meets it in time
            return group
        return {k: v for k, v in group.items() if k not in held}

    def _envelope(self, stream: str, src: str) -> tuple[int, int] | None:
        if (stream, src) not in self._envelopes:
            lo, hi = self._db.execute(
                "SELECT min(min_at_ns), max(max_at_ns) FROM blocks WHERE stream = ? AND source = ?",
                (stream, src),
            ).fetchone()
            self._envelopes[stream, src] = None if lo is None else (lo, hi)
        return self._envelopes[stream, src]

    def _block_keys(self, block_id: int, data: bytes, stream: str, src: str) -> frozenset[str]:
        keys = self._keys.get(block_id)
        if keys is None:
            key = STREAMS[stream].key
            keys = frozenset(key(e, s) for s, e in decode_block(data, source=src))
            self._remember(block_id, keys)
        return keys

    def _remember(self, block_id: int, keys: frozenset[str]) -> None:
        self._keys[block_id] = keys
        while len(self._keys) > _KEY_CACHE_BLOCKS:
            self._keys.pop(next(iter(self._keys)))

    def _put_block(
        self, stream: str, src: str, records: list[tuple[int, object, str]], keys: list[str]
    ) -> None:
        """One block of ``(at_ns, record, its source)``, in the caller's transaction."""
        own = [s for _, _, s in records]
        self._put(stream, src, [at for at, _, _ in records], [e for _, e, _ in records],
                  own if set(own) != {src} else (), keys)  # fmt: skip

    def _put(
        self,
        stream: str,
        src: str,
        times: list[int],
        events: list[object],
        sources: Sequence[str] = (),
        keys: list[str] | None = None,
    ) -> None:
        """One block of ``events`` at ``times``, with their own ``sources`` if not all
        ``src``, in the caller's transaction; their ``keys`` are remembered for the duplicate
        check (without them, a later check reads them from the block)."""
        row = self._put_encoded(stream, src, min(times), max(times), len(events),
                                encode_block(events, sources))  # fmt: skip
        if keys is not None and row is not None:
            self._remember(row, frozenset(keys))

    def _put_encoded(
        self, stream: str, src: str, min_at: int, max_at: int, records: int, data: bytes
    ) -> int | None:
        """One encoded block, in the caller's transaction: its row id."""
        if (stream, src) in self._envelopes:  # wider than the blocks if it rolls back: safe
            known = self._envelopes[stream, src]
            lo, hi = (min_at, max_at) if known is None else known
            self._envelopes[stream, src] = (min(lo, min_at), max(hi, max_at))
        cur = self._db.execute(
            "INSERT INTO blocks (stream, source, min_at_ns, max_at_ns, written_ns, records, "
            "data) VALUES (?,?,?,?,?,?,?)",
            (stream, src, min_at, max_at, time.time_ns(), records, data),
        )
        return cur.lastrowid

    def _compact_due(self, everything: bool = False) -> None:
        """Move staged records into blocks where a source has a block's worth or has had
        nothing new for ``_IDLE_COMPACT_S`` (all of them with ``everything``: after a
        migration). The records are safe in ``staged`` already, so a compaction that fails
        (a full disk) leaves them there and is tried again later."""
        staged = self._staged_counts()
        idle_since = time.monotonic() - _IDLE_COMPACT_S
        due = [
            (stream, src)
            for (stream, src), n in staged.items()
            if n
            and stream in STREAMS
            and (
                everything
                or n >= STREAMS[stream].block_records
                or self._staged_last.setdefault((stream, src), time.monotonic()) < idle_since
            )
        ]
        for stream, src in due:
            try:
                with self._db:
                    self._compact(stream, src)
                staged[(stream, src)] = 0
            except sqlite3.Error as err:
                log.warning("store %s: staged %s records of %r stay staged: %s",
                            self.path, stream, src, err)  # fmt: skip
                return

    def _staged_counts(self) -> Counter[tuple[str, str]]:
        """Staged records per stream and source, counted in SQL once and then kept up to
        date by the writer (a count per write was most of an ingest's time)."""
        if self._staged is None:
            rows = self._db.execute(
                "SELECT stream, source, count(*) FROM staged GROUP BY stream, source"
            )
            self._staged = Counter({(stream, src): n for stream, src, n in rows})
        return self._staged

    def compact(self) -> None:
        """Compact every staged record into blocks now: the end of a bundle's ingest or of a
        collector's run (what waits in ``staged`` takes about ten times the room)."""
        if self.readonly:
            raise StoreError("this store was opened read-only")
        self._compact_due(everything=True)
        try:
            self._db.executescript("PRAGMA incremental_vacuum;")  # give the room back
        except sqlite3.Error as err:
            log.warning("store %s: no room given back: %s", self.path, err)

    def _compact(self, stream: str, src: str) -> None:
        rows = self._db.execute(
            "SELECT seq, key, origin, at_ns, kind, body FROM staged WHERE stream = ? "
            "AND source = ? ORDER BY seq",
            (stream, src),
        ).fetchall()
        keys = [key for _, key, _, _, _, _ in rows]
        held_keys, held = self._staged_held.pop((stream, src), ([], []))
        records = (
            held
            if held_keys == keys  # what this writer staged, and nothing else: no decoding
            else [decode(kind, body) for _, _, _, _, kind, body in rows]
        )
        held_rows = [
            (at, e, origin) for (_, _, origin, at, _, _), e in zip(rows, records, strict=True)
        ]
        size = STREAMS[stream].block_records
        for i in range(0, len(rows), size):
            self._put_block(stream, src, held_rows[i : i + size], keys[i : i + size])
        self._db.execute("DELETE FROM staged WHERE stream = ? AND source = ?", (stream, src))

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
            raise self._failure(err, "writing findings to") from None

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
    def _read(
        self,
        stream: str,
        since_ns: int | None = None,
        until_ns: int | None = None,
        kinds: Collection[str] | None = None,
    ) -> list[tuple[str, int, object]]:
        """``(source, at_ns, record)`` of one stream in ``[since_ns, until_ns)``, blocks in
        the order they were written and then staged records in theirs (callers sort)."""
        at = STREAMS[stream].at_ns
        lo = -(1 << 63) if since_ns is None else since_ns
        hi = (1 << 63) - 1 if until_ns is None else until_ns
        out: list[tuple[str, int, object]] = []
        blocks = self._db.execute(
            "SELECT id, written_ns, source, data FROM blocks WHERE stream = ? AND max_at_ns >= ? "
            "AND min_at_ns < ? ORDER BY id",
            (stream, lo, hi),
        )
        wanted = None if kinds is None else frozenset(kinds)
        for block_id, written, src, data in blocks:
            records = self._decoded(block_id, written, src, data, wanted, stream)
            out += [(s, t, r) for s, r in records if lo <= (t := at(r)) < hi]
        sql = "SELECT origin, at_ns, kind, body FROM staged WHERE stream = ? AND at_ns >= ? "
        sql += "AND at_ns < ?"
        for src, t, kind, body in self._db.execute(sql + " ORDER BY seq", (stream, lo, hi)):
            if kinds is None or kind in kinds:
                out.append((src, t, decode(kind, body)))
        return out

    def _decoded(
        self,
        block_id: int,
        written_ns: int,
        src: str,
        data: bytes,
        kinds: frozenset[str] | None,
        stream: str,
    ) -> list[tuple[str, object]]:
        """A block's records, decoded once for a reader that asks again (a detector pass
        reads the metrics stream once per sample name); blocks never change once written."""
        key = (block_id, written_ns, kinds)
        hit = self._cache.pop(key, None)
        if hit is None:
            try:
                hit = decode_block(data, kinds, src)
            except BlockError as err:
                raise StoreError(f"store {self.path}: a damaged {stream} block: {err}") from None
            self._cached += len(hit)
        self._cache[key] = hit
        while self._cached > _CACHE_RECORDS and len(self._cache) > 1:
            self._cached -= len(self._cache.pop(next(iter(self._cache))))
        return hit

    def _logs(
        self, since_ns: int | None, until_ns: int | None, kinds: Collection[str] | None = None
    ) -> list[tuple[str, int, object]]:
        """Log records in time order, then file order (a log's times are not strictly
        increasing: threads write them)."""
        rows = self._read("log", since_ns, until_ns, kinds)
        rows.sort(key=lambda r: (r[1], r[0], _offset(r[2])))
        return rows

    def count(self, table: str) -> int:
        """Records of one of the tables of schema 4 (:data:`TABLES`), or findings; samples
        for ``metric_samples``."""
        if table == "findings":
            return int(self._db.execute("SELECT count(*) FROM findings").fetchone()[0])
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}")
        stream = TABLES[table]
        if table == "metric_samples":
            scrapes = [s for _, _, s in self._read(stream) if isinstance(s, ev.MetricsScrape)]
            return sum(len(s.samples) for s in scrapes)
        (blocked,) = self._db.execute(
            "SELECT coalesce(sum(records), 0) FROM blocks WHERE stream = ?", (stream,)
        ).fetchone()
        (staged,) = self._db.execute(
            "SELECT count(*) FROM staged WHERE stream = ?", (stream,)
        ).fetchone()
        return int(blocked) + int(staged)

    def records(self) -> Iterator[tuple[str, str, object]]:
        """``(stream, source, record)`` of everything stored, decoded: for an audit that must
        see inside the compressed blocks (what a payload scan reads)."""
        for stream in STREAMS:
            for src, _, record in self._read(stream):
                yield stream, src, record

    def log_records(
        self,
        kinds: Iterable[str] | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        request_id: str | None = None,
    ) -> Iterator[object]:
        """Log events in time order (then file order), decoded to their dataclasses."""
        wanted = None if kinds is None else frozenset(kinds)
        for _, _, record in self._logs(since_ns, until_ns, wanted):
            if request_id is None or getattr(record, "request_id", None) == request_id:
                yield record

    def metric_samples(
        self, name: str, since_ns: int | None = None, until_ns: int | None = None
    ) -> Iterator[tuple[str, int, ev.MetricSample]]:
        """``(target, at_ns, sample)`` for one sample name, in time order."""
        for scrape in self._scrapes_of("metrics", since_ns, until_ns):
            assert isinstance(scrape, ev.MetricsScrape)
            for sample in scrape.samples:
                if sample.name == name:
                    yield scrape.target, scrape.at_ns, sample

    def _scrapes_of(
        self, stream: str, since_ns: int | None, until_ns: int | None = None
    ) -> list[object]:
        rows = self._read(stream, since_ns, until_ns)
        rows.sort(key=lambda r: (r[1], r[0]))
        return [r for _, _, r in rows]

    def scrapes(self, since_ns: int | None = None) -> Iterator[ev.ScrapeStatus]:
        yield from self._scrapes_of("scrapes", since_ns)  # type: ignore[misc]

    def model_stats(self, since_ns: int | None = None) -> Iterator[ev.ModelStats]:
        yield from self._scrapes_of("stats", since_ns)  # type: ignore[misc]

    def metric_scrapes(self, since_ns: int) -> Iterator[ev.MetricsScrape]:
        """The scrapes stored from ``since_ns`` on, in time order."""
        yield from self._scrapes_of("metrics", since_ns)  # type: ignore[misc]

    def log_rows(
        self,
        since_ns: int,
        until_ns: int | None = None,
        request_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None,
    ) -> Iterator[tuple[str, object]]:
        """``(source, record)`` from ``since_ns`` on, or of the given request ids (or
        record kinds) only."""
        ids = frozenset(request_ids)
        wanted = None if kinds is None else frozenset(kinds)
        for source, _, record in self._logs(since_ns, until_ns, wanted):
            if not ids or getattr(record, "request_id", None) in ids:
                yield source, record

    def open_request_ids(self, since_ns: int, until_ns: int) -> list[str]:
        """Ids with more lifecycles begun than released between two instants (queued or
        executing at ``until_ns``); only the two kinds that say so are decoded."""
        begun: Counter[str] = Counter()
        pending: Counter[str] = Counter()
        released: Counter[str] = Counter()
        for _, _, rec in self._read("log", since_ns, until_ns, _LIFECYCLE):
            rid = getattr(rec, "request_id", None)
            if not rid:
                continue
            if isinstance(rec, ev.RequestPrepared):
                begun[rid] += 1
            elif isinstance(rec, ev.RequestStateChange):
                if rec.to_state == "PENDING":
                    pending[rid] += 1
                elif rec.to_state == "RELEASED":
                    released[rid] += 1
        ids = set(begun) | set(pending)
        return sorted(r for r in ids if max(begun[r], pending[r]) > released[r])

    def trace_spans(self) -> Iterator[ev.TraceSpan]:
        rows = self._read("traces")
        rows.sort(key=lambda r: (r[0], r[2].trace_id))  # type: ignore[attr-defined]
        for _, _, span in rows:
            yield span  # type: ignore[misc]

    def otlp_spans(self, since_ns: int | None = None) -> Iterator[ev.OtlpSpan]:
        yield from self._scrapes_of("otlp", since_ns)  # type: ignore[misc]

    def time_range(self) -> tuple[int, int] | None:
        """Earliest and latest wall-clock event time across streams (ns), ``None`` when
        empty (Triton trace files' monotonic times are not wall-clock)."""
        walls = [s.name for s in STREAMS.values() if s.wall_clock]
        marks = ",".join("?" * len(walls))
        lows, highs = [], []
        for sql in (
            f"SELECT min(min_at_ns), max(max_at_ns) FROM blocks WHERE stream IN ({marks})",
            f"SELECT min(at_ns), max(at_ns) FROM staged WHERE stream IN ({marks})",
        ):
            lo, hi = self._db.execute(sql, walls).fetchone()
            if lo is not None:
                lows.append(lo)
                highs.append(hi)
        return (min(lows), max(highs)) if lows else None

    def latest_log_ns(self) -> int | None:
        """Time of the newest stored log record: how far the log is known to be complete."""
        (a,) = self._db.execute("SELECT max(max_at_ns) FROM blocks WHERE stream = 'log'").fetchone()
        (b,) = self._db.execute("SELECT max(at_ns) FROM staged WHERE stream = 'log'").fetchone()
        known = [int(v) for v in (a, b) if v is not None]
        return max(known) if known else None

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
            raise self._failure(err, "retention on") from None

    def _apply_retention(
        self, max_age_s: float | None, max_bytes: int | None, now_ns: int | None
    ) -> int:
        deleted = 0
        now = now_ns if now_ns is not None else time.time_ns()
        with self._db:
            if max_age_s is not None:
                cutoff = now - int(max_age_s * 1e9)
                for stream in STREAMS.values():
                    column = "max_at_ns" if stream.wall_clock else "written_ns"
                    deleted += self._delete_blocks(
                        f"stream = ? AND {column} < ?", (stream.name, cutoff)
                    )
                    if stream.wall_clock:
                        deleted += self._db.execute(
                            "DELETE FROM staged WHERE stream = ? AND at_ns < ?",
                            (stream.name, cutoff),
                        ).rowcount
        self._db.executescript("PRAGMA incremental_vacuum;")
        for _ in range(60):
            if max_bytes is None or self.size_bytes() <= max_bytes:
                break
            removed = 0
            with self._db:
                for stream in STREAMS.values():
                    # The oldest tenth of each stream's blocks and staged records.
                    column = "max_at_ns" if stream.wall_clock else "written_ns"
                    removed += self._delete_blocks(
                        f"stream = ? AND id IN (SELECT id FROM blocks WHERE stream = ? ORDER BY "
                        f"{column} LIMIT max(1, (SELECT count(*) / 10 FROM blocks WHERE "
                        "stream = ?)))",
                        (stream.name, stream.name, stream.name),
                    )
                    removed += self._db.execute(
                        "DELETE FROM staged WHERE seq IN (SELECT seq FROM staged WHERE stream = ?"
                        " ORDER BY at_ns LIMIT max(1, (SELECT count(*) / 10 FROM staged WHERE "
                        "stream = ?)))",
                        (stream.name, stream.name),
                    ).rowcount
            deleted += removed
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.executescript("PRAGMA incremental_vacuum;")
            if not removed:
                break
        return deleted

    def _delete_blocks(self, where: str, args: tuple[object, ...]) -> int:
        """Delete the blocks matching ``where``; the number of records they held."""
        self._staged = None  # retention deletes staged rows too: counted again when needed
        (records,) = self._db.execute(
            f"SELECT coalesce(sum(records), 0) FROM blocks WHERE {where}", args
        ).fetchone()
        self._db.execute(f"DELETE FROM blocks WHERE {where}", args)
        self._keys.clear()
        return int(records)
