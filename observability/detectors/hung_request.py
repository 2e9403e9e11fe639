"""hung_request: a request executing past its deadline, named with the BLS call it waits on.

Why from the log: a hung request never reaches a trace file or an OTLP span (both are written
when a request ends) and is not in ``nv_inference_pending_request_count`` (that counts queued
requests only). The verbose log's ``PENDING to EXECUTING`` without a later ``EXECUTING to
RELEASED`` is the one signal Triton leaves while the hang is still going on.

One finding per stuck *client* request: a BLS child (``<parent>.<x>``) or ensemble step (same
id) that is still open under a hung parent is named in the parent's finding, not reported
again, so one hang is one alert. A child is reported on its own only when its parent is not
itself hung (released, or not in the window). A deadlock's parent is a hung request too: this
finding says the request is stuck and which child it waits on (queued, never started);
``bls_deadlock`` says why that child can never start.
"""

from __future__ import annotations

from dataclasses import dataclass

from observability.detectors.requests import Lifecycle, Requests, log_ref, requests_of
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["HungRequestDetector"]

ADVICE = (
    "The python backend has no execution timeout (InferenceRequest(timeout=...) only applies "
    "while the child is queued), so a stuck execute holds its instance until the stub dies; "
    "an async execute holds it too (server#7888). Bound every BLS call: "
    "`await asyncio.wait_for(req.async_exec(), timeout=...)` (or a thread with a timeout for "
    "exec()) and answer a pb_utils.TritonError on expiry; look at the child model named here "
    "(its execute is stuck or its response was never sent); add instances of the waiting "
    "model so one hang does not take its whole capacity; give clients a deadline."
)


@dataclass
class HungRequestDetector:
    """A request EXECUTING for more than ``deadline_s`` at the window's end."""

    deadline_s: float = 10.0
    max_children_named: int = 5
    kind: str = "hung_request"

    def detect(self, window: Window) -> list[Finding]:
        reqs = requests_of(window)
        now = window.until_ns
        limit = int(self.deadline_s * 1e9)
        hung = [
            c
            for c in reqs.lifecycles
            if c.open and c.executing_ns is not None and now - c.executing_ns > limit
        ]
        hung_ids = {c.request_id for c in hung}
        children = reqs.open_children(hung_ids)
        reported: set[str] = set()
        out = []
        for cycle in hung:
            rid = cycle.request_id
            if rid in reported or any(a in hung_ids for a in reqs.ancestors(rid)):
                continue  # named in its parent's finding
            reported.add(rid)
            outer = reqs.outermost(rid)
            if outer is None or not outer.open or outer.executing_ns is None:
                # An id reused by another request (clients do reuse ids): report this one.
                outer = cycle
            steps = [c for c in reqs.by_id[rid] if c.open and c is not outer]
            waits = _leaves(reqs, children, rid) + steps
            out.append(self._finding(window, reqs, outer, waits))
        return out

    def _finding(
        self, window: Window, reqs: Requests, cycle: Lifecycle, waits: list[Lifecycle]
    ) -> Finding:
        now = window.until_ns
        assert cycle.executing_ns is not None
        age = (now - cycle.executing_ns) / 1e9
        where = f" on {cycle.instance}" if cycle.instance else ""
        model = cycle.model or "unknown"
        summary = (
            f"Request '{cycle.request_id}' to {model} has been executing for {age:.1f} s"
            f"{where} without being released"
        )
        if waits:
            summary += "; it waits on " + ", ".join(
                _describe(c, now) for c in waits[: self.max_children_named]
            )
            if len(waits) > self.max_children_named:
                summary += f" and {len(waits) - self.max_children_named} more"
        else:
            summary += "; no BLS child of it is open: its execute is stuck or a response it "
            summary += "awaits was never sent"
        evidence = [_evidence(cycle, "EXECUTING")]
        evidence += [_evidence(c, c.state) for c in waits[: self.max_children_named]]
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=cycle.instance,
            request_id=cycle.request_id,
            trace_id=_trace_id(window, cycle.request_id),
            first_seen_ns=cycle.executing_ns + int(self.deadline_s * 1e9),
            last_seen_ns=now,
            summary=summary + ".",
            evidence=tuple(evidence),
            advice=ADVICE,
        )


def _leaves(reqs: Requests, children: dict[str, list[Lifecycle]], rid: str) -> list[Lifecycle]:
    """The deepest open descendants: what the request is really waiting on."""
    out: list[Lifecycle] = []
    stack = list(children.get(rid, ()))
    seen: set[int] = set()
    while stack:
        child = stack.pop(0)
        if id(child) in seen:
            continue
        seen.add(id(child))
        deeper = children.get(child.request_id, [])
        if deeper:
            stack.extend(deeper)
        else:
            out.append(child)
    return out


def _describe(child: Lifecycle, now: int) -> str:
    model = child.model or "unknown model"
    if child.state == "PENDING" and child.pending_ns is not None:
        return (
            f"BLS call '{child.request_id}' to {model}, queued for "
            f"{(now - child.pending_ns) / 1e9:.1f} s and never started"
        )
    if child.executing_ns is not None:
        where = f" on {child.instance}" if child.instance else ""
        return (
            f"BLS call '{child.request_id}' to {model}, executing for "
            f"{(now - child.executing_ns) / 1e9:.1f} s{where}"
        )
    return f"BLS call '{child.request_id}' to {model}"


def _evidence(cycle: Lifecycle, state: str) -> Evidence:
    if state == "EXECUTING" and cycle.executing_ns is not None:
        at, offset, text = cycle.executing_ns, cycle.executing_offset, "PENDING to EXECUTING"
    else:
        at, offset, text = (cycle.pending_ns or 0), cycle.pending_offset, "INITIALIZED to PENDING"
    detail = f"[request id: {cycle.request_id}] Setting state from {text}"
    if cycle.model:
        detail += f" (model {cycle.model}"
        detail += f", instance {cycle.instance})" if cycle.instance else ")"
    detail += "; no EXECUTING to RELEASED since"
    return Evidence("log", at, log_ref(offset) if offset is not None else cycle.request_id, detail)


def _trace_id(window: Window, request_id: str) -> str | None:
    """Triton's trace id of the request, from its own span or a finished child's parent_id
    (a hung request never has its own span: spans are written when a request ends)."""
    prefix = request_id + "."
    for span in window.trace_spans:
        if span.request_id == request_id and span.parent_id is None:
            return str(span.trace_id)
        if span.parent_id is not None and span.request_id.startswith(prefix):
            return str(span.parent_id)
    return None
