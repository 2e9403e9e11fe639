"""What one ``watch --pod-logs`` costs per Triton target as targets grow (issue 16: 1, 3, 6).

Synthetic pods, not real Tritons: six lab Tritons with the demo pipeline (each with a dozen
python stubs) do not fit beside the watch on a 2-core machine, and their own load would be
measured with it. Each pod is a kubelet-like folder
(``<root>/pods/bench_triton-<i>_<uid>/triton/0.log``) into which a writer appends real-traffic
verbose-log lines (``benchmarks.log_parse``'s blocks of a BLS pipeline's requests, re-stamped
to now and given fresh request ids) as CRI lines, ``--rate`` lines a second per pod, in
ten slices a second. One ``triton-obs watch --pod-logs`` process follows them all (a store per
pod, detectors every second); after ``--warmup`` seconds the run measures, over
``--seconds``: the process's CPU seconds (``/proc/<pid>/stat``), its RSS at the end and its
peak, the lines it read (its own ``triton_obs_log_lines_read_total``), and how often each
target's detectors ran (``last_pass`` in ``/api/v1/targets``: one detection thread runs every
target's pass in turn, then waits 1 s, so the interval grows with the targets' total pass time).

``--seconds`` past watch's 120 s evidence window measures RSS with every window full.

Run: ``python -m benchmarks.fleet_cost [--targets 1,3,6] [--rate 200] [--seconds 30]
[--max-records 150000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

from benchmarks.log_parse import synthesise
from observability.demo.crilog import stamp

__all__ = ["main", "measure"]

_HEAD = re.compile(rb"^([IWE])\d{4} \d\d:\d\d:\d\d\.\d{6}")
_ID = re.compile(rb"request id: ([rg])(\d+)-")
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def _rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MiB."""
    found = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(found["VmRSS"].split()[0]) / 1024, int(found["VmHWM"].split()[0]) / 1024


def _lines_read(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(
        float(m.group(1))
        for m in re.finditer(r"^triton_obs_log_lines_read_total\{[^}]*\} ([0-9.e+]+)$", text, re.M)
    )


def head_of(stamped: bytes) -> Callable[[re.Match[bytes]], bytes]:
    """A line's Triton header re-stamped (level kept)."""
    return lambda m: m.group(1) + stamped


def id_of(shift: int) -> Callable[[re.Match[bytes]], bytes]:
    """A request id made fresh: its number shifted."""
    return lambda m: b"request id: %s%d-" % (m.group(1), int(m.group(2)) + shift)


def _count_passes(port: int, seconds: float) -> int:
    """Detection passes of all targets within ``seconds``: the distinct ``last_pass`` values
    the API shows, polled every 0.2 s (a pass is ~1 s apart at the least)."""
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        url = f"http://127.0.0.1:{port}/api/v1/targets"
        with urllib.request.urlopen(url, timeout=10) as resp:
            for row in json.load(resp)["targets"]:
                if row["last_pass"]:
                    seen.add((row["target"], row["last_pass"]))
        time.sleep(0.2)
    return len(seen)


class _Writer(threading.Thread):
    """Appends ``rate`` lines a second to every pod's 0.log, as CRI, stamped now."""

    def __init__(self, logs: list[Path], rate: int, lines: list[bytes]) -> None:
        super().__init__(daemon=True, name="bench-writer")
        self.logs, self.rate, self.lines = logs, rate, lines
        self.stop = threading.Event()
        self.written = 0
        self.cycle = 0

    def run(self) -> None:
        handles = [p.open("ab") for p in self.logs]
        per_slice = max(1, self.rate // 10)
        pos = 0
        next_at = time.monotonic()
        try:
            while not self.stop.is_set():
                now_ns = time.time_ns()
                head = time.strftime("%m%d %H:%M:%S", time.gmtime(now_ns / 1e9)).encode()
                micro = b".%06d" % (now_ns // 1000 % 1_000_000)
                cri = f"{stamp(now_ns)} stderr F ".encode()
                chunk = []
                for _ in range(per_slice):
                    if pos == len(self.lines):
                        pos, self.cycle = 0, self.cycle + 1
                    line = _HEAD.sub(head_of(head + micro), self.lines[pos])
                    if self.cycle:  # fresh ids on every pass over the lines
                        line = _ID.sub(id_of(self.cycle * 10**7), line)
                    chunk.append(cri + line)
                    pos += 1
                data = b"".join(chunk)
                for h in handles:
                    h.write(data)
                    h.flush()
                self.written += per_slice
                next_at += 0.1
                self.stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            for h in handles:
                h.close()


def measure(
    targets: int, rate: int, seconds: float, warmup: float, root: Path, max_records: int
) -> dict:
    pods = root / "pods"
    logs = []
    for i in range(targets):
        log = pods / f"bench_triton-{i}_{uuid.uuid4()}" / "triton" / "0.log"
        log.parent.mkdir(parents=True)
        log.touch()
        logs.append(log)
    lines = synthesise(max(20_000, int(rate * (seconds + warmup) * 1.2)))
    err = (root / "watch.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable, "-c", "from observability.cli import main; main()", "watch",
            "--pod-logs", str(pods), "--store", str(root / "stores"), "--port", "0",
            "--format", "jsonl", "--duration", str(seconds + warmup + 60),
            "--max-records", str(max_records),
        ],
        stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    err.close()
    writer = _Writer(logs, rate, lines)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(r"127\.0\.0\.1:(\d+)/metrics", (root / "watch.log").read_text())
            port = int(m.group(1)) if m else None
            time.sleep(0.2)
        if port is None:
            raise RuntimeError((root / "watch.log").read_text()[-2000:])
        writer.start()
        time.sleep(warmup)
        cpu0, read0, t0 = _cpu_s(proc.pid), _lines_read(port), time.monotonic()
        passes = _count_passes(port, seconds)
        cpu1, read1, t1 = _cpu_s(proc.pid), _lines_read(port), time.monotonic()
        rss, peak = _rss_mib(proc.pid)
    finally:
        writer.stop.set()
        writer.join(timeout=10)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    wall = t1 - t0
    cpu = cpu1 - cpu0
    return {
        "targets": targets,
        "rate_per_target": rate,
        "seconds": round(wall, 1),
        "cpu_s_per_s": round(cpu / wall, 4),
        "cpu_s_per_s_per_target": round(cpu / wall / targets, 4),
        "cpu_us_per_line": round(cpu / max(1.0, read1 - read0) * 1e6, 1),
        "rss_mib": round(rss, 1),
        "rss_peak_mib": round(peak, 1),
        "lines_per_s": round((read1 - read0) / wall, 1),
        "lines_per_s_per_target": round((read1 - read0) / wall / targets, 1),
        "s_between_passes": round(wall * targets / max(1, passes), 2),
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default="1,3,6")
    ap.add_argument("--rate", type=int, default=200, help="lines a second per target")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument(
        "--max-records", type=int, default=150_000, help="watch's, as the DaemonSet sets it"
    )
    args = ap.parse_args(argv)
    rows = []
    for k in (int(x) for x in args.targets.split(",")):
        root = Path(tempfile.mkdtemp(prefix="fleet-cost-"))
        try:
            rows.append(measure(k, args.rate, args.seconds, args.warmup, root, args.max_records))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(json.dumps(rows[-1]), flush=True)
    first, last = rows[0], rows[-1]
    extra = last["targets"] - first["targets"]
    result: dict[str, object] = {"rows": rows}
    if extra:
        result["rss_mib_per_extra_target"] = round((last["rss_mib"] - first["rss_mib"]) / extra, 1)
        result["cpu_per_target_ratio_last_vs_first"] = round(
            last["cpu_s_per_s_per_target"] / max(1e-9, first["cpu_s_per_s_per_target"]), 2
        )
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    return result


if __name__ == "__main__":
    main()
