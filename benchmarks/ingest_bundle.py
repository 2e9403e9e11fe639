"""Ingest of a whole bundle, every signal at once, against its log alone (issue 13).

``ingest_log`` times a log with nothing beside it. A real server's bundle also holds /metrics
and stats snapshots, Triton's trace files and the BLS library's OTLP spans, ingested by the
same process on the same core. This measures that: the checked-in healthy recording (the demo
pipeline on a real Triton 2.51 at a steady load, trace rate 1 and the library's default
sampling, both every request), unpacked, ingested whole into a fresh store; the baseline is
the same bundle with only its log, in the same process, alternated ``--rounds`` times (the
best of each is kept: the machine is shared). Reports the log lines per second of the whole
ingest, the log's alone, their ratio, and each part's CPU seconds and spans per second.
Run: ``python -m benchmarks.ingest_bundle [--rounds N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from observability.bundle import extract_archive
from observability.bundle.ingest import ingest
from observability.store import Store

__all__ = ["main"]

RECORDING = Path(__file__).resolve().parent.parent / "tests/fixtures/recordings/healthy"


class _Parts:
    """CPU seconds of each part, split at each batch ``ingest`` reports (``on_batch``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.records: Counter[str] = Counter()
        self._last = time.process_time()

    def __call__(self, part: str, n: int) -> None:
        now = time.process_time()
        self.seconds[part] = self.seconds.get(part, 0.0) + now - self._last
        self.records[part] += n
        self._last = now


def _timed(bundle: Path, db: Path) -> tuple[float, _Parts]:
    db.unlink(missing_ok=True)
    with Store(db) as store:
        gc.collect()
        parts = _Parts()
        t0 = time.perf_counter()
        ingest(bundle, store, on_batch=parts)
        return time.perf_counter() - t0, parts


def _log_lines(bundle: Path) -> int:
    with (bundle / "triton.log").open("rb") as fh:
        return sum(1 for _ in fh)


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "whole"
        whole.mkdir()
        extract_archive(RECORDING / "bundle.tar.gz", whole)
        alone = Path(tmp) / "alone"
        alone.mkdir()
        for name in ("meta.json", "triton.log"):
            shutil.copy(whole / name, alone / name)
        n_lines = _log_lines(whole)
        best_whole = best_alone = float("inf")
        parts = _Parts()
        for _ in range(max(1, args.rounds)):
            alone_s, _p = _timed(alone, Path(tmp) / "alone.db")
            whole_s, round_parts = _timed(whole, Path(tmp) / "whole.db")
            best_alone = min(best_alone, alone_s)
            if whole_s < best_whole:
                best_whole, parts = whole_s, round_parts
    spans = parts.records["traces"] + parts.records["otlp"]
    span_s = parts.seconds.get("traces", 0.0) + parts.seconds.get("otlp", 0.0)
    result = {
        "bench": "ingest_bundle_lines",
        "value": round(n_lines / best_whole),
        "unit": "log lines/s, every signal",
        "baseline": round(n_lines / best_alone),
        "ratio": round(best_alone / best_whole, 3),
        "log_lines": n_lines,
        "spans": spans,
        "spans_per_s": round(spans / span_s) if span_s else None,
        "part_cpu_s": {k: round(v, 3) for k, v in sorted(parts.seconds.items())},
    }
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
