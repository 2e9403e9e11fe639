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

Without request ids (real clients send none, ``pb_utils.InferenceRequest`` children have none)
the same story is read from instance lifecycles (``instances.py``, ``waits.py``): a batch that
holds its instance past its model's deadline is stuck; its BLS calls are the requests admitted
after it started and still open; one finding per model names its stuck instances, what they
wait on and how sure that is. Requests queued behind a stuck model past their deadline are its
victims, counted (and named where they have ids) in the finding of what blocks them.

Deadlines fit the model (``deadlines.py``): ``deadline_s`` is the ceiling, below it a request
is hung when the batch holding it (or the call it waits on) is stuck past its own model's
learned deadline.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field

from observability import events as ev
from observability.detectors.callback_error import held_batch, tracebacks
from observability.detectors.capacity import CapacityDrop, capacity_drops
from observability.detectors.deadlines import DeadlinePolicy
from observability.detectors.instances import Execution, version_text
from observability.detectors.last_call import LastCall, last_call
from observability.detectors.loads import clock
from observability.detectors.lockstep import LockstepLag, lockstep_lags
from observability.detectors.model_stalled import logged_models
from observability.detectors.ordering import HeldResponses, held_responses
from observability.detectors.origins import STEP
from observability.detectors.requests import (
    Lifecycle,
    Requests,
    execution_evidence,
    log_ref,
    requests_of,
)
from observability.detectors.waits import Call, Waits, callees, origins_of, waits_of
from observability.detectors.window import Window, per_window
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


_QUIET_ADVICE = (
    "Start Triton with --log-verbose 1 (or set it at runtime: POST /v2/logging "
    '{"log_verbose_level": 1}) to see which instance and which BLS call hold it; '
    "a py-spy dump of the model's stub processes shows the stuck frame now. "
    "Set a timeout on BLS calls (InferenceRequest(timeout=...)) so one hung child "
    "cannot hold an instance forever."
)
"""What to do about a hang that /metrics alone shows (capacity.py, lockstep.py)."""


@dataclass
class HungRequestDetector:
    """A request (or an id-less batch) executing past its deadline at the window's end."""

    deadline_s: float = 10.0
    """The ceiling: past it every open request is hung, whatever its model's latency."""
    floor_s: float = 2.0
    multiple: float = 10.0
    deadlines: Mapping[str, float] = field(default_factory=dict)
    """Per-model deadlines that override the learned ones."""
    max_children_named: int = 5
    released_min_s: float = 15.0
    """A released batch held longer than this, and ``released_multiple`` deadlines, is a
    hang that ended (a warning)."""
    released_multiple: float = 3.0
    kind: str = "hung_request"

    @property
    def policy(self) -> DeadlinePolicy:
        return DeadlinePolicy(
            self.deadline_s, self.floor_s, self.multiple, overrides=self.deadlines
        )

    def detect(self, window: Window) -> list[Finding]:
        reqs = requests_of(window)
        waits = waits_of(window, self.policy)
        now = window.until_ns
        by_id = _executions_by_id(waits)
        hung = [c for c in reqs.lifecycles if self._hung(c, now, waits, by_id)]
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
            # An ensemble's steps carry its id, on other models; another open request of the
            # same model under this id is a client reusing ids (PyTriton's ModelClient numbers
            # its requests per client: pt_embed_hang), not a step.
            steps = [
                c
                for c in reqs.by_id[rid]
                if c.open and c is not outer and not (c.model == outer.model and outer.model)
            ]
            waits_on = _leaves(reqs, children, rid) + steps
            execution = by_id.get(rid)
            calls = waits.leaves(execution) if execution is not None and not waits_on else []
            finding = self._finding(window, reqs, outer, waits_on, calls, waits, execution)
            out.append(finding)
        out += self._idless(window, reqs, waits, reported)
        # A hang that ended is told when none is open: beside one that is, it is most
        # likely a caller the open one held for a while, and the open one is the page.
        out = out or self._released(window, waits)
        named = {f.model for f in out}
        out += [
            self._held_finding(held, now)
            for held in held_responses(window, waits.stuck)
            if held.model not in named
        ]
        logged = logged_models(window)
        quiet = [self._capacity_finding(d) for d in capacity_drops(window, logged)]
        lost = {f.model for f in quiet}
        level = [
            self._lockstep_finding(lag, model)
            for lag in lockstep_lags(window, logged)
            for model in lag.models
            if model not in lost
        ]
        return out + quiet + level

    def _held_finding(self, held: HeldResponses, now: int) -> Finding:
        """An ordered model's responses held behind its batch that never returned
        (``ordering.py``): its own clients wait on it, though its other instances serve."""
        behind, model = held.behind, held.model
        released = held.released
        n = len(held.held)
        since = held.since_ns
        others = sorted({e.instance for e in released})
        summary = (
            f"{model} has sent no response to the {n} request{'s' if n > 1 else ''} it "
            f"finished since {clock(since)} ({(now - since) / 1e9:.0f} s): its batch of "
            f"{behind.count} on {behind.instance} started then and has not returned "
            f"({behind.age_s(now):.1f} s), and {model} keeps its responses in the order its "
            "requests came (dynamic_batching.preserve_ordering, in its config at load), so "
            f"every later response waits for that batch. {', '.join(others)} executed and "
            f"released them (the last at {clock(released[-1].end_ns or now)}); their clients "
            "wait as long as the hung batch does."
        )
        evidence = [
            execution_evidence(behind, now),
            Evidence(
                "log",
                held.config.header.at_ns,
                log_ref(held.config.header.offset),
                f"{model}'s config at load: dynamic_batching.preserve_ordering true",
            ),
        ]
        evidence += [
            Evidence(
                "log",
                e.end_ns or now,
                log_ref(e.end_offset if e.end_offset is not None else e.offset),
                f"{e.instance} released {e.count} request(s) that came after the hung batch; "
                "no response was sent",
            )
            for e in (released[:1] + released[-1:] if len(released) > 1 else released)
        ]
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=behind.instance,
            summary=summary,
            advice=(
                "One request that never returns holds every later response of a model that "
                "preserves ordering, whatever instance served it. Bound the hung work (the "
                "batch's execute, or the BLS call it waits on: asyncio.wait_for, a timeout on "
                "the call), or turn preserve_ordering off where the clients do not need "
                "responses in request order; give clients a deadline."
            ),
            first_seen_ns=released[0].end_ns or now,
            last_seen_ns=now,
            evidence=tuple(evidence),
        )

    def _capacity_finding(self, drop: CapacityDrop) -> Finding:
        """A model without verbose-log lines that lost a third or more of its capacity at
        once while requests queued for it (``capacity.py``): at ``--log-verbose 0`` the one
        sign of an instance held by a request that never finishes while its siblings serve."""
        since = (drop.last_ns - drop.at_ns) / 1e9
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=drop.model,
            summary=(
                f"{drop.model} has completed {drop.rate_after:.1f} requests/s since "
                f"{clock(drop.at_ns)} ({since:.0f} s), against {drop.rate_before:.1f}/s just "
                f"before, while requests queued for it at every scrape (median "
                f"{drop.pending_before:g} before, {drop.pending_after:g} since): part of its "
                "capacity stopped at once, most likely an instance held by a request that "
                "never finishes (a stuck execute, a BLS call that never returns) while its "
                "other instances serve on, or executions that became that much slower. "
                "Without Triton's verbose log the request and the instance cannot be named."
            ),
            advice=_QUIET_ADVICE,
            first_seen_ns=drop.at_ns,
            last_seen_ns=drop.last_ns,
            evidence=(
                Evidence(
                    "metrics",
                    drop.at_ns,
                    f'nv_inference_request_success{{model="{drop.model}"}}',
                    f"{drop.rate_before:.2f}/s before, {drop.rate_after:.2f}/s after",
                ),
                Evidence(
                    "metrics",
                    drop.last_ns,
                    f'nv_inference_pending_request_count{{model="{drop.model}"}}',
                    f"above 0 at every scrape; median {drop.pending_before:g} before, "
                    f"{drop.pending_after:g} after",
                ),
            ),
        )

    def _lockstep_finding(self, lag: LockstepLag, model: str) -> Finding:
        """A model short of a sibling it ran level with, for good, beside another one
        (``lockstep.py``): at ``--log-verbose 0`` under a light load, the one sign of a BLS
        call that never returned and the caller it holds."""
        others = [m for m in lag.models if m != model]
        short = f"{lag.short} request{'s' if lag.short > 1 else ''}"
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            summary=(
                f"{model} has been {short} short of {lag.sibling} since {clock(lag.at_ns)} "
                f"({(lag.last_ns - lag.at_ns) / 1e9:.0f} s), and so has {', '.join(others)}: "
                f"they had finished exactly as many requests as {lag.sibling} at every scrape "
                f"for {(lag.at_ns - lag.level_since_ns) / 1e9:.0f} s; since, {lag.sibling} "
                f"finished {lag.sibling_done} more and they stayed exactly {lag.short} "
                "behind. Requests that never finished: most likely a BLS call that never "
                f"returned (to {model} or to {', '.join(others)}) and the caller waiting on it, "
                f"which calls {lag.sibling} beside it. Without Triton's verbose log the request "
                "and the instance cannot be named."
            ),
            advice=_QUIET_ADVICE,
            first_seen_ns=lag.at_ns,
            last_seen_ns=lag.last_ns,
            evidence=tuple(
                Evidence(
                    "metrics",
                    lag.at_ns,
                    f'nv_inference_request_success{{model="{m}"}} + '
                    f'nv_inference_request_failure{{model="{m}"}}',
                    (
                        f"level with the others from {clock(lag.level_since_ns)}; "
                        f"{lag.sibling_done} more from {clock(lag.at_ns)} to the last scrape"
                        if m == lag.sibling
                        else f"level with {lag.sibling}'s from {clock(lag.level_since_ns)}; "
                        f"{lag.short} short of it from {clock(lag.at_ns)} to the last scrape"
                    ),
                )
                for m in (lag.sibling, model, *others)
            ),
        )

    def _released(self, window: Window, waits: Waits) -> list[Finding]:
        """One warning per model for a batch it held far past its deadline and then
        released: a hang that ended (ops_enrich_hang_released: 40 s on the only instance,
        then the queue drained). Its callers waited or timed out, and nothing open is left
        to tell it. Not a cold start, nor a batch that only waited on a callee's batch as
        long (that one is the finding), nor one within ``released_min_s``; only when no hang
        is open (see ``detect``)."""
        inst = waits.instances
        calls = callees(inst)
        done = [e for e in inst.executions if e.end_ns is not None and not e.died]
        long: dict[str, list[Execution]] = {}
        for e in done:
            limit = max(self.released_min_s, self.released_multiple * waits.deadline_s(e.model))
            if not e.first_after_load and e.age_s(window.until_ns) > limit:
                long.setdefault(e.model, []).append(e)
        held = [x for xs in long.values() for x in xs] + list(inst.open.values())
        out = []
        for model, batches in sorted(long.items()):
            own = [
                e
                for e in batches
                if not any(x.model in calls.get(model, ()) and _within(x, e) for x in held)
            ]
            if own:
                out.append(self._released_finding(waits, model, own))
        return out

    def _released_finding(self, waits: Waits, model: str, batches: list[Execution]) -> Finding:
        worst = max(batches, key=lambda e: (e.end_ns or 0) - e.start_ns)
        assert worst.end_ns is not None
        took = (worst.end_ns - worst.start_ns) / 1e9
        deadline = waits.deadline_s(model)
        queued = sum(
            1
            for e in waits.instances.executions
            if e.model == model
            for r in e.requests
            if worst.start_ns < r.prepared_ns < worst.end_ns and e.start_ns >= worst.end_ns
        )
        summary = (
            f"{model} held a batch for {took:.1f} s on {worst.instance} ({clock(worst.start_ns)} "
            f"to {clock(worst.end_ns)}), past its {deadline:.3g} s deadline, and then released "
            "it: a hang that ended"
            + (f", {len(batches)} such batches in all" if len(batches) > 1 else "")
            + (f"; {queued} request(s) admitted meanwhile ran only after it" if queued else "")
            + ". Its callers waited that long, or timed out; deadline: "
            + waits.explain(model)
            + "."
        )
        return Finding(
            kind=self.kind,
            severity=Severity.WARNING,
            model=model,
            instance=worst.instance,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=worst.start_ns,
            last_seen_ns=worst.end_ns,
            evidence=(
                Evidence(
                    "log",
                    worst.start_ns,
                    log_ref(worst.offset),
                    f"model {model}, instance {worst.instance}, executing {worst.count} requests",
                ),
                Evidence(
                    "log",
                    worst.end_ns,
                    log_ref(worst.end_offset if worst.end_offset is not None else worst.offset),
                    f"released {worst.count} requests {took:.1f} s later",
                ),
            ),
        )

    def _hung(self, c: Lifecycle, now: int, waits: Waits, by_id: dict[str, Execution]) -> bool:
        if not c.open or c.executing_ns is None:
            return False
        if now - c.executing_ns > self.policy.ceiling(c.model) * 1e9:
            return True
        execution = by_id.get(c.request_id)
        return execution is not None and waits.is_stuck(execution)

    def _idless(
        self, window: Window, reqs: Requests, waits: Waits, reported: set[str]
    ) -> list[Finding]:
        """One finding per model for stuck batches whose requests no state line follows:
        they carry no id, or the release writes no state lines (before 23.x only
        ``prepared:``)."""
        top: dict[str, list[Execution]] = {}
        for e in waits.stuck:
            if any(c.executing_ns is not None for i in e.ids for c in reqs.by_id.get(i, ())):
                continue  # the lifecycles of its ids tell it
            if waits.is_call(e):
                continue  # named in the finding of the batch that called it
            top.setdefault(e.model, []).append(e)
        return [self._model_finding(window, waits, m, es) for m, es in top.items()]

    def _model_finding(
        self, window: Window, waits: Waits, model: str, stuck: list[Execution]
    ) -> Finding:
        now = window.until_ns
        known = len(waits.instances.model_instances.get(model, ()))
        versions = waits.instances.versions
        held = ", ".join(
            f"{e.instance}{version_text(e, versions)} ({e.age_s(now):.1f} s, batch of {e.count})"
            for e in stuck[: self.max_children_named]
        )
        deadline = waits.deadline_s(model)
        summary = (
            f"{len(stuck)} of {known} known instance(s) of {model} have been executing one "
            f"batch past its {deadline:.3g} s deadline without releasing it: {held}"
        )
        calls = [c for e in stuck for c in waits.leaves(e)]
        summary += "; " + _describe_calls(calls, now, self.max_children_named, waits, model, window)
        last = None if calls else last_call(window, waits.instances, stuck)
        if last is not None:
            summary += "; " + last.describe()
        if not calls:
            summary += _callback_raised(window, model, stuck)
            summary += _ensemble_text(window, waits, stuck)
        summary += _victims_text(waits, [model, *(c.request.model for c in calls)], now)
        start = min(e.start_ns for e in stuck)
        unload, unload_evidence = _blocked_unloads(
            window, start, [model, *(c.request.model for c in calls)]
        )
        summary += unload
        ids = [i for e in stuck for i in e.ids]
        source = (
            f"it holds {', '.join(repr(i) for i in ids[:5])}, whose state this Triton does not "
            "log (no request state lines)"
            if ids
            else "the requests carry no id"
        )
        summary += (
            f". {source[0].upper()}{source[1:]}, so these are read from instance lifecycles; "
            f"deadline: {waits.explain(model)}"
        )
        evidence = [execution_evidence(e, now) for e in stuck[: self.max_children_named]]
        evidence += [_call_evidence(c, now) for c in _distinct(calls)[: self.max_children_named]]
        evidence += _victim_evidence(waits, [model, *(c.request.model for c in calls)], now)
        if last is not None:
            evidence.append(_released_evidence(last))
        evidence += unload_evidence
        first = start + int(deadline * 1e9)
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=stuck[0].instance if len(stuck) == 1 else None,
            summary=summary + ".",
            advice=ADVICE,
            first_seen_ns=min(first, now),
            last_seen_ns=now,
            evidence=tuple(evidence),
        )

    def _finding(
        self,
        window: Window,
        reqs: Requests,
        cycle: Lifecycle,
        waits: list[Lifecycle],
        calls: list[Call],
        analysis: Waits,
        execution: Execution | None = None,
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
            summary += "; " + _describe_calls(
                calls, now, self.max_children_named, analysis, model, window
            )
        last = None
        if not waits and not calls and execution is not None:
            last = last_call(window, analysis.instances, [execution])
            summary += "" if last is None else "; " + last.describe()
        models = [model, *(c.model for c in waits), *(c.request.model for c in calls)]
        summary += _victims_text(analysis, models, now)
        unload, unload_evidence = _blocked_unloads(window, cycle.executing_ns, models)
        summary += unload
        evidence = [_evidence(cycle, "EXECUTING")]
        evidence += [_evidence(c, c.state) for c in waits[: self.max_children_named]]
        evidence += [_call_evidence(c, now) for c in _distinct(calls)[: self.max_children_named]]
        evidence += _victim_evidence(analysis, models, now)
        evidence += [] if last is None else [_released_evidence(last)]
        evidence += unload_evidence
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=cycle.instance,
            request_id=cycle.request_id,
            trace_id=_trace_id(window, cycle.request_id),
            first_seen_ns=min(now, cycle.executing_ns + int(analysis.deadline_s(model) * 1e9)),
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


def _executions_by_id(waits: Waits) -> dict[str, Execution]:
    """Open batches by the request ids they hold."""
    return {rid: e for e in waits.instances.open.values() for rid in e.ids}


def _describe_calls(
    calls: list[Call],
    now: int,
    limit: int,
    waits: Waits,
    model: str,
    window: Window,
) -> str:
    """What an id-less wait is on, each open call once, grouped by the model called; never
    claims no call is open when one may be. A model whose completed batches were never seen
    calling another (a plain model, an ensemble step) is told so: BLS wording would send its
    user looking for calls it does not make."""
    if not calls and callees(waits.instances).get(model) == set():
        return (
            "it makes no BLS calls (none in its completed batches), so its own execute is "
            "stuck (a blocking wait, a lock, an endless loop) or it never returned a response"
        )
    if not calls:
        return (
            "no BLS call of it has been open for more than 0.5 s: its execute is stuck or a "
            "response it awaits was never sent"
        )
    by_model: dict[tuple[str, Execution | None], list[Call]] = {}
    ensembles = _ensembles_called(window, waits, calls)
    for call in _distinct(calls):
        callee = call.request.model
        ensemble = ensembles.get(id(call))
        if ensemble is not None:
            callee = f"the ensemble {ensemble}, in its step {callee}"
        by_model.setdefault((callee, _through(call, model)), []).append(call)
    versions = waits.instances.versions
    return "it waits on " + "; ".join(
        _describe_group(callee, group, now, limit, versions) + _via_text(via, now)
        for (callee, via), group in by_model.items()
    )


def _ensembles_called(window: Window, waits: Waits, calls: list[Call]) -> dict[int, str]:
    """id(call) -> the ensemble a BLS caller called, for calls that are that ensemble's
    steps: a gateway calls ``fr_features`` and the log shows its steps' requests, so "a BLS
    call to fr_enrich" sent users looking for a call their code does not make
    (``fr_enrich_hang``). The ensemble is the last one admitted inside the calling batch
    before the step's request, which the ensemble scheduler admitted (origin ``STEP``)."""
    ensembles = waits.instances.instanceless
    if not ensembles or not calls:
        return {}
    origin = origins_of(window)
    admitted = sorted(
        (r.header.at_ns, r.model) for r in window.logs(ev.RequestPrepared) if r.model in ensembles
    )
    times = [t for t, _ in admitted]
    out: dict[int, str] = {}
    for call in calls:
        r, owner = call.request, call.owner
        if owner is None or origin.get((r.prepared_ns, r.offset)) != STEP:
            continue
        k = bisect_right(times, r.prepared_ns) - 1
        if k >= 0 and times[k] >= owner.start_ns:
            out[id(call)] = admitted[k][1]
    return out


def _through(call: Call, model: str) -> Execution | None:
    """The batch of another model that issued a deeper call: a gateway waiting on a planner
    that waits on a worker waits on the worker *through* the planner's batch, and telling it
    as the gateway's own call sent users to the gateway's code."""
    owner = call.owner
    return owner if owner is not None and owner.model != model else None


def _via_text(via: Execution | None, now: int) -> str:
    if via is None:
        return ""
    return f", issued by {via.instance} of {via.model} (executing for {via.age_s(now):.1f} s)"


def _describe_group(
    model: str, group: list[Call], now: int, limit: int, versions: dict[str, set[int]]
) -> str:
    ids = [c.request.request_id for c in group if c.request.request_id]
    name = (
        "(no request id)"
        if not ids
        else ", ".join(repr(i) for i in ids[:limit]) + (", ..." if len(ids) > limit else "")
    )
    held = [c for c in group if c.held_by is not None]
    queued = [c for c in group if c.held_by is None]
    if len(group) == 1:
        text = f"a BLS call to {model} {name}, " + (
            f"executing for {held[0].held_by.age_s(now):.1f} s on {held[0].held_by.instance}"
            f"{version_text(held[0].held_by, versions)} in a batch of {held[0].held_by.count}"
            if held and held[0].held_by is not None
            else f"queued for {(now - group[0].request.prepared_ns) / 1e9:.1f} s and never started"
        )
    else:
        parts = []
        if held:
            batches = list({id(c.held_by): c.held_by for c in held if c.held_by}.values())
            on = ", ".join(
                f"{b.instance}{version_text(b, versions)} for {b.age_s(now):.1f} s in a batch "
                f"of {b.count}"
                for b in batches[:limit]
            )
            parts.append(f"{len(held)} executing ({on})")
        if queued:
            oldest = max(now - c.request.prepared_ns for c in queued) / 1e9
            parts.append(f"{len(queued)} queued for up to {oldest:.1f} s and never started")
        text = f"{len(group)} BLS calls to {model} {name}: " + ", ".join(parts)
    most = max(c.callers for c in group)
    if most > 1:
        text += f" (each could be the call of any of {most} candidate callers)"
    return text


def _distinct(calls: list[Call]) -> list[Call]:
    """Each open request once (several stuck batches may name the same possible call)."""
    return list({id(c.request): c for c in calls}.values())


def _within(inner: Execution, outer: Execution) -> bool:
    """Whether ``inner`` ran over ``outer`` up to its release (a callee's batch it waited on)."""
    end = outer.end_ns or 0
    return inner.start_ns <= end and (inner.end_ns is None or inner.end_ns >= end - 1_000_000_000)


def _callback_raised(window: Window, model: str, stuck: list[Execution]) -> str:
    """A clause on the done-callback of the stuck model that raised while one of its stuck
    batches, and no other batch of it, ran on and kept waiting (``callback_error``): the
    result the batch awaits was lost there, which no call line shows (xl_callback_error:
    the gather's done-callback raised KeyError and the batch waited on a future nobody would
    resolve). Not when the batch waits on a call still open: that call is the cause."""
    held = {id(e) for e in stuck}
    raised = [
        tb
        for tb in tracebacks(window)
        if tb.model == model and tb.kind == "callback" and id(held_batch(window, tb)) in held
    ]
    if not raised:
        return ""
    tb = raised[0]
    return (
        f"; a done-callback of {model} raised {tb.exception or 'an exception'} at "
        f"{clock(tb.at_ns)}, after the batch began (see callback_error): the result it "
        "awaits was likely lost there, and nothing will answer it"
    )


def _ensemble_text(window: Window, waits: Waits, stuck: list[Execution]) -> str:
    """Who waits on a stuck ensemble step: the ensemble's client, whose request is open as
    long as the step is (an ensemble has no instance, so no finding of its own)."""
    ensembles = sorted(waits.instances.instanceless)
    if not ensembles:
        return ""
    origin = origins_of(window)
    steps = sum(
        1 for e in stuck for r in e.requests if origin.get((r.prepared_ns, r.offset)) == STEP
    )
    if not steps:
        return ""
    named = ", ".join(ensembles[:3]) + (", ..." if len(ensembles) > 3 else "")
    return (
        f"; it runs {steps} ensemble step(s) (ensembles here: {named}), so as many of the "
        "ensemble's client requests wait on it"
    )


def _victims_text(waits: Waits, models: list[str], now: int) -> str:
    parts = []
    for model in dict.fromkeys(models):
        victims = waits.victims(model, now)
        if victims:
            ids = [v.request_id for v in victims if v.request_id][:5]
            more = ", ..." if len(ids) < len(victims) else ""
            named = f" ({', '.join(repr(i) for i in ids)}{more})" if ids else ""
            parts.append(
                f"{len(victims)} request(s) queued for {model} past its "
                f"{waits.deadline_s(model):.3g} s deadline{named}"
            )
    return ("; behind it: " + "; ".join(parts)) if parts else ""


@per_window
def _unload_calls(window: Window) -> list[tuple[ev.FrontendRequest, str | None]]:
    """The window's unload calls and the model each names (None: gRPC's names none), read
    once per window: a log of 660 open requests read them 660 times (8 of 16 s)."""
    asked: list[tuple[ev.FrontendRequest, str | None]] = []
    for r in window.logs(ev.FrontendRequest):
        if r.method == "RepositoryModelUnload":
            if asked and asked[-1][1] is None and r.header.at_ns - asked[-1][0].header.at_ns < 1e9:
                continue  # the same call's later steps
            asked.append((r, None))
        elif r.path.startswith("/v2/repository/models/") and r.path.endswith("/unload"):
            asked.append((r, r.path.removeprefix("/v2/repository/models/").removesuffix("/unload")))
    return asked


def _blocked_unloads(
    window: Window, since_ns: int, models: list[str]
) -> tuple[str, list[Evidence]]:
    """Unload requests made while the hang held its instances, and not completed since.
    Triton unloads a model only when its in-flight requests end, so a hang blocks the
    unload, while the repository call is answered "ok" at once (2.51: within 3 ms) and
    nothing more is logged (tests/fixtures/foreign kws_classifier_unload_blocked). gRPC's
    ``RepositoryModelUnload`` names no model; HTTP's path does."""
    asked = [
        (r, named)
        for r, named in _unload_calls(window)
        if r.header.at_ns >= since_ns and named in (None, *models)
    ]
    if not asked:
        return "", []
    unloaded = [r for r in window.logs(ev.ModelStateChange) if r.state == "unloaded"]
    parts, evidence = [], []
    for call, named in asked:
        if any(u.header.at_ns > call.header.at_ns and named in (None, u.model) for u in unloaded):
            continue
        what = f"of {named}" if named else f"(gRPC {call.method}; the log names no model)"
        parts.append(f"an unload {what} requested at {clock(call.header.at_ns)}")
        evidence.append(
            Evidence(
                "log",
                call.header.at_ns,
                log_ref(call.header.offset),
                f"unload requested {what}; no model unloaded since",
            )
        )
    if not parts:
        return "", []
    text = (
        f"; {' and '.join(parts)} has not completed since: Triton unloads a model only once "
        "its in-flight requests end, so this hang blocks it although the call was answered"
    )
    return text, evidence


def _released_evidence(last: LastCall) -> Evidence:
    x = last.execution
    outputs = "" if last.outputs is None else f" after {last.outputs} response output(s)"
    return Evidence(
        "log",
        x.end_ns or x.start_ns,
        log_ref(x.end_offset if x.end_offset is not None else x.offset),
        f"model instance name {x.instance} released {x.count} requests{outputs}: the stuck "
        "batch's last BLS call, finished",
    )


def _call_evidence(call: Call, now: int) -> Evidence:
    r = call.request
    held = call.held_by
    if held is not None:
        return execution_evidence(held, now)
    return Evidence(
        "log",
        r.prepared_ns,
        log_ref(r.offset),
        f"prepared: request id: {r.request_id}, model: {r.model}; not executing after "
        f"{(now - r.prepared_ns) / 1e9:.1f} s",
    )


def _victim_evidence(waits: Waits, models: list[str], now: int) -> list[Evidence]:
    out: list[Evidence] = []
    for model in dict.fromkeys(models):
        for r in waits.victims(model, now)[:2]:
            out.append(_call_evidence(Call(r, 0), now))
    return out
