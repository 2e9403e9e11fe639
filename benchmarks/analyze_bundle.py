"""``analyze`` of a bundle holding a 1,000,000-line verbose log: seconds, against parsing alone.

The log is the synthetic real-traffic log of ``benchmarks.log_parse``; the bundle has it and
a meta.json, as ``capture`` writes them. The issue's floor is < 30 s on one core. The same
log alone (``analyze triton.log``, what users paste) is judged at its last line, where its
4,000 requests left open by the cut are findings: ``loose_s`` times that too (a detector
whose cost grew with findings times lines took it to 247 s while the bundle took 21 s).
Run: ``python -m benchmarks.analyze_bundle [--lines N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from benchmarks.log_parse import synthesise
from collectors.logs.parser import parse_lines
from observability.analyze import analyze_bundle

__all__ = ["main"]


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    lines = synthesise(args.lines)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bundle"
        root.mkdir()
        (root / "triton.log").write_bytes(b"".join(lines))
        meta = {
            "format": 1,
            "bundle_id": "bench",
            "sources": {},
            "clock": {},
            "started_at": "2026-11-22T00:00:00+00:00",
            "ended_at": "2026-11-22T23:59:59+00:00",
        }
        (root / "meta.json").write_text(json.dumps(meta))  # fmt: skip
        gc.collect()
        t0 = time.perf_counter()
        for _ in parse_lines(lines, year=2026):
            pass
        parse_s = time.perf_counter() - t0
        del lines
        gc.collect()
        t0 = time.perf_counter()
        result = analyze_bundle(root)
        analyze_s = time.perf_counter() - t0
        gc.collect()
        t0 = time.perf_counter()
        loose = analyze_bundle(root / "triton.log")
        loose_s = time.perf_counter() - t0
    # A detector that raised was skipped: timed, the run would be an analysis that skipped
    # work (the synthetic log's copied timestamps made five raise, unseen, until 2026-11-27).
    if result.failed or loose.failed:
        raise SystemExit(
            f"detectors raised, the timing would mean nothing: {result.failed + loose.failed}"
        )
    out = {
        "bench": "analyze_bundle_1m_lines" if args.lines == 1_000_000 else "analyze_bundle",
        "value": round(analyze_s, 2),
        "unit": "s",
        "baseline": round(parse_s, 2),
        "ratio": round(analyze_s / parse_s, 2),
        "lines": args.lines,
        "findings": len(result.findings),
        "loose_s": round(loose_s, 2),
        "loose_findings": len(loose.findings),
    }
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
