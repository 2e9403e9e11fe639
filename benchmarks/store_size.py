"""Bytes the store keeps per client request, against the signals it came from (issue 13).

On the checked-in healthy recording (the demo pipeline on a real Triton 2.51 at a steady load,
every signal: verbose log, /metrics and stats snapshots, trace files, the library's OTLP
spans), ingested by the product's own ``ingest`` into a fresh store. Client requests are the
``prepared:`` lines of the models clients call (requests whose id has no ``.``: not BLS
children or ensemble steps). Reports, per client request: the store's bytes (file size after
a checkpoint), the bundle's raw bytes and its gzip archive's bytes, with the ratios to each.
Run: ``python -m benchmarks.store_size``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from observability import events as ev
from observability.bundle import extract_archive
from observability.bundle.ingest import ingest
from observability.store import Store

__all__ = ["main"]

RECORDING = Path(__file__).resolve().parent.parent / "tests/fixtures/recordings/healthy"


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    archive = RECORDING / "bundle.tar.gz"
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "bundle"
        bundle.mkdir()
        extract_archive(archive, bundle)
        raw = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
        db = Path(tmp) / "store.db"
        with Store(db) as store:
            ingest(bundle, store)
            clients = sum(
                1
                for r in store.log_records(kinds=["RequestPrepared"])
                if isinstance(r, ev.RequestPrepared) and r.request_id and "." not in r.request_id
            )
        for suffix in ("-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        stored = db.stat().st_size
    per = stored / max(clients, 1)
    rows: list[dict[str, object]] = [
        {
            "bench": "store_bytes_per_client_request",
            "value": round(per),
            "unit": "B",
            "baseline": round(raw / max(clients, 1)),
            "ratio": round(stored / raw, 2),
            "note": f"baseline: the raw bundle; {clients} client requests, {stored:,} B stored",
        },
        {
            "bench": "store_bytes_vs_gzip",
            "value": round(per),
            "unit": "B",
            "baseline": round(archive.stat().st_size / max(clients, 1)),
            "ratio": round(stored / archive.stat().st_size, 1),
            "note": "baseline: the same signals as the bundle's .tar.gz (issue 13 asks <= 1)",
        },
    ]
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    main()
