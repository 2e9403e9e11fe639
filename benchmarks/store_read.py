"""Reading a store's log back: records made by writing their slots against their constructors.

A store of a synthetic verbose log (``benchmarks.log_parse``, ingested as ``benchmarks.ingest_log``
does) is read whole through ``Store.log_records``, as ``analyze --store``, a restarted
``watch`` (``LiveWindow.prime``) and the triage app's pages read it, each read from a fresh
connection (a connection keeps what it decoded). The result builds each block's records with
``_blockpack.records``; the baseline is the same read with it off (``codec._c_records =
None``: every record through its dataclass ``__init__``), in the same process, the two
alternated, best of five each. Run: ``python -m benchmarks.store_read [--lines N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from benchmarks.ingest_log import _bundle
from benchmarks.log_parse import synthesise
from observability.bundle.ingest import ingest
from observability.store import Store, codec

__all__ = ["main"]


def _read(path: Path) -> tuple[int, float]:
    with Store(path, readonly=True) as store:
        t0 = time.process_time()
        n = sum(1 for _ in store.log_records())
        return n, time.process_time() - t0


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=300_000)
    args = parser.parse_args(argv)
    compiled = codec._c_records
    if compiled is None:
        raise SystemExit("observability/store/_blockpack.c is not built: nothing to compare")
    times: dict[str, list[float]] = {"slots": [], "constructors": []}
    with tempfile.TemporaryDirectory() as tmp:
        bundle = _bundle(Path(tmp) / "bundle", synthesise(args.lines))
        path = Path(tmp) / "bench.db"
        with Store(path) as store:
            ingest(bundle, store)
        gc.collect()
        gc.disable()  # a collection in one timing and not the other is not what is compared
        try:
            for _ in range(5):
                for mode in times:
                    codec._c_records = compiled if mode == "slots" else None
                    n, seconds = _read(path)
                    times[mode].append(seconds)
        finally:
            codec._c_records = compiled
            gc.enable()
    best = {mode: min(v) for mode, v in times.items()}
    result: dict[str, object] = {
        "bench": "store_read_log",
        "value": round(n / best["slots"]),
        "unit": "records/s",
        "baseline": round(n / best["constructors"]),
        "ratio": round(best["slots"] / best["constructors"], 3),
        "records": n,
        "lines": args.lines,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
