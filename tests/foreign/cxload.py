"""The ``cx`` family's clients: deadlines, cancellations and retries, no request ids.

Each client prices quotes at ``cx_gateway`` (QUERY [16] FP32, ROUNDS [1] INT32) with a
client-side deadline, as production callers do: gRPC clients pass
``infer(..., client_timeout=deadline)`` (the gRPC deadline: the client gives up and the
server is told the call was cancelled); the HTTP client, where a plan has one, builds its
``tritonclient.http`` client with ``network_timeout=deadline`` (it stops waiting; HTTP has no
way to tell the server). Most quotes take one to three rounds of 5 to 15 ms of scoring; a
tail (``Plan.tail``) is either many rounds (``deep="rounds"``: 12 to 30 rounds of 25 ms) or
one heavy round (``deep="one"``: 300 to 900 ms of scoring). A plan may retry a timed-out
quote (``retries``), each retry with a deadline ``retry_factor`` times longer. Every loop is
bounded in count (``cap``) and in time (``until``). No payload is recorded, only outcomes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from observability.load.client import Outcome, Status

__all__ = ["PLANS", "Plan", "cx_inject", "cx_worker", "quote"]

MODEL = "cx_gateway"


@dataclass(frozen=True)
class Plan:
    deadline_s: float
    """The client deadline of a first try."""
    tail: float
    """The share of quotes that are slow (the tail)."""
    deep: str = "rounds"
    """How a slow quote is slow: ``rounds`` (12 to 30 rounds of 25 ms) or ``one`` (one
    round of 300 to 900 ms)."""
    retries: int = 0
    retry_factor: float = 2.0
    http_seeds: tuple[int, ...] = ()
    """The clients (numbered from 1) that speak HTTP instead of gRPC."""
    pause_s: float = 0.2

    def text(self) -> str:
        tail = (
            "12 to 30 rounds of 25 ms (0.3 to 0.75 s)"
            if self.deep == "rounds"
            else "one round of 300 to 900 ms"
        )
        retry = (
            f"; a timed-out quote is retried {self.retries} time(s), each retry with a "
            f"deadline {self.retry_factor:g} x longer"
            if self.retries
            else "; no retries"
        )
        http = (
            f"; client(s) {', '.join(map(str, self.http_seeds))} speak HTTP (tritonclient.http, "
            "network_timeout = the deadline), the others gRPC (client_timeout = the deadline)"
            if self.http_seeds
            else "; all gRPC (infer(..., client_timeout=deadline))"
        )
        return (
            f"deadline {self.deadline_s:g} s; {self.tail:.0%} of quotes are slow ({tail}), the "
            f"others 1 to 3 rounds of 5 to 15 ms{retry}{http}; a pause of {self.pause_s:g} s "
            "between quotes"
        )


PLANS: dict[str, Plan] = {
    "calm": Plan(deadline_s=3.0, tail=0.07),
    "tight": Plan(deadline_s=0.25, tail=0.08, http_seeds=(3,)),
    "retry": Plan(deadline_s=0.25, tail=0.08, retries=1),
    "hang": Plan(deadline_s=1.0, tail=0.05, retries=1),
    "heavy": Plan(deadline_s=0.2, tail=0.3),
    "one": Plan(deadline_s=3.0, tail=0.12, deep="one"),
}


def quote(rng: np.random.Generator, plan: Plan) -> dict[str, np.ndarray]:
    """One quote: QUERY[0] is the milliseconds of scoring each round costs."""
    query = rng.standard_normal(16).astype(np.float32)
    if rng.random() < plan.tail:
        if plan.deep == "one":
            rounds, cost = 1, float(rng.uniform(300, 900))
        else:
            rounds, cost = int(rng.integers(12, 31)), 25.0
    else:
        rounds, cost = int(rng.integers(1, 4)), float(rng.uniform(5, 15))
    query[0] = cost
    return {"QUERY": query, "ROUNDS": np.array([rounds], dtype=np.int32)}


class _Client:
    """One tritonclient for one thread."""

    def __init__(self, grpc_url: str, http_url: str, http: bool, deadline_s: float) -> None:
        self.http = http
        if http:
            import tritonclient.http as tc

            self._tc: Any = tc
            self.address = http_url.removeprefix("http://").rstrip("/")
            self._client: Any = tc.InferenceServerClient(
                self.address,
                connection_timeout=deadline_s,
                network_timeout=deadline_s,
            )
        else:
            import tritonclient.grpc as tc

            self._tc = tc
            self.address = grpc_url.removeprefix("grpc://")
            self._client = tc.InferenceServerClient(self.address)
        self.deadline_s = deadline_s

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()

    def infer(
        self, inputs: Mapping[str, np.ndarray], deadline_s: float, params: Mapping[str, Any]
    ) -> Outcome:
        tc = self._tc
        items = []
        for name, array in inputs.items():
            item = tc.InferInput(name, list(array.shape), "FP32" if name == "QUERY" else "INT32")
            item.set_data_from_numpy(array)
            items.append(item)
        started = time.monotonic()
        try:
            if self.http:  # the deadline is the client's: a retry's longer one, a new client
                if abs(deadline_s - self.deadline_s) > 1e-6:
                    self.close()
                    self._client = self._tc.InferenceServerClient(
                        self.address, connection_timeout=deadline_s, network_timeout=deadline_s
                    )
                    self.deadline_s = deadline_s
                self._client.infer(MODEL, items, parameters=dict(params) or None)
            else:
                self._client.infer(
                    MODEL, items, parameters=dict(params) or None, client_timeout=deadline_s
                )
        except Exception as err:
            text = str(err)
            low = text.lower()
            # gRPC: DEADLINE_EXCEEDED; HTTP: "timed out". Not "timeout": a server's error
            # answer may say it ("Request timeout expired" from a queue policy).
            timed_out = "deadline" in low or "timed out" in low
            status = Status.TIMEOUT if timed_out else Status.ERROR
            return Outcome("", MODEL, "", status, started, time.monotonic() - started, text[:300])
        return Outcome("", MODEL, "", Status.OK, started, time.monotonic() - started)


def _client(grpc_url: str, http_url: str, http: bool, deadline_s: float) -> _Client:
    return _Client(grpc_url, http_url, http, deadline_s)


def _price(
    client: _Client,
    plan: Plan,
    inputs: Mapping[str, np.ndarray],
    params: Mapping[str, Any],
    label: str,
    add: Callable[[str, object, float], None],
    t0: float,
) -> None:
    """One quote and its retries, each outcome added (a retry as ``<label>:retry``)."""
    deadline = plan.deadline_s
    outcome = client.infer(inputs, deadline, params)
    add(label, outcome, t0)
    for _ in range(plan.retries):
        if outcome.status != Status.TIMEOUT:
            return
        deadline *= plan.retry_factor
        outcome = client.infer(inputs, deadline, {})
        add(f"{label}:retry", outcome, t0)


def cx_worker(
    urls: str,
    seed: int,
    stop: Any,
    until: float,
    add: Callable[[str, object, float], None],
    t0: float,
    cap: int,
    delay_s: float,
    plan: Plan,
) -> None:
    """A background client: quotes until ``until``, at most ``cap`` of them."""
    grpc_url, http_url = urls.split()
    http = seed in plan.http_seeds
    client = _client(grpc_url, http_url, http, plan.deadline_s)
    rng = np.random.default_rng(seed)
    label = "healthy:http" if http else "healthy"
    try:
        stop.wait(delay_s)
        for _ in range(cap):
            if stop.is_set() or time.monotonic() > until:
                break
            _price(client, plan, quote(rng, plan), {}, label, add, t0)
            stop.wait(plan.pause_s)
    finally:
        client.close()


def cx_inject(
    urls: str,
    idx: int,
    params: Mapping[str, Any],
    plan: Plan,
    label: str,
    add: Callable[[str, object, float], None],
    t0: float,
) -> None:
    """One faulty quote (``params`` sent as request parameters), from a gRPC client with the
    plan's deadline and retries: the retry carries no fault."""
    grpc_url, http_url = urls.split()
    client = _client(grpc_url, http_url, False, plan.deadline_s)
    rng = np.random.default_rng(1000 + idx)
    try:
        inputs = quote(rng, Plan(deadline_s=plan.deadline_s, tail=0.0))
        _price(client, plan, inputs, params, label, add, t0)
    finally:
        client.close()
