"""The ``sw`` family's clients: perf_analyzer's two load modes over gRPC, no request ids.

The load generator is **a process of its own** (``python -m tests.foreign.swload``), as
perf_analyzer is, driving ``sw_auction`` in one of perf_analyzer's two modes:

* **concurrency** (``--concurrency-range 1:16:x``): closed-loop slots, each with its own
  ``tritonclient.grpc.InferenceServerClient``, each sending its next request as soon as its
  last one is answered; the number of active slots steps over the window (a sweep
  1 -> 2 -> 4 -> 8 -> 16, or one constant level);
* **rate** (``--request-rate-range R``): open loop, requests sent on a fixed schedule
  (``--request-distribution poisson``: exponential gaps of mean ``1/R``, from a seeded
  generator, whatever the latency) by a scheduling thread through ``async_infer()`` (gRPC's
  own threads deliver the answers), so above capacity the requests in flight grow without
  bound; the rate may step.

Beside it, ``side`` closed-loop slots call the pre-bid ensemble ``sw_prebid`` for the whole
window (a second perf_analyzer at ``--concurrency-range 1``). Every loop is bounded in count
(``cap``, shared by the process) and in time (``until``; the plan's ``end_s`` ends sending
earlier); calls still open at the end get the plan's timeout, then are written down as
``open``. Each request's outcome (start on the shared ``time.monotonic()`` clock, status,
latency, error, and the load level it was sent at, in its label) is one JSON line on stdout,
which ``sw_worker`` (a thread of ``record.py``) reads back. No payload is recorded.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from tests.foreign.loadproc import Rows, load_process_args, run_load_process, status_of

__all__ = ["CAP", "PLANS", "Plan", "sw_inject", "sw_worker"]

MODEL = "sw_auction"
SIDE_MODEL = "sw_prebid"
CAP = 3000
"""The load process's bound on requests, all slots together (an open loop at 50/s for 15 s
sends 750)."""


@dataclass(frozen=True)
class Plan:
    mode: str
    """``concurrency`` (closed-loop slots) or ``rate`` (open loop, requests a second)."""
    steps: tuple[tuple[float, float], ...]
    """``(seconds after the capture started, slots or requests a second from then on)``,
    the first at 0."""
    end_s: float
    """No request to sw_auction is sent after this (perf_analyzer's last step ends)."""
    side: int = 1
    """Closed-loop slots calling the ensemble ``sw_prebid`` for the whole window."""
    timeout_s: float = 30.0
    """Each request's ``client_timeout``."""

    def target(self, at_s: float) -> float:
        if at_s >= self.end_s:
            return 0
        n = self.steps[0][1]
        for start, value in self.steps:
            if at_s >= start:
                n = value
        return n

    @property
    def most(self) -> int:
        return int(max(v for _, v in self.steps))

    def text(self) -> str:
        unit = "slot(s)" if self.mode == "concurrency" else "request(s)/s"
        steps = ", ".join(f"{v:g} {unit} from {s:g} s" for s, v in self.steps)
        how = (
            "closed-loop slots (each sends its next request as soon as its last is answered)"
            if self.mode == "concurrency"
            else "an open loop (Poisson arrivals at the plan's rate, whatever the latency)"
        )
        return (
            f"one load process (`tests.foreign.swload`, perf_analyzer's {self.mode} mode): "
            f"`sw_auction` by {how}: {steps}, none after {self.end_s:g} s; beside it "
            f"{self.side} closed-loop slot(s) on the ensemble `sw_prebid` for the whole "
            f"window; tritonclient.grpc, client_timeout {self.timeout_s:g} s"
        )


PLANS: dict[str, Plan] = {
    "sweep": Plan("concurrency", ((0, 1), (6, 2), (12, 4), (18, 8), (24, 16)), end_s=32),
    "c8": Plan("concurrency", ((0, 8),), end_s=38),
    "rate_ok": Plan("rate", ((0, 9),), end_s=36),
    "rate_over": Plan("rate", ((0, 8), (8, 18), (23, 4)), end_s=38),
}


def _bid(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((1, 20)).astype(np.float32)


def _inputs(tc: Any, bid: np.ndarray) -> list[Any]:
    item = tc.InferInput("BID_REQUEST", list(bid.shape), "FP32")
    item.set_data_from_numpy(bid)
    return [item]


def _status(err: BaseException) -> str:
    text = f"{type(err).__name__} {err}".lower()
    return "timeout" if "deadline" in text or "timed out" in text else "error"


def _level(plan: Plan, value: float) -> str:
    return f"c{value:g}" if plan.mode == "concurrency" else f"{value:g}/s"


def _slot(
    url: str,
    model: str,
    label: Callable[[], str | None],
    seed: int,
    until: float,
    out: Rows,
    timeout_s: float,
) -> None:
    """One closed-loop slot: while ``label()`` names the level, send and wait, at once again."""
    import tritonclient.grpc as tc

    client = tc.InferenceServerClient(url)
    rng = np.random.default_rng(seed)
    try:
        while time.monotonic() < until:
            name = label()
            if name is None:
                time.sleep(0.05)
                continue
            if not out.take():
                break
            started = time.monotonic()
            try:
                client.infer(model, _inputs(tc, _bid(rng)), client_timeout=timeout_s)
                out.emit(name, started, "ok")
            except Exception as err:  # the outcome is recorded, not raised
                out.emit(name, started, _status(err), str(err))
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _rate(url: str, seed: int, t0: float, until: float, out: Rows, plan: Plan) -> None:
    """The open loop: one request each ``1 / rate`` s on the schedule, answers by callback."""
    import tritonclient.grpc as tc

    client = tc.InferenceServerClient(url)
    rng = np.random.default_rng(seed)
    gaps = np.random.default_rng(seed + 7)  # perf_analyzer's poisson request distribution
    open_: dict[int, float] = {}
    lock = threading.Lock()

    def done(key: int, name: str, started: float, result: Any, error: Any) -> None:
        with lock:
            open_.pop(key, None)
        if error is None:
            out.emit(name, started, "ok")
        else:
            out.emit(name, started, _status(error), str(error))

    try:
        due = time.monotonic()
        n = 0
        while True:
            now = time.monotonic()
            rate = plan.target(now - t0)
            if now >= until or rate <= 0:
                break
            if now < due:
                time.sleep(min(due - now, 0.05))
                continue
            if not out.take():
                break
            name = f"healthy {_level(plan, rate)}"
            started = time.monotonic()
            with lock:
                open_[n] = started
            try:
                client.async_infer(
                    MODEL,
                    _inputs(tc, _bid(rng)),
                    callback=partial(done, n, name, started),  # called with result=, error=
                    client_timeout=plan.timeout_s,
                )
            except Exception as err:  # refused before it was sent
                with lock:
                    open_.pop(n, None)
                out.emit(name, started, _status(err), str(err))
            n += 1
            due += gaps.exponential(1.0 / rate)  # the schedule, not the answers, sets it
        deadline = time.monotonic() + plan.timeout_s + 1
        while time.monotonic() < deadline:
            with lock:
                if not open_:
                    break
            time.sleep(0.1)
        with lock:
            left = list(open_.values())
        for started in left:
            out.emit("healthy:open at the end", started, "open", "still in flight")
    finally:
        with contextlib.suppress(Exception):
            client.close()


def run(url: str, seed: int, t0: float, until: float, cap: int, plan: Plan) -> None:
    """The load process: the plan's slots or schedule on sw_auction, the side slots on
    sw_prebid; one JSON line per request on stdout."""
    out = Rows(cap)
    threads: list[threading.Thread] = []
    stop_main = min(until, t0 + plan.end_s)

    def side_label() -> str:
        return f"healthy:{SIDE_MODEL}"

    for i in range(plan.side):
        threads.append(
            threading.Thread(
                target=_slot,
                args=(url, SIDE_MODEL, side_label, seed * 100 + 50 + i, until, out, plan.timeout_s),
                daemon=True,
            )
        )
    if plan.mode == "concurrency":
        for i in range(plan.most):

            def label(i: int = i) -> str | None:
                n = plan.target(time.monotonic() - t0)
                return f"healthy {_level(plan, n)}" if i < n else None

            threads.append(
                threading.Thread(
                    target=_slot,
                    args=(url, MODEL, label, seed * 100 + i, stop_main, out, plan.timeout_s),
                    daemon=True,
                )
            )
    else:
        threads.append(
            threading.Thread(target=_rate, args=(url, seed, t0, stop_main, out, plan), daemon=True)
        )
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=max(0.0, until - time.monotonic()) + plan.timeout_s + 5)


def sw_worker(
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
    """The load process (``run`` in a child, started ``delay_s`` after ``t0``), its outcomes
    handed to ``add`` as they come. It is stopped (by its own pid) if it outlives ``until``
    by more than its timeout and a margin."""
    from observability.load.client import Outcome

    stop.wait(delay_s)

    def on_row(row: dict[str, Any]) -> None:
        label = str(row["label"])
        model = SIDE_MODEL if SIDE_MODEL in label else MODEL
        outcome = Outcome(
            "", model, "", status_of(row), row["started"], row["latency_s"], row["error"]
        )
        add(label, outcome, t0)

    timeout_s = PLANS[plan_name].timeout_s
    run_load_process(
        "tests.foreign.swload", url, seed, t0, until, cap, plan_name, timeout_s, on_row
    )


def sw_inject(
    url: str,
    idx: int,
    params: Mapping[str, Any],
    timeout_s: float,
    label: str,
    add: Callable[[str, object, float], None],
    t0: float,
) -> None:
    """One faulty bid request (``params`` sent as request parameters) from its own client."""
    import tritonclient.grpc as tc

    from observability.load.client import Outcome, Status

    client = tc.InferenceServerClient(url)
    rng = np.random.default_rng(1000 + idx)
    started = time.monotonic()
    try:
        client.infer(
            MODEL,
            _inputs(tc, _bid(rng)),
            parameters=dict(params) or None,
            client_timeout=timeout_s,
        )
        outcome = Outcome("", MODEL, "", Status.OK, started, time.monotonic() - started)
    except Exception as err:  # the outcome is recorded, not raised
        status = Status.TIMEOUT if _status(err) == "timeout" else Status.ERROR
        outcome = Outcome("", MODEL, "", status, started, time.monotonic() - started, str(err))
    finally:
        with contextlib.suppress(Exception):
            client.close()
    add(label, outcome, t0)


def main(argv: list[str] | None = None) -> int:
    args = load_process_args("tests.foreign.swload", "gRPC", PLANS, "sweep", CAP, argv)
    run(args.url, args.seed, args.t0, args.until, args.cap, PLANS[args.plan])
    return 0


if __name__ == "__main__":
    sys.exit(main())
