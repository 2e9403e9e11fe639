"""Throughput of the verbose-log parser against the one-regex reference, same process.

The log is synthesised from the request traffic of a real 2.51 recording
(``tests/fixtures/logs/glog_2.51_session.log``: HTTP, gRPC, BLS, ensemble, stub output), one
block per repetition with its request ids renamed and its clock moved on one second every
20 blocks, so that ids are unique and the timestamp cache sees a realistic turnover.
Run from the repository root: ``python -m benchmarks.log_parse``. Prints one JSON line;
``--lines`` and ``--baseline-lines`` shrink it for a smoke run. (The parse rate is not the
production rate: ``benchmarks.ingest_log`` measures ingest as ``analyze``/``ingest`` run it.)
``python_path`` is the same parser with its compiled hot path (``collectors/logs/_hotpath.c``)
off, as a build without a C compiler runs it.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

from collectors.logs import parser
from collectors.logs.parser import parse_lines
from tests.collectors.logs.reference import parse_lines_regex

__all__ = ["against_parsing", "main", "parse_alone", "synthesise"]

FIXTURE = Path(__file__).resolve().parent.parent / "tests/fixtures/logs/glog_2.51_session.log"
_TIME = re.compile(rb"^([IWEF]\d{4}) \d\d:\d\d:\d\d", re.MULTILINE)


def _traffic_block() -> bytes:
    """The recording from the first inference to the first unload: steady-state traffic."""
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if b"HTTP request: 2 /v2/models/plain/infer" in ln)
    last = next(i for i, ln in enumerate(lines) if b"/v2/repository/models/plain/unload" in ln)
    return b"".join(lines[first:last])


def synthesise(n_lines: int) -> list[bytes]:
    block = _traffic_block()
    out: list[bytes] = []
    k = 0
    while len(out) < n_lines:
        s = 3600 * 4 + k // 20
        stamp = b"%02d:%02d:%02d" % (s // 3600 % 24, s // 60 % 60, s % 60)
        b = block.replace(b"request id: req-", b"request id: r%d-" % k)
        b = b.replace(b"request id: grpc-", b"request id: g%d-" % k)
        b = _TIME.sub(rb"\1 " + stamp, b)
        out.extend(b.splitlines(keepends=True))
        k += 1
    return out[:n_lines]


def parse_alone(
    lines: list[bytes], clock: Callable[[], float] = time.perf_counter
) -> tuple[int, float]:
    """The records ``parse_lines`` makes of ``lines`` and the seconds it took by ``clock``:
    the baseline of the benchmarks that store what it parses."""
    gc.collect()
    t0 = clock()
    n_records = sum(1 for _ in parse_lines(lines, year=2026))
    return n_records, clock() - t0


def against_parsing(
    bench: str, unit: str, n_lines: int, seconds: float, parse_s: float, **extra: object
) -> dict[str, object]:
    """A storing benchmark's line, printed: its lines/s, parsing's alone, and the share of
    the parse rate that survives storing."""
    result = {
        "bench": bench,
        "value": round(n_lines / seconds),
        "unit": unit,
        "baseline": round(n_lines / parse_s),
        "ratio": round(parse_s / seconds, 3),
        **extra,
    }
    print(json.dumps(result), flush=True)
    return result


def _seconds(fn: object, lines: list[bytes]) -> float:
    gc.collect(0)
    t0 = time.perf_counter()
    for _ in fn(lines, year=2026):  # type: ignore[operator]
        pass
    return time.perf_counter() - t0


def _interleaved(lines: list[bytes], base_lines: int, chunks: int = 10) -> tuple[float, float]:
    """One pass over all lines, alternating a fast chunk and a reference chunk of the same
    region, so that both parsers see the same load on a shared machine."""
    step = len(lines) // chunks
    per_base = max(1, base_lines // chunks)
    gc.collect()  # once: each chunk then only clears the young generation (a full
    # collection per chunk walked the whole heap of the process running it, 20 times)
    fast_s = base_s = 0.0
    for i in range(chunks):
        chunk = lines[i * step : (i + 1) * step if i < chunks - 1 else len(lines)]
        fast_s += _seconds(parse_lines, chunk)
        base_s += _seconds(parse_lines_regex, chunk[:per_base])
    return len(lines) / fast_s, per_base * chunks / base_s


def _python_path(lines: list[bytes]) -> float:
    """lines/s of the parser with its compiled hot path off (what a build without a C
    compiler runs); 0 where the extension is missing and both are the same path."""
    saved = parser._SCAN
    if saved is None:
        return 0.0
    parser._SCAN = None
    try:
        return len(lines) / _seconds(parse_lines, lines)
    finally:
        parser._SCAN = saved


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--baseline-lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    lines = synthesise(args.lines)
    # the two parsers must agree, or the comparison means nothing
    check = lines[:20_000]
    if list(parse_lines(check, year=2026)) != list(parse_lines_regex(check, year=2026)):
        raise SystemExit("fast and reference parsers disagree on the synthetic log")
    passes = [_interleaved(lines, args.baseline_lines) for _ in range(args.repeat)]
    fast = max(p[0] for p in passes)
    base = max(p[1] for p in passes)
    pure = _python_path(lines[: args.baseline_lines * 2])
    result: dict[str, object] = {
        "bench": "log_parse_lines",
        "value": round(fast),
        "unit": "lines/s",
        "baseline": round(base),
        "ratio": round(fast / base, 2),
        "compiled": parser._SCAN is not None,
        "python_path": round(pure),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
