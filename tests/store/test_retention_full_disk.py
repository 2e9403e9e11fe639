"""Retention on a really full disk (a tmpfs filled to the last byte; needs root to mount).

The 60-minute soak found it: the store reached its size cap while the disk was full, the
retention DELETE needed room in the WAL, SQLite's error escaped and killed the collector
thread. Retention now raises the store's typed error, and the runner outlives any step.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from observability import events as ev
from observability.collect import CollectConfig, CollectRunner
from observability.store import Store, StoreFullError
from tests.soak.harness import DiskFiller

HEADER = ev.LogRecord(1_795_000_000_000_000_000, ev.LogLevel.INFO, "x.cc", 1, 0)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[DiskFiller]:
    filler = DiskFiller(tmp_path / "disk", size_mb=8)
    if not filler.mount():
        pytest.skip(f"cannot mount a tmpfs here: {filler.why_not}")
    try:
        yield filler
    finally:
        filler.unmount()


def _fill_store(path: Path) -> None:
    with Store(path) as store:
        for batch in range(4):
            store.write(
                [ev.StubOutput(HEADER.at_ns + i, batch * 1000 + i, "x" * 500) for i in range(1000)],
                source="f",
            )


def test_retention_on_a_full_disk_is_a_typed_error(disk: DiskFiller) -> None:
    path = disk.mountpoint / "store.db"
    _fill_store(path)
    with Store(path) as store:  # open, as the collector's is, when the disk fills
        disk.fill()
        with pytest.raises(StoreFullError, match="full"):
            store.apply_retention(max_bytes=10_000)
        disk.release()
        assert store.apply_retention(max_bytes=10_000) > 0


def test_the_collector_outlives_retention_on_a_full_disk(disk: DiskFiller) -> None:
    path = disk.mountpoint / "store.db"
    _fill_store(path)
    runner = CollectRunner(
        CollectConfig(store=path, retention_max_age_s=None, retention_max_bytes=10_000)
    )
    disk.fill()
    runner._housekeeping()  # what the loop runs every 30 s: the typed error is caught
    assert "full" in runner.state.last_error
    disk.release()
    started = time.monotonic()
    runner.run(duration_s=0.5)  # its first cycle applies retention, now with room
    assert time.monotonic() - started >= 0.5
    with Store(path, readonly=True) as store:
        assert store.count("log_records") < 4000


def test_a_large_transaction_leaves_no_large_wal_behind(tmp_path: Path) -> None:
    """A WAL file that once grew (here an 8,000-row batch of 4 KiB prints staged at once)
    is cut back to ``journal_size_limit`` when a checkpoint has emptied it: its dead pages would
    otherwise hold disk space and absorb minutes of writes, so that a full disk goes unseen."""
    path = tmp_path / "store.db"
    big = [ev.StubOutput(HEADER.at_ns + i, i, "x" * 4096) for i in range(8000)]
    with Store(path) as store:
        store.write(big, source="f")  # under a block's worth: staged as JSON rows
        grown = (tmp_path / "store.db-wal").stat().st_size
        store.write([ev.StubOutput(HEADER.at_ns + 9000, 9000, "y")], source="f")
        kept = (tmp_path / "store.db-wal").stat().st_size
    assert grown > 16 << 20, grown
    assert kept <= 4 << 20, kept
