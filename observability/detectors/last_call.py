"""The last BLS call a stuck batch made, when none of its calls is open any more.

A parent can wait forever on a call that Triton already released: a decoupled child whose
``execute`` returns before it sends the response with the final flag (Triton releases a
decoupled request when ``execute`` returns, whatever it sent), or a response callback that is
never run. The log then shows the parent's batch open and no call of it open, so the waits
analysis has nothing to name. What it still shows is the batch's last call: the last request
admitted for one of its model's callees while the batch was the newest open batch of its model
(a parent issues its calls while it runs), and that call's execution. Its ``add response
output`` lines count its responses' tensors; they carry no model or instance, so they are
counted only for an execution within which no other one started or ended, and compared with
the same model's other such executions: fewer than usual is the signature of a stream cut
short.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from statistics import median

from observability import events as ev
from observability.detectors.instances import Admitted, Execution, Instances
from observability.detectors.streams import decoupled_models
from observability.detectors.waits import callees
from observability.detectors.window import Window

__all__ = ["LastCall", "last_call"]

_MIN_USUAL = 3
"""Lone executions of the child's model needed to say what it usually adds."""


@dataclass(frozen=True)
class LastCall:
    request: Admitted
    execution: Execution
    """The call's released execution."""
    outputs: int | None
    """Response outputs its execution added; None when another execution started or ended
    within it (the lines cannot be told apart)."""
    usual: float | None
    """The median of the same per request over the model's other such executions, times
    this batch's requests (None: too few)."""

    @property
    def short(self) -> bool:
        return self.outputs is not None and self.usual is not None and self.outputs < self.usual

    def describe(self) -> str:
        x = self.execution
        text = (
            f"its last BLS call, to {x.model}"
            + (f" '{self.request.request_id}'" if self.request.request_id else "")
            + f", ran on {x.instance} and was released"
        )
        if self.short:
            text += (
                f" after {self.outputs} response output(s) where {x.model}'s executions "
                f"usually add {self.usual:g}: its execute returned without answering (a "
                "decoupled model that never sent its final response, or an execute that "
                "returned None for a request), and the caller waits for it forever"
            )
        else:
            text += (
                ": a decoupled child that never sends its final flag, or a response callback "
                "that is never run, leaves the caller waiting"
            )
        return text


def last_call(window: Window, inst: Instances, stuck: list[Execution]) -> LastCall | None:
    """The last released call of any of ``stuck`` (batches of one model), or None."""
    if not stuck:
        return None
    model = stuck[0].model
    called = callees(inst).get(model)
    if called is None:  # too few batches to learn what it calls: any request would do
        return None  # (zoo_rare_model_hang: a rare leaf given a client's request as its call)
    since = min(s.start_ns for s in stuck)
    done = sorted(
        ((r, x) for x in inst.executions
         if x.end_ns is not None and x.end_ns > since and x.model != model
         and x.model in called
         for r in x.requests
         if r.prepared_ns > since and (r.prepared_ns, r.offset) not in inst.steps),
        key=lambda rx: rx[0].prepared_ns,
        reverse=True,
    )  # fmt: skip
    owner = _Owners([e for e in inst.executions if e.model == model])
    stuck_ids = {id(s) for s in stuck}
    mine = [rx for rx in done if id(owner.at(rx[0].prepared_ns)) in stuck_ids]
    # A call to a decoupled model is released when its execute returns, its responses
    # still to come; a plain call released was answered. The batch waits on the former
    # (gen_llm_stall_bls: gen_bls's call to gen_llm, then four answered postprocessing calls).
    decoupled = decoupled_models(window)
    best = next((rx for rx in mine if decoupled.get(rx[1].model)), mine[0] if mine else None)
    if best is None:
        return None
    request, execution = best
    counts = _lone_outputs(window, inst, execution.model, stuck)
    outputs = counts.get(id(execution))
    # Per request of each batch: a batch of 2 adds two thirds of a batch of 3's outputs
    # (xl_callback_error: xl_translate's last call, a batch of 2 with 2, is not short).
    sizes = {id(x): max(1, x.count) for x in inst.executions if id(x) in counts}
    others = [n / sizes[i] for i, n in counts.items() if i != id(execution)]
    usual = float(median(others)) * max(1, execution.count) if len(others) >= _MIN_USUAL else None
    return LastCall(request, execution, outputs, usual)


class _Owners:
    """Which batch of the caller's model issued a call: the one that started last before the
    call among those open then (a parent issues its calls while it runs)."""

    _LOOK_BACK = 256

    def __init__(self, batches: list[Execution]) -> None:
        self._batches = sorted(batches, key=lambda b: b.start_ns)
        self._starts = [b.start_ns for b in self._batches]

    def at(self, at_ns: int) -> Execution | None:
        i = bisect_left(self._starts, at_ns) - 1
        for b in reversed(self._batches[max(0, i - self._LOOK_BACK) : i + 1]):
            if b.end_ns is None or b.end_ns >= at_ns:
                return b
        return None


def _lone_outputs(
    window: Window, inst: Instances, model: str, stuck: list[Execution]
) -> dict[int, int]:
    """id(execution) -> response outputs added during it, for the model's executions within
    which no other execution started or ended. A python model adds its outputs while it
    runs (decoupled) or right before its release; a batch open across the whole interval (a
    parent awaiting its calls) adds its own at its end, outside it."""
    times = [o.header.at_ns for o in window.logs(ev.ResponseOutput)]
    ignore = {id(s) for s in stuck}
    marks = sorted(
        t
        for e in inst.executions
        if id(e) not in ignore
        for t in (e.start_ns, e.end_ns)
        if t is not None
    )
    out: dict[int, int] = {}
    for x in inst.executions:
        if x.model != model or x.end_ns is None or id(x) in ignore:
            continue
        inside = bisect_right(marks, x.end_ns) - bisect_left(marks, x.start_ns)
        if inside > 2:  # its own start and end only
            continue
        out[id(x)] = bisect_right(times, x.end_ns) - bisect_left(times, x.start_ns)
    return out
