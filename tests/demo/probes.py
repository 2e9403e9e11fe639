"""Read-only probes of a running lab: metrics gauges, model statistics, log lines."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from collectors.metrics.parser import parse_metrics_lenient
from observability.lab import TritonLab


def gauge(lab: TritonLab, name: str, model: str) -> float:
    with urllib.request.urlopen(lab.metrics_url, timeout=5) as resp:
        page = parse_metrics_lenient(resp.read().decode())
    return sum(
        s.value
        for fam in page.families
        if fam.name == name
        for s in fam.samples
        if s.label("model") == model
    )


@contextmanager
def sample_pending(lab: TritonLab, model: str, every_s: float = 0.1) -> Iterator[list[float]]:
    """Sample ``nv_inference_pending_request_count`` for ``model`` while the block runs."""
    samples: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            samples.append(gauge(lab, "nv_inference_pending_request_count", model))
            stop.wait(every_s)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(timeout=10)


def model_stats(lab: TritonLab, model: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{lab.http_url}/v2/models/{model}/stats", timeout=5) as resp:
        stats = json.loads(resp.read())["model_stats"][0]
    return {
        "inference_count": int(stats.get("inference_count", 0)),
        "execution_count": int(stats.get("execution_count", 0)),
    }


def log_lines(lab: TritonLab, needle: str) -> list[str]:
    return [line for line in lab.log_text().splitlines() if needle in line]


def wait_for(predicate, timeout_s: float = 10.0, every_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every_s)
    return bool(predicate())
