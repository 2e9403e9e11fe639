"""Spans as ``collect`` and ``watch`` store them: spans/s through the live path (issue 13).

A bundle's ingest writes whole blocks (``Store.bulk``); the live collector cannot: each
collection cycle's batch is acknowledged when it is stored, so a batch below a block's worth
is staged as rows and compacted into blocks later. This runs that path on the checked-in
healthy recording's spans (the demo pipeline on a real Triton 2.51: 9,940 trace-file spans,
9,008 OTLP spans from the BLS library): each trace file parsed and each OTLP request decoded
as the collectors do, then written with ``Store.write`` outside a bulk write, ``--batch``
spans a cycle as the runner writes them, then the store's compaction. The baseline is the
parsing and decoding alone, in the same process. Times are CPU seconds, best of
``--rounds``. Run: ``python -m benchmarks.collect_spans [--batch N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from collectors.otlp import spans_from_otlp_json
from collectors.traces.parser import parse_trace_file_lenient
from observability.bundle import open_bundle
from observability.store import Store

__all__ = ["main"]

RECORDING = Path(__file__).resolve().parent.parent / "tests/fixtures/recordings/healthy"


def _texts() -> tuple[list[tuple[str, str]], list[str]]:
    """The recording's trace files (name, text) and OTLP request bodies, in the order the
    bundle reader lists them (``open_bundle``, which ``ingest`` reads them by)."""
    with open_bundle(RECORDING / "bundle.tar.gz") as bundle:
        traces = [(p.name, p.read_text("utf-8", errors="replace")) for p in bundle.traces]
        otlp = [p.read_text("utf-8", errors="replace") for _unix_ms, p in bundle.otlp]
    return traces, otlp


def _decoded(traces: list[tuple[str, str]], otlp: list[str]) -> tuple[list[object], list[object]]:
    spans: list[object] = []
    for name, text in traces:
        spans += parse_trace_file_lenient(text, name).spans
    received: list[object] = []
    for body in otlp:
        received += spans_from_otlp_json(json.loads(body))
    return spans, received


def _stored(spans: list[object], received: list[object], db: Path, batch: int) -> None:
    with Store(db) as store:
        for i in range(0, len(spans), batch):
            store.write(spans[i : i + batch], source="run/trace.json")
        for i in range(0, len(received), batch):
            store.write(received[i : i + batch], source="")
        store.compact()


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    traces, otlp = _texts()
    best_decode = best_all = float("inf")
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(max(1, args.rounds)):
            gc.collect()
            t0 = time.process_time()
            spans, received = _decoded(traces, otlp)
            t1 = time.process_time()
            _stored(spans, received, Path(tmp) / f"live{r}.db", args.batch)
            t2 = time.process_time()
            n = len(spans) + len(received)
            best_decode = min(best_decode, t1 - t0)
            best_all = min(best_all, t2 - t0)
            del spans, received
    result = {
        "bench": "collect_spans",
        "value": round(n / best_all),
        "unit": "spans/s (CPU), decoded and stored live",
        "baseline": round(n / best_decode),
        "ratio": round(best_decode / best_all, 3),
        "spans": n,
        "store_us_per_span": round((best_all - best_decode) / n * 1e6, 1),
        "batch": args.batch,
    }
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
