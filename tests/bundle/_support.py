"""What the bundle tests share: a real bundle made of recorded fixtures, hand-made tar
archives (members a tar tool would never write: traversal, links, devices), and a store
that already holds data, to prove a bad bundle leaves it alone."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from observability.bundle.ingest import ingest
from observability.store import Store
from observability.store.blocks import decode_block

__all__ = [
    "FIXTURES",
    "Member",
    "fixture_bundle",
    "make_tar",
    "prefilled_store",
    "store_rows",
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_T0 = datetime(2026, 11, 22, 3, 26, 30, tzinfo=timezone.utc)


def _ms(seconds: float) -> int:
    return int((_T0.timestamp() + seconds) * 1000)


def fixture_bundle(root: Path, bundle_id: str = "fixture-bundle") -> Path:
    """A bundle of every part, all recorded from a real Triton 2.51: a log in which a python
    stub dies (findings), /metrics pages, stats, trace files and OTLP export requests."""
    (root / "metrics").mkdir(parents=True)
    (root / "stats").mkdir()
    (root / "otlp").mkdir()
    clock = json.loads((FIXTURES / "traces" / "demo_2.51" / "run.json").read_text())["clock"]
    meta = {
        "format": 1,
        "bundle_id": bundle_id,
        "triton_version": "2.51.0",
        "started_at": _T0.isoformat(),
        "ended_at": datetime.fromtimestamp(_T0.timestamp() + 13, timezone.utc).isoformat(),
        "sources": {"log_start_offset": 0, "interval_s": 1.0},
        "clock": {**clock, "log_utc_offset_s": 0},
    }
    (root / "meta.json").write_text(json.dumps(meta))
    shutil.copyfile(FIXTURES / "logs" / "glog_2.51_stub_death.log", root / "triton.log")
    for i, name in enumerate(["trace.json.0", "trace.json.1"]):
        shutil.copyfile(FIXTURES / "traces" / "demo_2.51" / name, root / f"trace.json.{i}")
    proms = sorted((FIXTURES / "metrics").glob("*.prom"))
    for i, path in enumerate(proms):
        shutil.copyfile(path, root / "metrics" / f"{_ms(2 + i)}.prom")
    for i, name in enumerate(["triton_2.51_stats_idle.json", "triton_2.51_stats_after.json"]):
        shutil.copyfile(FIXTURES / "stats" / name, root / "stats" / f"{_ms(2 + i)}.json")
    shutil.copyfile(
        FIXTURES / "otlp" / "triton_2.51_otel" / "post_01.json", root / "otlp" / f"{_ms(5)}.json"
    )
    return root


@dataclass(frozen=True)
class Member:
    """One tar member as written byte by byte: any name, any type, any size."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    size: int | None = None
    """The header's size when it must differ from ``len(data)`` (a forged header)."""


def make_tar(path: Path, members: Iterable[Member], mode: str = "w:gz") -> Path:
    """Write ``members`` with ``tarfile`` directly, so nothing refuses a hostile name."""
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as tar:
        for m in members:
            info = tarfile.TarInfo(m.name)
            info.type = m.type
            info.linkname = m.linkname
            info.mode = 0o644
            if m.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE):
                info.size = len(m.data)
                tar.addfile(info, io.BytesIO(m.data))
            else:
                tar.addfile(info)
    return path


def store_rows(path: Path) -> dict[str, set[tuple[object, ...]]]:
    """Every row of every table, read with sqlite3 itself (not the Store under test); a
    block as what it holds (its records decoded), not its row id or when it was written."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {t: set(db.execute(f"SELECT * FROM {t}")) for t in tables if t != "blocks"}
        rows["blocks"] = {
            (stream, source, lo, hi, n, repr(decode_block(data)))
            for stream, source, lo, hi, n, data in db.execute(
                "SELECT stream, source, min_at_ns, max_at_ns, records, data FROM blocks"
            )
        }
        return rows
    finally:
        db.close()


def prefilled_store(folder: Path) -> Path:
    """A store holding the fixture bundle: what a later, broken ingest must leave intact."""
    bundle = fixture_bundle(folder / "base-bundle", bundle_id="base-bundle")
    store_path = folder / "base.db"
    with Store(store_path) as store:
        report = ingest(bundle, store)
    assert report.inserted.get("log", 0) > 0 and report.inserted.get("metrics", 0) > 0
    return store_path
