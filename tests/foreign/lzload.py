"""The ``lz`` family's clients: closed-loop gRPC slots on ``lz_quote``, no request ids.

One load process (``python -m tests.foreign.lzload``, as perf_analyzer is): ``slots``
threads, each with its own ``tritonclient.grpc.InferenceServerClient``, each sending its next
quote as soon as its last one is answered (STOPS [n, 5] FP32, random, n = ``stops``). A plan
may change the load once, ``at_s`` after the capture started:

* ``leave``: slots ``keep`` and above stop sending (clients that go away);
* ``heavy``: every later request carries ``heavy_stops`` stops (a heavier input mix: each
  execution takes about twice as long, nothing is broken);
* ``fault``: slots 0 .. ``faults - 1`` send their next request with the request parameter
  ``lz_fault=route_hang`` (its lz_route call never returns), with ``fault_timeout_s``, then
  stop: the client that sent it waits on it, as a real caller would.

Every loop is bounded in count (``CAP``, shared) and in time (``until``; nothing is sent
after the plan's ``end_s``). Each request's outcome (start on the shared ``time.monotonic()``
clock, status, latency, error, and its label) is one JSON line on stdout, which
``lz_worker`` (a thread of ``record.py``) reads back. No payload is recorded.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.foreign.loadproc import Rows, load_process_args, run_load_process, status_of

__all__ = ["CAP", "MODEL", "PLANS", "Plan", "lz_worker"]

MODEL = "lz_quote"
CAP = 2500
"""The load process's bound on requests, all slots together."""


@dataclass(frozen=True)
class Plan:
    slots: int
    change: str = ""
    """``""`` (none), ``leave``, ``heavy`` or ``fault``."""
    at_s: float = 20.0
    keep: int = 0
    """``leave``: the slots that stay."""
    faults: int = 1
    """``fault``: the slots whose next request is the faulty one."""
    stops: int = 32
    heavy_stops: int = 64
    end_s: float = 42.0
    """No request is sent after this: by default the slots send until the record's end (the
    capture's 40 s and 2 s more), so the queue never empties inside the window."""
    timeout_s: float = 30.0
    fault_timeout_s: float = 60.0

    def text(self) -> str:
        base = (
            f"one load process (`tests.foreign.lzload`): {self.slots} closed-loop gRPC slots on "
            f"`lz_quote` (each sends its next quote as soon as its last is answered), STOPS "
            f"[{self.stops}, 5] FP32 random"
        )
        if self.change == "leave":
            base += f"; at {self.at_s:g} s {self.slots - self.keep} slots leave, {self.keep} stay"
        elif self.change == "heavy":
            base += (
                f"; from {self.at_s:g} s every request carries STOPS [{self.heavy_stops}, 5] "
                "(a heavier input mix)"
            )
        elif self.change == "fault":
            which = "slot 0" if self.faults == 1 else f"slots 0 to {self.faults - 1}"
            base += (
                f"; at {self.at_s:g} s {which} send(s) its next request with `lz_fault="
                f"route_hang` (client_timeout {self.fault_timeout_s:g} s) and waits on it"
            )
        return (
            f"{base}; none sent after {self.end_s:g} s; tritonclient.grpc, client_timeout "
            f"{self.timeout_s:g} s, no request ids"
        )


PLANS: dict[str, Plan] = {
    "c12": Plan(12),
    "c12_leave": Plan(12, "leave", keep=6),
    "c12_heavy": Plan(12, "heavy"),
    "c12_fault": Plan(12, "fault"),
    "c12_fault2": Plan(12, "fault", faults=2),
    "c2_fault": Plan(2, "fault"),
    "c12_fault_ends": Plan(12, "fault", end_s=38.0),
}


def _status(err: BaseException) -> str:
    text = f"{type(err).__name__} {err}".lower()
    return "timeout" if "deadline" in text or "timed out" in text else "error"


def _slot(url: str, i: int, seed: int, t0: float, until: float, out: Rows, plan: Plan) -> None:
    import tritonclient.grpc as tc

    client = tc.InferenceServerClient(url)
    rng = np.random.default_rng(seed)
    try:
        while time.monotonic() < until:
            at = time.monotonic() - t0
            changed = bool(plan.change) and at >= plan.at_s
            if changed and plan.change == "leave" and i >= plan.keep:
                break
            fault = changed and plan.change == "fault" and i < plan.faults
            heavy = changed and plan.change == "heavy"
            n = plan.heavy_stops if heavy else plan.stops
            stops = rng.random((n, 5), dtype=np.float32) * np.float32(10.0)
            item = tc.InferInput("STOPS", [n, 5], "FP32")
            item.set_data_from_numpy(stops)
            if not out.take():
                break
            label = "fault:route_hang" if fault else ("healthy heavy" if heavy else "healthy")
            started = time.monotonic()
            try:
                client.infer(
                    MODEL,
                    [item],
                    parameters={"lz_fault": "route_hang"} if fault else None,
                    client_timeout=plan.fault_timeout_s if fault else plan.timeout_s,
                )
                out.emit(label, started, "ok")
            except Exception as err:  # the outcome is recorded, not raised
                out.emit(label, started, _status(err), str(err))
            if fault:
                break  # its caller waited on it; this slot sends nothing more
    finally:
        with contextlib.suppress(Exception):
            client.close()


def run(url: str, seed: int, t0: float, until: float, cap: int, plan: Plan) -> None:
    out = Rows(cap)
    stop = min(until, t0 + plan.end_s)
    threads = [
        threading.Thread(
            target=_slot, args=(url, i, seed * 100 + i, t0, stop, out, plan), daemon=True
        )
        for i in range(plan.slots)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=max(0.0, until - time.monotonic()) + plan.fault_timeout_s + 5)


def lz_worker(
    url: str,
    seed: int,
    stop: Any,
    until: float,
    add: Callable[[str, object, float], None],
    t0: float,
    delay_s: float,
    plan_name: str,
) -> None:
    """The load process (``run`` in a child), its outcomes handed to ``add`` as they come.
    It is stopped (by its own pid) if it outlives ``until`` by more than a margin."""
    from observability.load.client import Outcome

    stop.wait(delay_s)

    def on_row(row: dict[str, Any]) -> None:
        outcome = Outcome(
            "", MODEL, "", status_of(row), row["started"], row["latency_s"], row["error"]
        )
        add(str(row["label"]), outcome, t0)

    timeout_s = PLANS[plan_name].fault_timeout_s
    run_load_process(
        "tests.foreign.lzload", url, seed, t0, until, CAP, plan_name, timeout_s, on_row
    )


def main(argv: list[str] | None = None) -> int:
    args = load_process_args("tests.foreign.lzload", "gRPC", PLANS, "c12", CAP, argv)
    run(args.url, args.seed, args.t0, args.until, args.cap, PLANS[args.plan])
    return 0


if __name__ == "__main__":
    sys.exit(main())
