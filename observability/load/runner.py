"""A bounded load loop: N worker threads, stopped by count, by time, or by the caller.

Every bound is enforced here so that no caller (CLI, demo, tests) can start an endless loop:
at most ``requests`` are sent, none after ``duration_s``, and each waits at most
``timeout_s`` for its answer.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from observability.load.client import Outcome, TritonClient
from observability.load.report import LoadReport
from observability.load.workload import STREAMING, PlannedRequest, plan_request

__all__ = ["COLD_START_MODEL", "LoadConfig", "run_load", "set_cold_start"]

COLD_START_MODEL = "classifier"


@dataclass
class LoadConfig:
    url: str
    concurrency: int = 4
    requests: int = 200
    duration_s: float = 30.0
    timeout_s: float = 10.0
    faults: dict[str, float] = field(default_factory=dict)
    fault_params: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    run_tag: str = ""
    """Prefix of the client-side request ids; random when empty."""
    ids: str = "all"
    """``all`` or ``client``: requests carry their id; ``none``: they go without one."""
    rate_per_s: float | None = None
    """Send at most this many requests a second in all (open loop, evenly spaced); ``None``
    sends as fast as the workers get answers."""

    def validate(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.requests < 1:
            raise ValueError("requests must be at least 1")
        if not self.duration_s > 0:
            raise ValueError("duration must be positive")
        if not self.timeout_s > 0:
            raise ValueError("timeout must be positive")
        if self.rate_per_s is not None and not self.rate_per_s > 0:
            raise ValueError("rate must be positive")


def set_cold_start(url: str, seconds: float, timeout_s: float = 120.0) -> None:
    """Reload the classifier so that its first execute takes ``seconds`` (0 restores eager init).

    Cold start is a property of a model load, so it is switched through the repository API
    (explicit model-control mode) with a config override, as a user's redeploy would.
    """
    client = TritonClient(url, timeout_s)
    try:
        config = client.model_config(COLD_START_MODEL)
        params = dict(config.get("parameters") or {})
        params["cold_start_s"] = {"string_value": f"{seconds:g}"}
        config["parameters"] = params
        client.load_model(COLD_START_MODEL, config=json.dumps(config))
    finally:
        client.close()


def run_load(
    config: LoadConfig,
    on_outcome: Callable[[Outcome], None] | None = None,
    stop: threading.Event | None = None,
) -> LoadReport:
    config.validate()
    tag = config.run_tag or f"load-{uuid.uuid4().hex[:8]}"
    report = LoadReport()
    stop = stop or threading.Event()
    lock = threading.Lock()
    next_index = 0
    rng = random.Random(config.seed)
    started = time.monotonic()
    deadline = started + config.duration_s

    if config.faults.get("cold_start"):
        set_cold_start(config.url, float(config.fault_params.get("cold_start_s", "4")))
        report.notes.append(f"{COLD_START_MODEL} reloaded with a lazy first execute")

    def take() -> int | None:
        nonlocal next_index
        with lock:
            if stop.is_set() or next_index >= config.requests or time.monotonic() >= deadline:
                return None
            index = next_index
            next_index += 1
            return index

    def plan(index: int) -> PlannedRequest:
        with lock:  # the shared RNG keeps a run reproducible for a given seed
            return plan_request(index, rng, tag, config.faults, config.fault_params)

    def worker() -> None:
        client = TritonClient(config.url, config.timeout_s, send_ids=config.ids != "none")
        try:
            while (index := take()) is not None:
                if config.rate_per_s:
                    due = started + index / config.rate_per_s
                    if stop.wait(max(0.0, due - time.monotonic())) or due >= deadline:
                        break
                req = plan(index)
                send = client.stream if req.model in STREAMING else client.infer
                outcome = send(req.model, req.inputs, req.request_id, req.fault, req.parameters)
                with lock:
                    report.add(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)
        finally:
            client.close()

    threads = [
        threading.Thread(target=worker, name=f"load-{i}", daemon=True)
        for i in range(config.concurrency)
    ]
    for t in threads:
        t.start()
    for t in threads:
        # Bounded: the loop stops at the deadline and each request at its timeout.
        t.join(timeout=config.duration_s + config.timeout_s + 30)
    report.wall_s = time.monotonic() - started
    if config.faults.get("cold_start"):
        set_cold_start(config.url, 0)
    return report
