"""A load process of the foreign recorder: a family's clients in a child process of their own
(so the recorder's GIL does not pace them), each outcome a JSON line on its stdout.

Why a module: the ``hx``, ``sw`` and ``lz`` families each started their load process, read
its lines and stopped it the same way, and the load processes each counted and wrote their
rows the same way; this is that once, both sides.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Rows", "load_process_args", "run_load_process", "status_of"]


def run_load_process(
    module: str,
    url: str,
    seed: int,
    t0: float,
    until: float,
    cap: int,
    plan: str,
    timeout_s: float,
    on_row: Callable[[dict[str, Any]], None],
) -> None:
    """Run ``python -m module url --seed .. --t0 .. --until .. --cap .. --plan ..`` and hand
    each JSON line it prints to ``on_row`` as it comes. The process is stopped (by its own
    pid) if it outlives ``until`` by more than ``timeout_s`` and a margin."""
    cmd = [sys.executable, "-m", module, url, "--seed", str(seed), "--t0", repr(t0)]
    cmd += ["--until", repr(until), "--cap", str(cap), "--plan", plan]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            on_row(json.loads(line))
    finally:
        try:
            proc.wait(timeout=max(1.0, until - time.monotonic()) + timeout_s + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def load_process_args(
    module: str, endpoint: str, plans: Any, plan: str, cap: int, argv: list[str] | None
) -> argparse.Namespace:
    """The arguments ``run_load_process`` gives the load process ``module``, parsed there."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("url", help=f"host:port of Triton's {endpoint} endpoint")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--t0", type=float, required=True, help="time.monotonic() at 0 s")
    parser.add_argument("--until", type=float, required=True, help="time.monotonic() to stop")
    parser.add_argument("--cap", type=int, default=cap)
    parser.add_argument("--plan", choices=sorted(plans), default=plan)
    return parser.parse_args(argv)


def status_of(row: dict[str, Any]) -> Any:
    """The ``Status`` a row's ``status`` names; ``open`` (unanswered when the client
    stopped) is a timeout, an unknown word an error."""
    from observability.load.client import Status

    if row["status"] == "open":
        return Status.TIMEOUT
    return {s.value: s for s in Status}.get(row["status"], Status.ERROR)


class Rows:
    """The load process's side: at most ``cap`` requests sent (``take``), and each outcome
    written as one JSON line on stdout (``emit``), from any of its threads."""

    def __init__(self, cap: int) -> None:
        self.lock = threading.Lock()
        self.cap = cap
        self.sent = 0

    def take(self) -> bool:
        with self.lock:
            if self.sent >= self.cap:
                return False
            self.sent += 1
            return True

    def emit(self, label: str, started: float, status: str, error: str = "") -> None:
        row = {
            "label": label,
            "started": started,
            "status": status,
            "latency_s": time.monotonic() - started,
            "error": error[:300],
        }
        with self.lock:
            sys.stdout.write(json.dumps(row) + "\n")
            sys.stdout.flush()
