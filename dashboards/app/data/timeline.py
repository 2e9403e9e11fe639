"""One request's waterfall: its Triton stages, every BLS child under it, open calls to "now".

Three sources tell parts of the story and none tells all of it: the verbose log has every
request's queue and execution (and is the only one to show a call that never finished),
Triton's trace file has the stages of finished requests (queue, compute input, infer,
output) on the monotonic clock, and the in-model OTLP spans show each BLS call as its parent
saw it, with callbacks and hung-call reports. Children are found by id prefix (``a.b`` under
``a``), by trace ``parent_id`` and by OTLP trace, so a child missing from one source still
shows from another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from observability import events as ev
from observability.detectors.requests import Requests

__all__ = ["Bar", "Timeline", "build_timeline", "resolve"]

_OTLP_TRACE = re.compile(r"^[0-9a-f]{32}$")
_TRACE_STAGES = (
    ("queue", "QUEUE_START", "COMPUTE_START"),
    ("compute input", "COMPUTE_START", "COMPUTE_INPUT_END"),
    ("compute infer", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START"),
    ("compute output", "COMPUTE_OUTPUT_START", "COMPUTE_END"),
)


@dataclass(frozen=True)
class Bar:
    lane: str
    """The row it is drawn on: request, model and source."""
    request_id: str
    model: str
    depth: int
    stage: str
    source: str
    start_ns: int
    end_ns: int
    open: bool = False
    """Not finished at "now": drawn to now, in red."""
    note: str = ""


@dataclass
class Timeline:
    request_id: str
    now_ns: int
    bars: list[Bar] = field(default_factory=list)
    otlp_trace_ids: list[str] = field(default_factory=list)
    triton_trace_ids: list[int] = field(default_factory=list)

    @property
    def start_ns(self) -> int:
        return min((b.start_ns for b in self.bars), default=self.now_ns)

    @property
    def open_bars(self) -> list[Bar]:
        return [b for b in self.bars if b.open]

    def lanes(self) -> list[str]:
        """Lanes in drawing order: the request first, then each child by its start, each
        request's sources together (log, trace, otlp, bls call, callback)."""
        first: dict[str, int] = {}
        for bar in self.bars:
            first[bar.request_id] = min(first.get(bar.request_id, bar.start_ns), bar.start_ns)
        keys = {
            bar.lane: (
                bar.depth > 0,
                first[bar.request_id],
                bar.request_id,
                _SOURCE_ORDER.get(bar.lane.rsplit("[", 1)[-1].rstrip("]"), 9),
            )
            for bar in self.bars
        }
        return sorted(keys, key=keys.__getitem__)


_SOURCE_ORDER = {"log": 0, "trace": 1, "otlp": 2, "bls call": 3, "callback": 4}


def _in_family(rid: str, root: str) -> bool:
    return rid == root or rid.startswith(root + ".")


def _depth(rid: str, root: str) -> int:
    return rid.count(".") - root.count(".")


def _lane(rid: str, model: str, depth: int, what: str) -> str:
    return f"{'· ' * depth}{rid} → {model or '?'} [{what}]"


def resolve(
    query: str,
    requests: Requests,
    trace_spans: Iterable[ev.TraceSpan],
    otlp_spans: Iterable[ev.OtlpSpan],
) -> str | None:
    """The request id a search means: a request id, an OTLP trace id or a Triton trace id."""
    query = query.strip()
    if not query:
        return None
    if query in requests.by_id:
        return query
    if _OTLP_TRACE.match(query.lower()):
        best = None
        for span in otlp_spans:
            if span.trace_id != query.lower():
                continue
            rid = span.attribute("triton.request_id") or span.attribute(
                "triton.bls.parent.request_id"
            )
            if rid and (best is None or len(rid) < len(best)):
                best = rid
        if best:
            return best
    if query.isdigit():
        by_trace = {s.trace_id: s for s in trace_spans}
        tspan = by_trace.get(int(query))
        while tspan is not None and tspan.parent_id is not None and tspan.parent_id in by_trace:
            tspan = by_trace[tspan.parent_id]
        if tspan is not None and tspan.request_id:
            return tspan.request_id
    for tspan in trace_spans:
        if tspan.request_id == query:
            return query
    return None


def build_timeline(
    root: str,
    requests: Requests,
    trace_spans: Iterable[ev.TraceSpan],
    otlp_spans: Iterable[ev.OtlpSpan],
    now_ns: int,
    clock_offset_ns: int | None,
) -> Timeline:
    """Every bar of ``root`` and its BLS descendants, as of ``now_ns``."""
    tl = Timeline(root, now_ns)
    _from_log(tl, requests)
    _from_trace(tl, list(trace_spans), clock_offset_ns)
    _from_otlp(tl, list(otlp_spans))
    return tl


def _from_log(tl: Timeline, requests: Requests) -> None:
    root, now = tl.request_id, tl.now_ns
    for cycle in requests.lifecycles:
        rid = cycle.request_id
        if not _in_family(rid, root) or cycle.started_ns is None:
            continue
        depth = _depth(rid, root)
        lane = _lane(rid, cycle.model, depth, "log")
        add = tl.bars.append
        if cycle.pending_ns is not None:
            end = cycle.executing_ns or cycle.released_ns
            add(
                Bar(
                    lane,
                    rid,
                    cycle.model,
                    depth,
                    "queue",
                    "log",
                    cycle.pending_ns,
                    end or now,
                    open=end is None,
                    note="queued, never executed" if end is None else "",
                )
            )
        if cycle.executing_ns is not None:
            end = cycle.released_ns
            note = f"on {cycle.instance}" if cycle.instance else ""
            if end is None:
                note = f"still executing after {(now - cycle.executing_ns) / 1e9:.1f} s {note}"
            add(
                Bar(
                    lane,
                    rid,
                    cycle.model,
                    depth,
                    "execute",
                    "log",
                    cycle.executing_ns,
                    end or now,
                    open=end is None,
                    note=note.strip(),
                )
            )


def _from_trace(tl: Timeline, spans: list[ev.TraceSpan], offset: int | None) -> None:
    if offset is None:
        return
    root = tl.request_id
    members = {s.trace_id: s for s in spans if s.request_id and _in_family(s.request_id, root)}
    # Children linked only by parent_id (a child sent without a derived request id).
    children: dict[int, list[ev.TraceSpan]] = {}
    for span in spans:
        if span.parent_id is not None:
            children.setdefault(span.parent_id, []).append(span)
    queue = list(members)
    while queue:
        for child in children.get(queue.pop(), []):
            if child.trace_id not in members:
                members[child.trace_id] = child
                queue.append(child.trace_id)
    for span in members.values():
        rid = span.request_id or f"{root}.<trace {span.trace_id}>"
        depth = _depth(rid, root) if _in_family(rid, root) else 1
        lane = _lane(rid, span.model, depth, "trace")
        tl.triton_trace_ids.append(span.trace_id)
        for stage, begin, end in _TRACE_STAGES:
            t0, t1 = span.timestamp(begin), span.timestamp(end)
            if t0 is not None and t1 is not None:
                tl.bars.append(
                    Bar(lane, rid, span.model, depth, stage, "trace", t0 + offset, t1 + offset)
                )
    tl.triton_trace_ids.sort()


def _otlp_request(span: ev.OtlpSpan) -> str:
    return span.attribute("triton.bls.child.request_id") or span.attribute("triton.request_id")


def _from_otlp(tl: Timeline, spans: list[ev.OtlpSpan]) -> None:
    root, now = tl.request_id, tl.now_ns
    traces = {
        s.trace_id
        for s in spans
        if _in_family(_otlp_request(s), root)
        or _in_family(s.attribute("triton.bls.parent.request_id"), root)
    }
    tl.otlp_trace_ids = sorted(traces)
    mine = [s for s in spans if s.trace_id in traces]
    finished = {_otlp_request(s) for s in mine if s.name.startswith("bls ")}
    for span in mine:
        parent = span.attribute("triton.bls.parent.request_id")
        child_model = span.attribute("triton.bls.child.model")
        if span.name == "bls.call.hung":
            rid = span.attribute("triton.bls.child.request_id") or f"{parent}.?"
            if rid in finished:
                continue
            age = _float(span.attribute("triton.bls.age_s"))
            start = span.start_ns - int(age * 1e9)
            depth = _depth(rid, root)
            note = (
                f"BLS call {parent} → {child_model} reported hung after {age:.1f} s "
                f"(deadline {span.attribute('triton.bls.deadline_s')} s)"
            )
            tl.bars.append(
                Bar(
                    _lane(rid, child_model, depth, "bls call"),
                    rid,
                    child_model,
                    depth,
                    "bls call",
                    "otlp",
                    start,
                    now,
                    open=True,
                    note=note,
                )
            )
            continue
        if span.name.startswith("bls "):
            rid = _otlp_request(span) or f"{parent}.?"
            model, stage, what = child_model, "bls call", "bls call"
        elif span.name.startswith(("bls.callback", "bls.task")):
            rid, model = parent or root, span.attribute("triton.bls.parent.model")
            stage = what = "callback"
        else:
            rid, model = _otlp_request(span) or parent or root, span.service
            stage, what = "execute (model)", "otlp"
        if not _in_family(rid, root):
            continue
        depth = _depth(rid, root)
        note = span.status_message or ("error" if span.status == "ERROR" else "")
        tl.bars.append(
            Bar(
                _lane(rid, model, depth, what),
                rid,
                model,
                depth,
                stage,
                "otlp",
                span.start_ns,
                max(span.end_ns, span.start_ns),
                note=note,
            )
        )


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0
