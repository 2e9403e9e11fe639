"""The SQLite store on real files: round trips, idempotence, readers beside a writer,
retention, migrations and a full disk."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from observability import events as ev
from observability.store import Store, StoreError, StoreFullError
from observability.store.codec import KINDS, decode, encode

H = ev.LogRecord(at_ns=1_700_000_000_000_000_000, level=ev.LogLevel.INFO,
                 source_file="infer_request.cc", source_line=132, offset=0)  # fmt: skip


def header(offset: int, at_ns: int = H.at_ns) -> ev.LogRecord:
    return ev.LogRecord(at_ns, ev.LogLevel.INFO, "infer_request.cc", 132, offset)


def sample(name: str, value: float, **labels: str) -> ev.MetricSample:
    return ev.MetricSample(name, tuple(labels.items()), value, name)


def some_events() -> list[object]:
    return [
        ev.RequestStateChange(header(0), "r1", "PENDING", "EXECUTING"),
        ev.RequestStateChange(header(100, H.at_ns + 5), "r1", "EXECUTING", "RELEASED"),
        ev.StubOutput(H.at_ns + 6, 200, "Exception in callback <lambda>"),
        ev.MetricsScrape(H.at_ns, "m", (sample("nv_inference_count", 3, model="router"),)),
        ev.ScrapeStatus(H.at_ns, "m", True, 0.01),
        ev.ModelStats(
            H.at_ns,
            "router",
            "1",
            0,
            1,
            1,
            1,
            5,
            0,
            0,
            1,
            2,
            3,
            4,
            5,
            batch_stats=(ev.BatchStats(1, 1, 2, 1, 3, 1, 4),),
        ),
        ev.TraceSpan(
            1,
            None,
            "router",
            "1",
            "r1",
            (("REQUEST_START", 10), ("REQUEST_END", 90)),
            "trace.json.0",
        ),
        ev.OtlpSpan(
            "ab" * 16,
            "cd" * 8,
            "",
            "bls router->detector",
            "router",
            1,
            2,
            "ERROR",
            "boom",
            (("child.model", "detector"),),
            (ev.OtlpSpanEvent("exception", 2, (("exception.type", "KeyError"),)),),
        ),
    ]


def test_every_event_kind_round_trips_through_its_json() -> None:
    for event in some_events():
        assert decode(type(event).__name__, encode(event)) == event
    assert {"RequestStateChange", "OtlpSpan", "ModelStats", "MetricSample"} <= set(KINDS)


def test_write_read_and_idempotence(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        first = store.write(some_events(), source="log:1")
        again = store.write(some_events(), source="log:1")
        assert first.inserted == 8 and first.duplicates == 0
        assert again.inserted == 0 and again.duplicates == 8
        states = list(store.log_records(kinds=["RequestStateChange"], request_id="r1"))
        assert [s.to_state for s in states] == ["EXECUTING", "RELEASED"]
        assert [type(r).__name__ for r in store.log_records()] == [
            "RequestStateChange", "RequestStateChange", "StubOutput"
        ]  # fmt: skip
        (row,) = store.metric_samples("nv_inference_count")
        assert row[2].label("model") == "router"
        assert next(store.model_stats()).batch_stats[0].compute_infer_ns == 3
        assert next(store.otlp_spans()).events[0].attributes == (("exception.type", "KeyError"),)
        assert next(store.trace_spans()).timestamp("REQUEST_END") == 90
        # The same line from another file is another record.
        assert store.write(some_events()[:1], source="log:2").inserted == 1


def test_unknown_events_are_counted_not_stored(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        assert store.write(["not an event", 42]).ignored == 2


def test_reader_never_blocks_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = Store(path)
    writer.write(some_events(), source="a")
    reader = Store(path, readonly=True)
    stop = threading.Event()
    reads = []

    def read_loop() -> None:
        while not stop.is_set():
            reads.append(sum(1 for _ in reader.log_records()))

    thread = threading.Thread(target=read_loop)
    thread.start()
    try:
        for i in range(200):
            writer.write([ev.RequestStateChange(header(1000 + i), f"x{i}", "A", "B")], source="a")
    finally:
        stop.set()
        thread.join()
    assert reads and max(reads) <= 203
    assert writer.count("log_records") == 203
    with pytest.raises(StoreError, match="read-only"):
        reader.write(some_events())
    reader.close()
    writer.close()


def test_retention_by_age_and_size(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        now = H.at_ns + 10_000_000_000
        old = [ev.RequestStateChange(header(i, H.at_ns + i), f"o{i}", "A", "B") for i in range(50)]
        new = [ev.RequestStateChange(header(1000 + i, now), f"n{i}", "A", "B") for i in range(50)]
        store.write(old + new, source="f")
        assert store.apply_retention(max_age_s=5, now_ns=now) == 50
        assert store.count("log_records") == 50
        big = [ev.StubOutput(now + i, 10_000 + i, "x" * 2000) for i in range(2000)]
        store.write(big, source="f")
        assert store.size_bytes() > 2_000_000
        store.apply_retention(max_bytes=1_000_000)
        assert store.size_bytes() <= 1_000_000
        assert store.count("log_records") > 0


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(StoreError, match="newer than this program"):
        Store(path)


def test_garbage_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        Store(path)
    with pytest.raises(StoreError, match="no store"):
        Store(tmp_path / "missing.db", readonly=True)


def test_full_disk_is_a_typed_error_and_loses_nothing_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        store.write(some_events(), source="f")
        # A size cap on the file is a real "database or disk is full" from SQLite.
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages + 2}")
        with pytest.raises(StoreFullError):
            store.write([ev.StubOutput(H.at_ns, 10_000 + i, "y" * 4000) for i in range(50)], "f")
        assert store.count("log_records") == 3
        store._db.execute("PRAGMA max_page_count=1073741823")
        assert store.write([ev.StubOutput(H.at_ns, 99_999, "ok")], "f").inserted == 1
    time.sleep(0)


def _span(trace_id: int, start: int, source: str = "trace.json.0") -> ev.TraceSpan:
    stamps = (("REQUEST_START", start), ("REQUEST_END", start + 10))
    return ev.TraceSpan(trace_id, None, "router", "1", f"r{start}", stamps, source)


def test_a_restarted_server_reusing_trace_ids_loses_no_span(tmp_path: Path) -> None:
    """Triton numbers traces from 1 again after a restart and rewrites trace.json.0."""
    with Store(tmp_path / "s.db") as store:
        assert store.write([_span(1, 1_000), _span(2, 2_000)], "t").inserted == 2
        assert store.write([_span(1, 9_000)], "t").inserted == 1  # the next server run
        assert store.write([_span(1, 1_000), _span(1, 9_000)], "t").inserted == 0  # replay
        starts = sorted(s.timestamp("REQUEST_START") for s in store.trace_spans())
    assert starts == [1_000, 2_000, 9_000]


def test_migration_3_keeps_the_spans_of_a_version_2_store(tmp_path: Path) -> None:
    from observability.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for number, script in enumerate(MIGRATIONS[:2], start=1):
        db.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={number};\nCOMMIT;")
    span = _span(7, 5_000)
    db.execute(
        "INSERT INTO trace_spans VALUES (?,?,?,?,?,?,?,?)",
        ("t", 7, None, "router", "r5000", 5_000, 5_010, encode(span)),
    )
    db.commit()
    db.close()
    with Store(path) as store:
        assert store.schema_version() == len(MIGRATIONS)
        assert list(store.trace_spans()) == [span]
        assert store.write([span], "t").inserted == 0


def test_a_source_that_went_quiet_is_compacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rotated log never fills a block: its staged rows (ten times a block's room) would
    stay until the collector stopped. Once it has had nothing new for a while, the next
    write compacts it; a source still written to keeps staging."""
    import observability.store.sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "_IDLE_COMPACT_S", 0.3)
    prepared = [ev.RequestPrepared(header(i), f"r{i}", "router", 1, 1, 0) for i in range(10)]

    def staged(db: Store, source: str) -> int:
        sql = "SELECT count(*) FROM staged WHERE source = ?"
        return int(db._db.execute(sql, (source,)).fetchone()[0])

    with Store(tmp_path / "s.db") as db:
        db.write(prepared[:5], source="triton.log.1")
        db.write(prepared[:1], source="triton.log")
        assert staged(db, "triton.log.1") == 5  # not quiet yet
        time.sleep(0.4)
        db.write(prepared[1:2], source="triton.log")
        assert staged(db, "triton.log.1") == 0 and staged(db, "triton.log") == 2
        assert db.count("log_records") == 7
        got = sorted(r.request_id for r in db.log_records(kinds=["RequestPrepared"]))
        assert got == sorted(["r0", "r1"] + [f"r{i}" for i in range(5)])
        again = db.write(prepared[:5], source="triton.log.1")  # a replay after compaction
        assert again.inserted == 0 and again.duplicates == 5


def test_bulk_writes_blocks_only_and_stays_idempotent(tmp_path: Path) -> None:
    """A bundle's ingest writes inside ``bulk``: its many small parts go straight into
    blocks (no ``staged`` row, nothing to compact); a replay inside or after, and records an
    earlier writer staged, are still duplicates; a record SQLite cannot hold costs itself."""
    prepared = [ev.RequestPrepared(header(i), f"r{i}", "router", 1, 1, 0) for i in range(10)]
    with Store(tmp_path / "s.db") as db:
        db.write(prepared[:3], source="triton.log")  # staged by a live writer
        with db.bulk():
            first = db.write(prepared[:6], source="triton.log")
            inside = db.write(prepared[4:8], source="triton.log")
            forged = replace(prepared[9], header=header(9, 2**63))
            mixed = db.write([forged, prepared[8], *some_events()[3:]], source="triton.log")
            assert db.count("log_records") == 3, "held, not stored, until the bulk ends"
        assert (first.inserted, first.duplicates) == (3, 3)
        assert (inside.inserted, inside.duplicates) == (2, 2)
        assert (mixed.inserted, mixed.rejected) == (6, 1)
        rows = db._db.execute("SELECT count(*) FROM staged WHERE source = ''").fetchone()
        assert rows[0] == 0, "the bulk's metrics, stats and spans went straight into blocks"
        assert db.count("log_records") == 9
        assert sorted(r.request_id for r in db.log_records(kinds=["RequestPrepared"])) == [
            f"r{i}" for i in range(9)
        ]
        assert next(db.otlp_spans()).name == "bls router->detector"
        with db.bulk():
            again = db.write([*prepared[:9], *some_events()[3:]], source="triton.log")
        assert (again.inserted, again.duplicates) == (0, 14)


def test_bulk_finds_what_its_own_blocks_hold(tmp_path: Path) -> None:
    """Inside ``bulk`` the store learns the times its blocks span once and widens them with
    each block it writes: spans written again after their block was written (by this same
    ``with``), and spans later than every block, are told apart without a query each."""
    from observability.store.schema import STREAMS

    size = STREAMS["traces"].block_records
    spans = [_span(i, 1_000 + i) for i in range(size)]
    later = [_span(size + i, 10 * size + i) for i in range(3)]
    with Store(tmp_path / "s.db") as db:
        db.write([_span(0, 0)], "earlier")  # a block from before the bulk, earlier than all
        with db.bulk():
            first = db.write(spans, "t")  # a block's worth: written now, inside the bulk
            assert db.count("trace_spans") == size + 1
            again = db.write(spans[5:10], "t")
            new = db.write(later, "t")
        assert (first.inserted, again.inserted, again.duplicates) == (size, 0, 5)
        assert (new.inserted, new.duplicates) == (3, 0)
        assert db.count("trace_spans") == size + 4


def test_a_record_twice_in_one_batch_is_stored_once(tmp_path: Path) -> None:
    """A batch of one stream is keyed by list passes; a key twice in it takes the record by
    record path, which keeps the first."""
    prepared = [ev.RequestPrepared(header(i), f"r{i}", "router", 1, 1, 0) for i in range(3)]
    twice = [prepared[0], prepared[1], replace(prepared[0], request_id="again")]
    with Store(tmp_path / "s.db") as db:
        result = db.write(twice, source="triton.log")
        assert (result.inserted, result.duplicates) == (2, 1)
        got = sorted(r.request_id for r in db.log_records(kinds=["RequestPrepared"]))
        assert got == ["r0", "r1"]


def test_a_full_disk_in_bulk_keeps_what_it_holds(tmp_path: Path) -> None:
    """A block that meets a full disk inside ``bulk`` is a typed error and its records stay
    held: written once room returns, none lost, none twice."""
    import observability.store.schema as schema

    big = [ev.StubOutput(H.at_ns + i, 10_000 + i, os.urandom(2000).hex()) for i in range(40)]
    with Store(tmp_path / "s.db") as db:
        pages = db._db.execute("PRAGMA page_count").fetchone()[0]
        db._db.execute(f"PRAGMA max_page_count={pages + 2}")
        with db.bulk():
            first = db.write(big[:20], source="f")
            assert first.inserted == 20
            stream = schema.STREAMS["log"]
            try:
                object.__setattr__(stream, "block_records", 16)  # a block's worth now
                with pytest.raises(StoreFullError):
                    db.write(big[20:], source="f")
            finally:
                object.__setattr__(stream, "block_records", 8192)
            db._db.execute("PRAGMA max_page_count=1073741823")
        assert db.count("log_records") == 40
        assert sorted(r.offset for r in db.log_records()) == [10_000 + i for i in range(40)]


def _blocks(db: Store) -> list[tuple[object, ...]]:
    return db._db.execute(
        "SELECT stream, source, min_at_ns, max_at_ns, records, data FROM blocks ORDER BY id"
    ).fetchall()


def _bulk_writes(
    path: Path, batches: list[list[object]], unkeyed: bool, held: list[bool] | None = None
) -> tuple[list[tuple[int, int]], list[tuple[object, ...]]]:
    """Each batch's (inserted, duplicates) and the blocks; ``held`` gets, per batch, whether
    the log's records were then held unkeyed."""
    import observability.store.sqlite as sqlite_store

    saved = sqlite_store._c_log_run
    if not unkeyed:
        sqlite_store._c_log_run = None  # every batch keyed, record by record
    try:
        with Store(path) as db:
            results = []
            with db.bulk():
                for b in batches:
                    results.append(db.write(b, source="a.log"))
                    if held is not None:
                        held.append(db._runs.get("a.log") is not None)
            return [(r.inserted, r.duplicates) for r in results], _blocks(db)
    finally:
        sqlite_store._c_log_run = saved


@pytest.mark.parametrize("block_records", [4, 8192])
def test_a_log_read_in_order_is_held_unkeyed_and_stored_as_the_keyed_path_stores_it(
    tmp_path: Path, block_records: int
) -> None:
    """In ``bulk``, a new log's batches whose offsets go on are held without a key a record
    (``Store._run_of``); a batch that goes back (a replay) hands what is held to the keyed
    path, which then finds its duplicates. Blocks, counts and records are the same either
    way, across block boundaries too; a batch holding one key twice is keyed."""
    import observability.store.schema as schema

    prepared = [ev.RequestPrepared(header(i), f"r{i}", "router", 1, 1, 0) for i in range(12)]
    other = ev.RequestStateChange(header(5), "r5", "PENDING", "EXECUTING")  # a 2nd kind at 5
    batches = [
        prepared[:3],
        [*prepared[3:6], other],
        prepared[6:8],
        prepared[4:10],  # back to 4: from here on keyed
        prepared[10:],
        [prepared[11], prepared[11]],
    ]
    stream = schema.STREAMS["log"]
    try:
        object.__setattr__(stream, "block_records", block_records)
        held: list[bool] = []
        unkeyed = _bulk_writes(tmp_path / "u.db", batches, unkeyed=True, held=held)
        keyed = _bulk_writes(tmp_path / "k.db", batches, unkeyed=False)
    finally:
        object.__setattr__(stream, "block_records", 8192)
    assert held == [True, True, True, False, False, False]
    assert unkeyed == keyed
    counts, blocks = unkeyed
    assert counts == [(3, 0), (4, 0), (2, 0), (2, 4), (2, 0), (0, 2)]
    assert sum(b[4] for b in blocks) == 13  # type: ignore[misc]
    with Store(tmp_path / "u.db") as db:
        got = sorted(r.header.offset for r in db.log_records(kinds=["RequestPrepared"]))
        assert got == list(range(12))
        again = _bulk_writes(tmp_path / "u.db", batches[:2], unkeyed=True)[0]
        assert again == [(0, 3), (0, 4)], "a store that holds the log already is keyed"


def test_a_live_batch_of_a_block_or_more_is_all_blocks_of_even_size(tmp_path: Path) -> None:
    """Outside a bulk write, a batch of at least a block's worth of one source is written as
    blocks, all of it, none under half a block; a smaller one is staged."""
    import observability.store.schema as schema

    prepared = [ev.RequestPrepared(header(i), f"r{i}", "router", 1, 1, 0) for i in range(27)]
    stream = schema.STREAMS["log"]
    try:
        object.__setattr__(stream, "block_records", 8)
        with Store(tmp_path / "s.db") as db:
            assert db.write(prepared[:20], source="a.log").inserted == 20
            assert [b[4] for b in _blocks(db)] == [7, 7, 6]
            assert db.write(prepared[20:27], source="a.log").inserted == 7
            staged = db._db.execute("SELECT count(*) FROM staged").fetchone()[0]
            assert staged == 7 and len(_blocks(db)) == 3
            again = db.write(prepared[10:27], source="a.log")
            assert (again.inserted, again.duplicates) == (0, 17)
    finally:
        object.__setattr__(stream, "block_records", 8192)


def _blocks(db: Store) -> list[tuple[object, ...]]:
    sql = "SELECT stream, source, min_at_ns, max_at_ns, records, data FROM blocks ORDER BY id"
    return [tuple(row) for row in db._db.execute(sql)]


def test_a_compaction_takes_what_this_writer_staged_without_decoding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live path stages small batches as JSON rows; the writer that staged them keeps
    the records, and its compaction packs those instead of decoding the rows, when the rows
    are exactly what it staged. Rows staged by another writer (a restarted collector) or a
    batch of which some rows were ignored are decoded. Every way, the same blocks."""
    import observability.store.sqlite as sqlite_store

    decoded: list[str] = []
    real = sqlite_store.decode

    def counted(kind: str, body: str) -> object:
        decoded.append(kind)
        return real(kind, body)

    monkeypatch.setattr(sqlite_store, "decode", counted)
    spans = [_span(i, 1_000 + i, f"trace.json.{i % 3}") for i in range(60)]
    stores = {}
    for way in ("held", "decoded", "restarted", "replayed"):
        path = tmp_path / f"{way}.db"
        if way == "restarted":  # rows a writer before this one staged
            with Store(path) as earlier:
                earlier.write(spans[:7], "t")
        with Store(path) as db:
            for i in range(7 if way == "restarted" else 0, 60, 7):
                if way == "replayed" and i == 28:  # a batch part of which is staged already
                    db.write(spans[21:35], "t")
                    continue
                db.write(spans[i : i + 7], "t")
            if way == "decoded":
                db._staged_held.clear()
            decoded.clear()
            db.compact()
            stores[way] = (_blocks(db), len(decoded))
            assert sorted(s.timestamp("REQUEST_START") for s in db.trace_spans()) == [
                1_000 + i for i in range(60)
            ]
    assert stores["held"][1] == 0, "what this writer staged is packed as it was kept"
    assert stores["decoded"][1] == stores["restarted"][1] == stores["replayed"][1] == 60
    assert stores["held"][0] == stores["decoded"][0] == stores["restarted"][0]
    assert stores["held"][0] == stores["replayed"][0]


def test_a_compaction_decodes_rows_it_did_not_stage_even_as_many(tmp_path: Path) -> None:
    """Staged rows deleted (retention) and as many staged by another writer: the writer's
    kept records are no longer the rows, whatever their number; the rows are decoded."""
    spans = [_span(i, 1_000 + i) for i in range(14)]
    with Store(tmp_path / "s.db") as db, Store(tmp_path / "s.db") as other:
        db.write(spans[:7], "t")
        db._db.execute("DELETE FROM staged")  # as retention deletes what is too old
        db._db.commit()
        db._staged = None  # counted again, as after a retention pass
        other.write(spans[7:], "t")
        db.compact()
        starts = sorted(s.timestamp("REQUEST_START") for s in db.trace_spans())
    assert starts == [1_000 + i for i in range(7, 14)]
