"""One ``watch`` detection pass: the live window against re-reading the lookback from the store.

The store holds a synthetic real-traffic verbose log (``benchmarks.log_parse``), its records
spread over 15 minutes, more than the 10-minute lookback. The baseline is what
``watch`` did before ``LiveWindow``: every detector over a store-backed window of the last
10 minutes. The result is a steady pass over the live window (2 minutes of evidence plus the
open requests), after one second of new records arrived through the collector's tap; priming
(a restarted ``watch`` reading the store once) is reported beside it.
Run: ``python -m benchmarks.watch_pass [--lines N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.log_parse import synthesise
from collectors.logs.parser import parse_lines
from observability.detectors import Window, run_detectors
from observability.detectors.live import LiveWindow
from observability.detectors.registry import default_detectors
from observability.store import Store

__all__ = ["main"]

LOOKBACK_S = 600
EVIDENCE_S = 120
SPAN_S = 900
"""The log's time span: longer than the lookback, so the baseline reads a full 10 minutes."""


def _stretched(events: list[object], span_s: int) -> list[object]:
    """The same records spread over ``span_s`` seconds (the synthetic log packs 20 request
    blocks into each second, far too little time for a lookback to cut anything)."""
    times = [_at(e) for e in events]
    lo, hi = min(times), max(times)
    scale = span_s * 1e9 / max(hi - lo, 1)
    out: list[object] = []
    for e, at in zip(events, times, strict=True):
        new = lo + int((at - lo) * scale)
        header = getattr(e, "header", None)
        if header is not None:
            out.append(replace(e, header=replace(header, at_ns=new)))  # type: ignore[type-var]
        else:
            out.append(replace(e, at_ns=new))  # type: ignore[type-var]
    return out


def _at(event: object) -> int:
    header = getattr(event, "header", None)
    return int(header.at_ns if header is not None else getattr(event, "at_ns", 0))


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=400_000)
    args = parser.parse_args(argv)
    events = _stretched(list(parse_lines(synthesise(args.lines), year=2026)), SPAN_S)
    detectors = default_detectors()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        with Store(path) as store:
            for i in range(0, len(events), 5000):
                store.write(events[i : i + 5000], source="bench")
        with Store(path, readonly=True) as store:
            span = store.time_range()
            assert span is not None
            now = span[1]
            gc.collect()
            t0 = time.perf_counter()
            window = Window(since_ns=now - LOOKBACK_S * 10**9, until_ns=now, store=store)
            baseline_findings = run_detectors(detectors, window)
            store_s = time.perf_counter() - t0
            records = len(window.logs())
            del window
            gc.collect()
            live = LiveWindow(EVIDENCE_S, LOOKBACK_S)
            t0 = time.perf_counter()
            live.prime(store, now - 10**9)
            prime_s = time.perf_counter() - t0
        last_second = [e for e in events if _at(e) >= now - 10**9]
        live.add("bench", last_second)
        t0 = time.perf_counter()
        live_findings = run_detectors(detectors, live.window(now))
        live_s = time.perf_counter() - t0
    out = {
        "bench": "watch_pass",
        "value": round(live_s, 3),
        "unit": "s",
        "baseline": round(store_s, 3),
        "ratio": round(live_s / store_s, 3),
        "prime_s": round(prime_s, 2),
        "records_in_lookback": records,
        "records_in_live_window": live.stats.records,
        "findings": [len(baseline_findings), len(live_findings)],
    }
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
