"""Ingest of a synthetic 1,000,000-line verbose log into a fresh store: lines/s and size.

It measures what ``triton-obs ingest`` and ``analyze`` run: the log is written as a bundle's
``triton.log`` and ingested by :func:`observability.bundle.ingest.ingest` (bounded reads, the
parser's scan writing each record into its kind's columns, a block cut off and compressed as
it fills, held without keys as a run of the log). The baseline
is parsing alone in the same process, so the ratio is the share of the parse rate that survives
storing; its complement bounds what any faster parser could gain end to end.
Run: ``python -m benchmarks.ingest_log [--lines N]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

from benchmarks.log_parse import against_parsing, parse_alone, synthesise
from observability.bundle import FORMAT, BundleMeta
from observability.bundle.ingest import ingest
from observability.store import Store

__all__ = ["main"]


def _bundle(root: Path, lines: list[bytes]) -> Path:
    root.mkdir()
    meta = BundleMeta(FORMAT, "bench", "2.51", "2026-11-22T03:00:00+00:00", "", {}, {})
    (root / "meta.json").write_text(meta.to_json())
    (root / "triton.log").write_bytes(b"".join(lines))
    return root


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    lines = synthesise(args.lines)
    n_records, parse_s = parse_alone(lines)
    n_lines = len(lines)
    with tempfile.TemporaryDirectory() as tmp:
        bundle = _bundle(Path(tmp) / "bundle", lines)
        # ``triton-obs ingest`` holds no list of the log's lines: neither may the timing, whose
        # collector passes walked this one's million items (a third of the time at 1M lines).
        del lines
        path = Path(tmp) / "bench.db"
        with Store(path) as store:
            gc.collect()
            t0 = time.perf_counter()
            report = ingest(bundle, store)
            ingest_s = time.perf_counter() - t0
            size = path.stat().st_size + sum(
                p.stat().st_size for p in path.parent.glob("bench.db-*")
            )
    if report.inserted.get("log", 0) != n_records:
        raise SystemExit(f"ingest stored {report.inserted} records, the parser gave {n_records}")
    return against_parsing(
        "ingest_log_lines", "lines/s", n_lines, ingest_s, parse_s,
        records=n_records, store_bytes=size, bytes_per_line=round(size / n_lines, 1),
    )  # fmt: skip


if __name__ == "__main__":
    main()
