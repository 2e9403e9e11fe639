"""The ``hx`` family's clients: HTTP with many requests in flight, no request ids.

Each background client is **a process of its own** (``python -m tests.foreign.hxload``), as
a user's service is: one ``tritonclient.http.InferenceServerClient(url, concurrency=N)``
(gevent greenlets over N keep-alive connections, ``network_timeout`` = the plan's client
timeout) that keeps a bounded number of ``async_infer()`` calls to ``hx_triage`` in flight:
as soon as one is answered (or times out), another is sent, until the plan's in-flight
target for that moment is met. A plan's target may step over the window (a ramp). Every
loop is bounded in count (``cap``) and in time (``until``); calls still open at ``until``
get ``timeout_s`` more, then are written down as ``open``. Each request's outcome (start
on the shared ``time.monotonic()`` clock, status, latency, error) is one JSON line on the
process's stdout, which ``hx_worker`` (in ``record.py``'s thread for that client) reads
back. No payload is recorded, only outcomes.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.foreign.loadproc import load_process_args, run_load_process, status_of

__all__ = ["PLANS", "Plan", "hx_inject", "hx_worker"]

MODEL = "hx_triage"


@dataclass(frozen=True)
class Plan:
    steps: tuple[tuple[float, int], ...]
    """``(seconds after the capture started, requests in flight from then on)`` per client
    process, the first at 0."""
    timeout_s: float = 10.0
    """The client's ``network_timeout`` (and ``connection_timeout``)."""

    def target(self, at_s: float) -> int:
        n = self.steps[0][1]
        for start, count in self.steps:
            if at_s >= start:
                n = count
        return n

    @property
    def most(self) -> int:
        return max(n for _, n in self.steps)

    def text(self, clients: int) -> str:
        if len(self.steps) == 1:
            flight = (
                f"{self.steps[0][1]} requests in flight each ({self.steps[0][1] * clients} in all)"
            )
        else:
            parts = ", ".join(f"{n * clients} from {s:g} s" for s, n in self.steps)
            flight = f"in flight in all: {parts}"
        return (
            f"{clients} client process(es), tritonclient.http async_infer with "
            f"concurrency={self.most}, {flight}, network_timeout {self.timeout_s:g} s"
        )


PLANS: dict[str, Plan] = {
    "steady": Plan(steps=((0, 8),)),
    "ramp": Plan(steps=((0, 2), (10, 8), (22, 2))),
    "tight": Plan(steps=((0, 8),), timeout_s=3.0),
}


def _ticket(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((1, 32)).astype(np.float32)


def _inputs(tc: Any, ticket: np.ndarray) -> list[Any]:
    item = tc.InferInput("TICKET", list(ticket.shape), "FP32")
    item.set_data_from_numpy(ticket)
    return [item]


def _status(err: BaseException) -> str:
    text = f"{type(err).__name__} {err}".lower()
    return "timeout" if "timed out" in text or "timeout" in text else "error"


def _row(label: str, started: float, status: str, error: str = "") -> dict[str, Any]:
    return {
        "label": label,
        "started": started,
        "status": status,
        "latency_s": time.monotonic() - started,
        "error": error[:300],
    }


def run(url: str, seed: int, t0: float, until: float, cap: int, plan: Plan) -> None:
    """One client process: keep ``plan.target(now - t0)`` requests in flight; one JSON line
    per request on stdout."""
    import gevent
    import tritonclient.http as tc

    hub = gevent.get_hub()  # a timed-out call is an outcome here, not a traceback on stderr
    hub.NOT_ERROR = (*hub.NOT_ERROR, Exception)
    client = tc.InferenceServerClient(
        url,
        concurrency=plan.most,
        connection_timeout=plan.timeout_s,
        network_timeout=plan.timeout_s,
    )
    rng = np.random.default_rng(seed)
    open_: dict[Any, tuple[Any, float]] = {}  # greenlet -> (InferAsyncRequest, started)
    sent = 0

    def emit(row: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()

    def reap(ready: list[Any]) -> None:
        for greenlet in ready:
            handle, started = open_.pop(greenlet)
            try:
                handle.get_result()
                emit(_row("healthy", started, "ok"))
            except Exception as err:  # the outcome is recorded, not raised
                emit(_row("healthy", started, _status(err), str(err)))

    try:
        while time.monotonic() < until:
            want = plan.target(time.monotonic() - t0)
            while len(open_) < want and sent < cap and time.monotonic() < until:
                started = time.monotonic()
                try:
                    handle = client.async_infer(MODEL, _inputs(tc, _ticket(rng)))
                except Exception as err:  # refused before it was sent
                    emit(_row("healthy", started, _status(err), str(err)))
                    continue
                finally:
                    sent += 1
                # InferAsyncRequest keeps its greenlet private; waiting on it is the only
                # way to be told of the first of many calls to finish.
                open_[handle._greenlet] = (handle, started)
            if not open_:
                if sent >= cap:
                    break
                gevent.sleep(0.05)
                continue
            reap(gevent.wait(list(open_), timeout=0.1, count=1))
        deadline = time.monotonic() + plan.timeout_s + 1
        while open_ and time.monotonic() < deadline:
            reap(gevent.wait(list(open_), timeout=0.2, count=1))
        for _greenlet, (_handle, started) in list(open_.items()):
            emit(_row("healthy", started, "open", "still in flight when the client stopped"))
    finally:
        with contextlib.suppress(Exception):
            client.close()


def hx_worker(
    url: str,
    seed: int,
    stop: Any,
    until: float,
    add: Callable[[str, object, float], None],
    t0: float,
    cap: int,
    delay_s: float,
    plan_name: str,
) -> None:
    """A background client: a child process running ``run`` (started ``delay_s`` after
    ``t0``), its outcomes handed to ``add`` as they come. It is stopped (by its own pid)
    if it outlives ``until`` by more than its timeout and a margin."""
    from observability.load.client import Outcome, Status

    stop.wait(delay_s)
    address = url.removeprefix("http://").rstrip("/")

    def on_row(row: dict[str, Any]) -> None:
        label, status = str(row["label"]), status_of(row)
        if row["status"] == "open":  # unanswered when the client stopped
            label, status = f"{label}:open at the end", Status.TIMEOUT
        outcome = Outcome("", MODEL, "", status, row["started"], row["latency_s"], row["error"])
        add(label, outcome, t0)

    timeout_s = PLANS[plan_name].timeout_s
    run_load_process(
        "tests.foreign.hxload", address, seed, t0, until, cap, plan_name, timeout_s, on_row
    )


def hx_inject(
    url: str,
    idx: int,
    params: Mapping[str, Any],
    timeout_s: float,
    label: str,
    add: Callable[[str, object, float], None],
    t0: float,
) -> None:
    """One faulty ticket (``params`` sent as request parameters) from its own HTTP client."""
    import tritonclient.http as tc

    from observability.load.client import Outcome, Status

    address = url.removeprefix("http://").rstrip("/")
    client = tc.InferenceServerClient(
        address, connection_timeout=timeout_s, network_timeout=timeout_s
    )
    rng = np.random.default_rng(1000 + idx)
    started = time.monotonic()
    try:
        client.infer(MODEL, _inputs(tc, _ticket(rng)), parameters=dict(params) or None)
        outcome = Outcome("", MODEL, "", Status.OK, started, time.monotonic() - started)
    except Exception as err:  # the outcome is recorded, not raised
        status = Status.TIMEOUT if _status(err) == "timeout" else Status.ERROR
        outcome = Outcome("", MODEL, "", status, started, time.monotonic() - started, str(err))
    finally:
        with contextlib.suppress(Exception):
            client.close()
    add(label, outcome, t0)


def main(argv: list[str] | None = None) -> int:
    args = load_process_args("tests.foreign.hxload", "HTTP", PLANS, "steady", 400, argv)
    run(args.url, args.seed, args.t0, args.until, args.cap, PLANS[args.plan])
    return 0


if __name__ == "__main__":
    sys.exit(main())
