"""Stores written by earlier code open, are migrated and keep every record: schema 4 (a row per
record), schema 6 (blocks before their text columns were dictionary-coded) and schema 7
(xz blocks, before zstd);
``tests/fixtures/stores/README.md`` says how each was written."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import tarfile
from collections import defaultdict
from pathlib import Path

import pytest

from collectors.otlp.decode import spans_from_otlp_json
from observability import events as ev
from observability.analyze import _open, analyze_bundle, parse_bundle
from observability.bundle.ingest import ingest
from observability.store import Store, StoreError
from observability.store.codec import decode, encode
from observability.store.schema import SCHEMA_VERSION

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OLD = FIXTURES / "stores" / "schema4-ocr_cycle_deadlock.db.gz"
BUNDLE = FIXTURES / "foreign" / "ocr_cycle_deadlock" / "bundle.tar.gz"


def _unpacked(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    with gzip.open(OLD) as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _old_records(path: Path) -> dict[str, list[str]]:
    """Every record of the schema 4 tables, read with sqlite3 itself, as its JSON."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 4
        out: dict[str, list[str]] = {
            "log": [
                encode(decode(k, b)) for k, b in db.execute("SELECT kind, body FROM log_records")
            ],
            "scrapes": [b for (b,) in db.execute("SELECT body FROM scrapes")],
            "stats": [b for (b,) in db.execute("SELECT body FROM model_stats")],
            "traces": [b for (b,) in db.execute("SELECT body FROM trace_spans")],
            "otlp": [b for (b,) in db.execute("SELECT body FROM otlp_spans")],
        }
        scrapes: dict[tuple[str, int], list[str]] = defaultdict(list)
        for target, at_ns, body in db.execute("SELECT target, at_ns, body FROM metric_samples"):
            scrapes[(target, at_ns)].append(body)
        out["metrics"] = [f"{t}|{a}|{sorted(b)}" for (t, a), b in scrapes.items()]
    finally:
        db.close()
    return {k: sorted(v) for k, v in out.items()}


def _new_records(store: Store) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for stream, _, record in store.records():
        if isinstance(record, ev.MetricsScrape):
            bodies = sorted(encode(s) for s in record.samples)
            out[stream].append(f"{record.target}|{record.at_ns}|{bodies}")
        else:
            out[stream].append(encode(record))
    return {k: sorted(v) for k, v in out.items()}


def test_a_schema_4_store_is_migrated_and_keeps_every_record(tmp_path: Path) -> None:
    path = _unpacked(tmp_path)
    before = _old_records(path)
    assert all(before[s] for s in ("log", "metrics", "scrapes", "stats", "traces", "otlp"))
    size_before = path.stat().st_size
    with Store(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        after = _new_records(store)
        assert store.count("log_records") == len(before["log"])
    assert after == before
    db = sqlite3.connect(path)
    try:
        (staged,) = db.execute("SELECT count(*) FROM staged").fetchone()
        (blocks,) = db.execute("SELECT count(*) FROM blocks").fetchone()
    finally:
        db.close()
    assert staged == 0 and blocks > 0, "the old rows became blocks when the store opened"
    assert path.stat().st_size < size_before / 4, (path.stat().st_size, size_before)


NEWER_KINDS = (ev.ModelConfig,)
"""Records today's parser reads from lines the store's writer skipped: a replay adds these
and nothing else."""


def test_the_migrated_store_keeps_its_keys_a_replay_stores_nothing(tmp_path: Path) -> None:
    path = _unpacked(tmp_path)
    with Store(path) as store:
        report = ingest(BUNDLE, store)
    with _open(BUNDLE) as bundle:
        newer = sum(isinstance(e, NEWER_KINDS) for e in parse_bundle(bundle).events)
    assert newer > 0, "the recording's models logged their configs"
    assert report.inserted.get("log", 0) == newer, report.inserted
    assert sum(report.inserted.values()) == newer, report.inserted
    assert report.duplicates > 0


def test_a_migrated_store_reads_back_through_the_detectors(tmp_path: Path) -> None:
    """The findings of the bundle it was written from, read out of the migrated store (the
    ingest on the way stores nothing: test above)."""
    direct = analyze_bundle(BUNDLE)
    stored = analyze_bundle(BUNDLE, store_path=_unpacked(tmp_path))
    want = {(f.kind, f.model) for f in direct.findings}
    assert want, "the recording's fault is found at all"
    assert {(f.kind, f.model) for f in stored.findings} == want


OLD_BLOCKS = {
    6: FIXTURES / "stores" / "schema6-ocr_cycle_deadlock.db.gz",
    7: FIXTURES / "stores" / "schema7-ocr_cycle_deadlock.db.gz",
}
HEALTHY = FIXTURES / "recordings" / "healthy" / "bundle.tar.gz"


def _otlp_files(n: int) -> list[list[ev.OtlpSpan]]:
    """The spans of the first ``n`` OTLP files of the demo's healthy recording, as the
    schema 6 store was given them (tests/fixtures/stores/README.md)."""
    with tarfile.open(HEALTHY) as tar:
        names = sorted(
            m.name for m in tar.getmembers() if "/otlp/" in m.name and m.name.endswith(".json")
        )[:n]
        return [spans_from_otlp_json(json.loads(tar.extractfile(name).read())) for name in names]  # type: ignore[union-attr]


def test_block_stores_are_migrated_and_read_as_todays_store_of_the_same_input(
    tmp_path: Path,
) -> None:
    """Schema 7 dictionary-codes text columns, schema 8 writes zstd blocks: a store written
    by schema 6's or 7's code opens, is migrated (its blocks stay as they were) and holds
    exactly what today's code stores from the same input; a replay into it stores nothing.
    One test for both: today's store of the input is the costly part, made once."""
    spans = _otlp_files(12)
    fresh = tmp_path / "fresh.db"
    with Store(fresh) as store:
        ingest(BUNDLE, store)
        for batch in spans:
            store.write(batch)
        want = _new_records(store)
    for version, fixture in OLD_BLOCKS.items():
        path = tmp_path / f"old{version}.db"
        with gzip.open(fixture) as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA user_version").fetchone()[0] == version
        db.close()
        with Store(path) as store:
            assert store.schema_version() == SCHEMA_VERSION == 8
            assert _new_records(store) == want, f"schema {version}"
            report = ingest(BUNDLE, store)
            assert sum(report.inserted.values()) == 0 and report.duplicates > 0, report
            assert sum(store.write(batch).inserted for batch in spans) == 0
            assert _new_records(store) == want, f"schema {version}, after the replay"


@pytest.mark.parametrize("version", [99])
def test_a_newer_store_is_refused_untouched(tmp_path: Path, version: int) -> None:
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={version}")
    db.close()
    with pytest.raises(StoreError, match="newer than this program"):
        Store(path)
    db = sqlite3.connect(path)
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == []
    db.close()
