"""A bundle's log ingested as columns (the scan's column sink, ``collectors/logs/_hotpath.c``,
through ``Store.write_block``) stores exactly what ingesting its records stores: every block's
bytes, the setup table and the report, on every recorded bundle (real Triton 2.51 recordings:
the demo's four and the foreign corpus, which the quick suite samples). Then the cases the
columns hand back to the records' path: a store that holds the log already, a time past 64
bits, a read that fails halfway.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

import observability.bundle.ingest as ingest_module
from benchmarks.log_parse import synthesise
from collectors.logs.parser import column_sink, parse_lines
from observability.bundle import FORMAT, BundleMeta
from observability.bundle.ingest import IngestReport, ingest
from observability.store import Store
from observability.store.blocks import _inflate
from tests.bundles import BUNDLES as _BUNDLES

pytestmark = pytest.mark.skipif(column_sink() is None, reason="the compiled scan is not built")


def _rows(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], int]:
    con = sqlite3.connect(db)
    try:
        blocks = [
            (stream, src, lo, hi, n, _inflate(data))
            for stream, src, lo, hi, n, data in con.execute(
                "SELECT stream, source, min_at_ns, max_at_ns, records, data FROM blocks ORDER BY id"
            )
        ]
        setup = con.execute("SELECT * FROM setup ORDER BY source, kind, name").fetchall()
        staged = con.execute("SELECT count(*) FROM staged").fetchone()[0]
    finally:
        con.close()
    return blocks, setup, staged


class _Held:
    """Counts the column blocks the store held as they are (not sent down the records' path)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.blocks = 0
        real = Store._run_of_block

        def counted(store: Store, block: Any, source: str) -> bool:
            held = real(store, block, source)
            self.blocks += held
            return held

        monkeypatch.setattr(Store, "_run_of_block", counted)


def _ingest(bundle: Path, db: Path, columns: bool, monkeypatch: pytest.MonkeyPatch) -> IngestReport:
    with monkeypatch.context() as m:
        if not columns:
            m.setattr(ingest_module, "column_sink", lambda: None)
        with Store(db) as store:
            return ingest(bundle, store)


def _same_both_ways(bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Ingest ``bundle`` as columns and as records; assert the stores and reports are the
    same; return how many column blocks were held as they are."""
    held = _Held(monkeypatch)
    ours = _ingest(bundle, tmp_path / "columns.db", True, monkeypatch)
    theirs = _ingest(bundle, tmp_path / "records.db", False, monkeypatch)
    assert ours == theirs
    our_rows, their_rows = _rows(tmp_path / "columns.db"), _rows(tmp_path / "records.db")
    for i, (a, b) in enumerate(zip(our_rows[0], their_rows[0], strict=True)):
        assert a == b, f"block {i}: {a[:5]} from columns, {b[:5]} from records"
    assert our_rows == their_rows
    return held.blocks


@pytest.mark.parametrize("name", sorted(_BUNDLES))
def test_every_recorded_bundle_stores_the_same_blocks_from_columns(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _same_both_ways(_BUNDLES[name], tmp_path, monkeypatch)
    logged = sum(1 for row in _rows(tmp_path / "columns.db")[0] if row[0] == "log")
    assert held == logged, f"{logged} log blocks, {held} of them from columns"


def _bundle(root: Path, log: bytes) -> Path:
    root.mkdir()
    meta = BundleMeta(FORMAT, "cols", "2.51", "2026-11-22T03:00:00+00:00", "", {}, {})
    (root / "meta.json").write_text(meta.to_json())
    (root / "triton.log").write_bytes(log)
    return root


def test_a_log_of_many_blocks_stores_the_same_blocks_from_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several whole blocks and a short last one (the benchmark's lines: every kind the scan
    writes, with the lines it hands to Python between)."""
    bundle = _bundle(tmp_path / "b", b"".join(synthesise(30_000)))
    assert _same_both_ways(bundle, tmp_path, monkeypatch) >= 3


def test_a_bundle_ingested_again_stores_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store holds the log already: its blocks go down the keyed path, all duplicates."""
    bundle, db = _BUNDLES["tests/fixtures/recordings/faulty"], tmp_path / "s.db"
    first = _ingest(bundle, db, True, monkeypatch)
    before = _rows(db)
    held = _Held(monkeypatch)
    again = _ingest(bundle, db, True, monkeypatch)
    assert held.blocks == 0
    assert sum(again.inserted.values()) == 0
    assert again.duplicates == sum(first.inserted.values())
    assert _rows(db) == before


def test_a_time_past_64_bits_takes_the_records_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block holding a time SQLite cannot bind is stored record by record, the one record
    refused and said so, exactly as a list of records is."""
    lines = synthesise(9_000)
    lines.insert(5_000, b'3000-01-01T00:00:00Z E 1 x.cc:1] "a log line from the year 3000"\n')
    bundle = _bundle(tmp_path / "b", b"".join(lines))
    _same_both_ways(bundle, tmp_path, monkeypatch)
    report = _ingest(bundle, tmp_path / "again.db", True, monkeypatch)
    assert any("skipped 1 record(s)" in note for note in report.notes), report.notes


class _FailingRead(io.BufferedReader):
    """A file whose reads fail past ``fail_at`` bytes (a disk error halfway)."""

    def __init__(self, raw: BinaryIO, fail_at: int) -> None:
        super().__init__(raw)  # type: ignore[arg-type]
        self.fail_at = fail_at

    def read(self, size: int | None = -1, /) -> bytes:
        if self.tell() >= self.fail_at:
            raise OSError(5, "Input/output error")
        return super().read(size)


def test_a_read_that_fails_keeps_every_record_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records parsed before the failure are stored, the short block of them too (a list
    of records held for a whole block lost them)."""
    data = b"".join(synthesise(40_000))
    bundle = _bundle(tmp_path / "b", data)
    real_open = ingest_module.open_part

    def failing(path: Path) -> BinaryIO:
        fh = real_open(path)
        return _FailingRead(fh.detach() if isinstance(fh, io.BufferedReader) else fh, 3 << 20)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest_module, "open_part", failing)
    report = _ingest(bundle, tmp_path / "s.db", True, monkeypatch)
    (note,) = [n for n in report.notes if "reading stopped" in n]
    stopped = int(note.split("at byte ")[1].split(":")[0])
    assert 0 < stopped < len(data)
    expected = sum(1 for _ in parse_lines(_lines(data[:stopped]), year=2026))
    assert report.inserted["log"] == expected


def _lines(data: bytes) -> Iterator[bytes]:
    return iter(data.splitlines(keepends=True))
