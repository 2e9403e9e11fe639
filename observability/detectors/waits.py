"""What a stuck instance execution waits on, without request ids.

A BLS parent's batch holds its instance while its child requests run elsewhere; without ids the
log does not say which requests are whose children. What it does say is when each was admitted:
a child is admitted after its parent's batch started, and a parent stuck on a child has that
child still open (queued, or held by another stuck batch) long after. So the *possible* BLS
calls of a stuck batch are the requests admitted after it started that are still open and at
least ``_MIN_CALL_AGE_NS`` old; a call with one possible caller is certain, one with several is
named with how many (``one of 3 candidate callers``).

Which models a model calls is learned from its completed batches in the window (``callees``):
a model C is a callee of P when C's requests are admitted during most of P's batches, far more
often than C's own arrival rate explains. A stuck batch's possible calls are then only requests
to its callees (any model while too few of its batches were seen), so a batch hung for minutes
does not claim every request that queued anywhere since, unless the request is a BLS call by
where it came from (``origins.py``: no frontend line and no ensemble step explains it): a
call path only a fault takes is never seen in healthy batches. Requests queued for the caller's own
model are its calls only when admitted right after it started (``_SELF_CALL_NS``), or later
when nothing but a BLS call explains them (``origins.py``, on a log whose frontend lines tell
clients' requests: geo_self_call_deadlock's calls come 0.5 s in), never right after a
frontend line (a client's request, whatever its id), and only when no open batch of a known
caller of the model could have sent them: a self-call is never seen in healthy batches, and
otherwise they are other clients (or other parents' calls) queued behind it.

An open batch is *stuck* when it has run past its model's deadline (``deadlines.py``), unless
it is waiting on a call that still makes progress (queued for a model whose instances moved
within that model's deadline, or held by a batch that is not itself stuck): a parent behind a
slow but moving child is saturation, not a hang. Past the fixed ceiling (or the model's
override) everything open is stuck. A cold start (the instance's first batch after a load)
gets the ceiling too.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter

from observability.detectors.deadlines import DeadlinePolicy
from observability.detectors.instances import Admitted, Execution, Instances, instances_of
from observability.detectors.origins import (
    CALL,
    CLIENT,
    STEP,
    mostly_steps,
    origins_of,
    shares,
)
from observability.detectors.window import Window, per_window

__all__ = ["Call", "Waits", "callees", "origins_of", "waits_of"]

_MIN_CALL_AGE_NS = 500_000_000
_SELF_CALL_NS = 50_000_000
_MIN_BATCHES_TO_LEARN = 5
_CALLEE_SHARE = 0.3
"""A callee's requests are admitted during at least this share of the caller's batches..."""
_STEP_END_NS = 2_000_000
"""An ensemble's next step is admitted within this of the previous step's end (``origins.py``)."""
_CALLEE_OVER_CHANCE = 3.0
"""...and this many times more often than its arrival rate alone would put one there."""
_NESTED_VIA_SHARE = 0.9
_NESTED_OUTSIDE_SHARE = 0.02
"""A grandchild (``_nested_caller``): the intermediate calls it in at least 90 % of its batches,
and at most 2 % of its admissions inside the caller's batches fall outside the intermediate's.
On the recordings a grandchild has 100 % and 0 %; a sibling called beside a busy one 60-76 %
and 7-90 % (the demo's router and its three children, the chain's gateway)."""


@dataclass(frozen=True, eq=False)
class Call:
    """A possible BLS call of a stuck batch."""

    request: Admitted
    callers: int
    """How many stuck or long-open batches could have issued it."""
    owner: Execution | None = None
    """The likeliest of them: the one that started last before the call was admitted (a
    parent issues its calls while it runs, so a newer batch's calls are mostly its own).
    Only progress of a batch's own likeliest calls keeps it from being stuck."""

    @property
    def queued(self) -> bool:
        return self.request.execution is None

    @property
    def held_by(self) -> Execution | None:
        return self.request.execution


@dataclass
class Waits:
    instances: Instances
    policy: DeadlinePolicy
    deadline: dict[str, float]
    stuck: list[Execution]
    calls: dict[int, list[Call]]
    """id(execution) -> its possible BLS calls, oldest first."""
    callers: dict[int, list[Execution]]
    """id(admitted request) -> the open batches that could have issued it."""
    whole_seconds: bool = False
    """The log's times are whole seconds (``Window.whole_seconds``)."""

    def deadline_s(self, model: str) -> float:
        return self.deadline.get(model, self.policy.ceiling(model))

    def is_stuck(self, execution: Execution) -> bool:
        return any(e is execution for e in self.stuck)

    def is_call(self, execution: Execution) -> bool:
        """Whether a request of this batch is a possible BLS call of a stuck batch."""
        return any(
            self.is_stuck(parent)
            for r in execution.requests
            for parent in self.callers.get(id(r), ())
        )

    def leaves(self, execution: Execution) -> list[Call]:
        """The deepest open calls below a batch: what it really waits on."""
        out: list[Call] = []
        seen: set[int] = {id(execution)}
        stack = list(self.calls.get(id(execution), ()))
        while stack:
            call = stack.pop(0)
            held = call.held_by
            deeper = self.calls.get(id(held), []) if held is not None else []
            if held is not None and id(held) in seen:
                continue
            if held is not None:
                seen.add(id(held))
            if deeper:
                stack.extend(deeper)
            else:
                out.append(call)
        return out

    def victims(self, model: str, now_ns: int) -> list[Admitted]:
        """Requests queued for a model for longer than its deadline."""
        limit = now_ns - int(self.deadline_s(model) * 1e9)
        return [
            r
            for r in self.instances.queued.get(model, ())
            if r.prepared_ns <= limit and id(r) not in self.callers
        ]

    def explain(self, model: str) -> str:
        durations = self.instances.durations_s(model)
        return self.policy.explain(model, durations, self.whole_seconds)


_cache: dict[tuple[int, tuple[object, ...]], tuple[weakref.ref[Window], Waits]] = {}


def waits_of(window: Window, policy: DeadlinePolicy) -> Waits:
    """The window's wait analysis for a deadline policy, built once per window object."""
    key = (id(window), policy.key)
    hit = _cache.get(key)
    if hit is not None and hit[0]() is window:
        return hit[1]
    result = analyse(instances_of(window), policy, origins_of(window), window.whole_seconds)
    _cache[key] = (weakref.ref(window, lambda _ref: _cache.pop(key, None)), result)
    return result


def _others_running(req: Admitted, inst: Instances) -> bool:
    """Whether a batch of another model was running when ``req`` was admitted (open still,
    or released since: a caller whose call timed out): it may have made the call by a path
    no healthy batch showed (ocr_cycle_deadlock's call back, 0.5 s in)."""
    at = req.prepared_ns
    return any(
        e.model != req.model and e.start_ns < at and (e.end_ns is None or e.end_ns >= at)
        for e in inst.executions
    )


def _step_models(inst: Instances, origin: dict[tuple[int, int], str]) -> set[str]:
    """Models most of whose completed requests came as an ensemble's steps: only for them
    is a step's reading near a release more than chance (a BLS child's requests fall near
    releases too: ch_self_deadlock's self-call, 1 ms into its caller, is one). Not on a
    whole-second log, where every line of a second is near one."""
    done = ((r.model, (r.prepared_ns, r.offset)) for e in inst.executions for r in e.requests)
    return mostly_steps(shares(origin, done, STEP))


def analyse(
    inst: Instances,
    policy: DeadlinePolicy,
    origin: dict[tuple[int, int], str] | None = None,
    whole_seconds: bool = False,
) -> Waits:
    """``origin``: where each admitted request came from (``origins.py``); a BLS call that
    no learned edge explains may still be a call of a stuck batch (a path only a fault
    takes). ``whole_seconds``: the log's times are (``Window.whole_seconds``)."""
    now = inst.until_ns
    deadline = {m: policy.deadline_s(m, inst.durations_s(m)) for m in inst.model_instances}
    long_open = [e for e in inst.open.values() if now - e.start_ns >= _MIN_CALL_AGE_NS]
    learned = callees(inst)
    called_by: dict[str, set[str]] = {}
    for caller, models in learned.items():
        for model in models:
            called_by.setdefault(model, set()).add(caller)
    steps = set() if whole_seconds else _step_models(inst, origin or {})
    told = CLIENT in (origin or {}).values()
    """Whether the log tells clients' requests (its frontend lines): else every request
    reads as a call, and a late one is no self-call for that."""
    callers: dict[int, list[Execution]] = {}
    calls: dict[int, list[Call]] = {}
    pending: list[tuple[Execution, Admitted]] = []
    weak: set[tuple[int, int]] = set()
    """Possible self-calls made while a known caller of the model was open."""
    for parent in long_open:
        for req in inst.open_after(parent.start_ns, _MIN_CALL_AGE_NS):
            if req.execution is parent:
                continue
            if req.model == parent.model:
                came = (origin or {}).get((req.prepared_ns, req.offset))
                if req.execution is not None or came == CLIENT:
                    continue  # its frontend line is right before it: another client's request
                if came == STEP and req.model in steps:
                    continue  # an ensemble's next step, to a model ensembles call
                late = req.prepared_ns - parent.start_ns > _SELF_CALL_NS
                if late and not (came == CALL and told and not _others_running(req, inst)):
                    continue  # later, only a call no client, step or other model explains
                if any(
                    o.model in called_by.get(req.model, ()) and o.start_ns < req.prepared_ns
                    for o in long_open
                ):
                    # A known caller of the model was open: likelier its call, unless the
                    # batch waits on nothing else (decided below, once its calls are known).
                    weak.add((id(parent), id(req)))
            elif (
                parent.model in learned
                and req.model not in learned[parent.model]
                and (origin or {}).get((req.prepared_ns, req.offset)) != CALL
                and not (
                    (req.prepared_ns, req.offset) in inst.steps
                    and not learned[parent.model].isdisjoint(steps)
                )
            ):
                # Kept: an ensemble's first step, for a batch of a model that calls an
                # ensemble (it was learned to call its later steps): the step is how that
                # call progresses. Not learned as a callee (its requests come with the
                # ensemble's, at the caller's call), a parent waiting on a 4 s cold start of
                # the first step read as hung (fr_parse_cold_start, for 2 passes).
                continue
            elif (
                parent.model not in learned
                and req.model in inst.client_only
                and (origin or {}).get((req.prepared_ns, req.offset)) == CLIENT
            ):
                # A model too rarely run to learn its calls may call anything, but not a
                # client's request to a model only clients call (zoo_router_child_hangs: a
                # hung rare child read as the caller of the router's next client requests).
                continue
            callers.setdefault(id(req), []).append(parent)
            pending.append((parent, req))
    # A self-call behind an open known caller is kept only for a batch with no other call:
    # a BLS child that calls itself (foreign ch_self_deadlock) has its parent open, but while
    # it waits on a child of its own it is not issuing a call to itself (ch_leaf_hang).
    # Nor for a model never seen calling anything (a leaf): a hung leaf's batch is followed
    # by its callers' queued calls, not by calls of its own (the demo's stuck detector).
    others = {id(p) for p, r in pending if r.model != p.model}
    others |= {id(p) for p, _ in pending if not learned.get(p.model, {""})}
    dropped = {(ip, ir) for ip, ir in weak if ip in others}
    if dropped:
        pending = [(p, r) for p, r in pending if (id(p), id(r)) not in dropped]
        for ip, ir in dropped:
            callers[ir] = [c for c in callers[ir] if id(c) != ip]
        callers = {rid: cands for rid, cands in callers.items() if cands}
    # A call that a learned edge explains is that caller's: a batch let in only because the
    # request is unexplained (a path only a fault takes) is dropped beside it. Otherwise a
    # stuck leaf that started just before its grandparent's next calls was taken for their
    # caller, and a deadlock invented through it (foreign ch_leaf_hang).
    model_of = {id(req): req.model for _, req in pending}
    for rid, cands in callers.items():
        model = model_of[rid]
        back = [c for c in cands if c.model != model and c.model in learned.get(model, ())]
        if back and any(c.model == model for c in cands):
            # A request to a model made while one of that model's own callees ran is the
            # callee calling back (A -> B -> A), not A calling itself while it awaits B
            # (hx_kb_recall_deadlock: hx_kb exec()s hx_dispatch 1.1 ms into its batch, both
            # hx_dispatch batches awaiting their hx_kb calls).
            callers[rid] = back
            continue
        known = [
            c
            for c in cands
            if c.model == model_of[rid] or model_of[rid] in learned.get(c.model, ())
        ]
        if known and len(known) < len(cands):
            callers[rid] = known
    kept = {rid: {id(c) for c in cands} for rid, cands in callers.items()}
    pending = [(p, r) for p, r in pending if id(p) in kept[id(r)]]
    # Each request's owner once (the latest-started of its candidate callers), not once per
    # candidate: thousands of open batches made that quadratic.
    owners = {rid: max(cands, key=lambda c: c.start_ns) for rid, cands in callers.items()}
    for parent, req in pending:
        candidates = callers[id(req)]
        calls.setdefault(id(parent), []).append(Call(req, len(candidates), owners[id(req)]))

    def limit_s(e: Execution) -> float:
        """A cold start (the instance's first batch after a load) gets the ceiling. A batch's
        deadline is learned from the batches that ended before it started: one that already
        runs past it stays stuck when slow batches after it raise the model's p99 (the
        finding would blink out and back, and an alert's ``for`` start over)."""
        ceiling = policy.ceiling(e.model)
        if e.first_after_load:
            return ceiling
        return policy.deadline_s(e.model, inst.durations_s(e.model, e.start_ns))

    def over(e: Execution, limit: float) -> bool:
        return now - e.start_ns > limit * 1e9

    stuck: list[Execution] = []
    for e in sorted(inst.open.values(), key=lambda x: x.start_ns):
        if not over(e, limit_s(e)):
            continue
        if over(e, policy.ceiling(e.model)) or not _waits_on_progress(
            e, calls, inst, limit_s, deadline, policy, now
        ):
            stuck.append(e)
    # A caller whose every open call is stuck (held by a stuck batch, or queued for a model
    # whose every known instance is held by one) is stuck too once past the floor, though
    # its own deadline (which includes its calls' usual time) has not passed yet.
    grew = True
    while grew:
        grew = False
        for e in sorted(inst.open.values(), key=lambda x: x.start_ns):
            if (
                not any(s is e for s in stuck)
                and over(e, policy.floor_s)
                and _waits_only_on_stuck(e, calls, inst, stuck)
            ):
                stuck.append(e)
                grew = True
    return Waits(inst, policy, deadline, stuck, calls, callers, whole_seconds)


def _waits_only_on_stuck(
    e: Execution, calls: dict[int, list[Call]], inst: Instances, stuck: list[Execution]
) -> bool:
    own = calls.get(id(e), [])
    if not own:
        return False
    stuck_ids = {id(s) for s in stuck}
    for call in own:
        held = call.held_by
        if held is not None:
            if id(held) not in stuck_ids:
                return False
            continue
        model = call.request.model
        if not inst.all_busy(model) or any(id(b) not in stuck_ids for b in inst.busy(model)):
            return False
    return True


_CLIENT_CALLEE_SHARE = 0.9
"""Share of a client-called model's requests that must arrive inside another model's batches
for it to be that model's callee (a client-side chain)."""


@per_window
def callees(inst: Instances) -> dict[str, set[str]]:
    """Model -> the models it calls through BLS, learned from its completed batches (only for
    models with at least ``_MIN_BATCHES_TO_LEARN`` of them), or else as earlier passes of a
    live watch learned them (``Instances.known_calls``). Learned once per ``Instances``: five
    detectors ask, and each learning is a pass over every admitted request. Read-only."""
    out = _learned(inst)
    for model, calls in inst.known_calls.items():
        out.setdefault(model, set(calls))
    return out


def _learned(inst: Instances) -> dict[str, set[str]]:
    admitted = sorted(
        (
            (r.prepared_ns, r.model, (r.prepared_ns, r.offset) in inst.steps, taken_ns)
            for r, taken_ns in [
                *((r, e.start_ns) for e in inst.executions for r in e.requests),
                *((r, None) for q in inst.queued.values() for r in q),
            ]
        ),
        # Not by the time taken: a queued request's is None, and two requests of a model
        # prepared in the same microsecond (a copied log, whole-second ISO8601 times) would
        # compare it with an executed one's.
        key=itemgetter(0, 1, 2),
    )
    if not admitted:
        return {}
    times = [t for t, _, _, _ in admitted]
    span_s = max(1e-9, (times[-1] - times[0]) / 1e9)
    rate: dict[str, int] = {}
    for _, model, _, _ in admitted:
        rate[model] = rate.get(model, 0) + 1
    # A model only clients call is nobody's BLS callee, however often its requests arrive
    # while another runs (xl_translate_hang: the gateway's clients kept arriving during the
    # translator's batches, and xl_translate was learned to call xl_gateway). It is the
    # callee of a model that calls it as a client (PyTriton's ModelClient chain, pt_rank
    # to pt_embed) when nearly all its requests arrive inside that model's batches: all 184
    # of pt_embed's in pt_healthy, against 9% of xl_gateway's inside xl_translate's.
    clients_only = inst.client_only
    step_end_ns = _STEP_END_NS if inst.instanceless else 0  # ensembles about
    batches: dict[str, int] = {}
    busy_s: dict[str, float] = {}
    hits: dict[str, dict[str, int]] = {}
    taken: dict[str, dict[str, int]] = {}
    seen: dict[str, dict[str, set[int]]] = {}
    for e in inst.executions:
        if e.end_ns is None:
            continue
        batches[e.model] = batches.get(e.model, 0) + 1
        busy_s[e.model] = busy_s.get(e.model, 0.0) + (e.end_ns - e.start_ns) / 1e9
        # With ensembles about, not the batch's last instants: an ensemble's next step is
        # admitted there (the scheduler sends it as the step ends, often before the
        # ``released`` line), and a step taken for a call makes a stuck step look as if it
        # waited on its successor. Without ensembles they count: a fast last BLS call (a
        # decoupled decoder read to its final flag) lands there too.
        lo = bisect_right(times, e.start_ns)
        hi = bisect_right(times, max(e.start_ns, e.end_ns - step_end_ns))
        row = hits.setdefault(e.model, {})
        at = seen.setdefault(e.model, {})
        here: set[str] = set()
        within: set[str] = set()
        for i in range(lo, hi):
            _, callee, step, taken_ns = admitted[i]
            if step:
                continue  # an ensemble's scheduler sent it (ops_enrich_hang_classify_growth)
            here.add(callee)
            at.setdefault(callee, set()).add(i)
            if taken_ns is not None and taken_ns <= e.end_ns:
                within.add(callee)
        for m in here - {e.model}:
            row[m] = row.get(m, 0) + 1
        row_taken = taken.setdefault(e.model, {})
        for m in within - {e.model}:
            row_taken[m] = row_taken.get(m, 0) + 1
    out: dict[str, set[str]] = {}
    for model, n in batches.items():
        if n < _MIN_BATCHES_TO_LEARN:
            continue
        chance_per_s = busy_s[model] / n / span_s
        out[model] = {
            callee
            for callee, k in hits.get(model, {}).items()
            if k / n >= _CALLEE_SHARE
            and k / n >= min(1.0, _CALLEE_OVER_CHANCE * chance_per_s * rate[callee])
            and (
                callee not in clients_only
                or len(seen[model].get(callee, ())) >= _CLIENT_CALLEE_SHARE * rate[callee]
            )
            # A call is also taken by an instance before the batch that made it ends (its
            # answer, an error's included, comes before the caller's release line): under
            # many requests in flight every model's requests land in every batch
            # (hx_healthy: hx_intent's short batches each saw an hx_dispatch request
            # admitted, executed half a second later). Its error path releases late:
            # doc_extract's failed execution was released 15 ms after its caller.
            and taken.get(model, {}).get(callee, 0) / n >= _CALLEE_SHARE
        }
    for model, learned in out.items():
        for callee in sorted(learned):
            via = _nested_caller(model, callee, learned, hits, batches, seen, times, inst)
            if via is not None:
                learned.discard(callee)
    # Two callees of one model that it calls side by side (asyncio.gather) land in each
    # other's batches, the faster one answered inside the slower one's: a model and one of
    # its callees that both call a third model directly (the third not reached through the
    # callee, see _nested_caller) leave the callee's edge to the third as a sibling's
    # (hx_healthy: hx_dispatch gathers hx_intent, hx_sentiment and hx_kb, and hx_sentiment
    # was learned to call hx_kb).
    siblings = [
        (via, callee)
        for learned in out.values()
        for via in learned
        for callee in out.get(via, set()) & learned
        if callee != via
    ]
    for via, callee in siblings:
        out[via].discard(callee)
    return out


def _nested_caller(
    model: str,
    callee: str,
    learned: set[str],
    hits: dict[str, dict[str, int]],
    batches: dict[str, int],
    seen: dict[str, dict[str, set[int]]],
    times: list[int],
    inst: Instances,
) -> str | None:
    """A callee of ``model`` through which ``callee`` is reached, when every admission of
    ``callee`` inside ``model``'s batches also lies inside a batch of that callee: a
    grandchild, not a call. A gateway awaiting a planner that calls a worker has the worker's
    requests admitted inside its own batches on every request (``ch_healthy`` learned
    ``ch_gateway -> ch_worker``); a direct call made beside a busy sibling lands outside the
    sibling's batches now and then, and is kept (see ``_NESTED_OUTSIDE_SHARE``)."""
    mine = seen.get(model, {}).get(callee, set())
    if len(mine) < _MIN_BATCHES_TO_LEARN:
        return None
    for via in sorted(learned - {callee}):
        n = batches.get(via, 0)
        if n < _MIN_BATCHES_TO_LEARN or hits.get(via, {}).get(callee, 0) / n < _NESTED_VIA_SHARE:
            continue
        spans = _merged(
            (e.start_ns, e.end_ns if e.end_ns is not None else times[-1])
            for e in inst.executions
            if e.model == via
        )
        starts = [lo for lo, _ in spans]
        outside = 0
        for i in mine:
            k = bisect_right(starts, times[i]) - 1
            if k < 0 or times[i] > spans[k][1]:
                outside += 1
        if outside <= _NESTED_OUTSIDE_SHARE * len(mine):
            return via
    return None


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _waits_on_progress(
    e: Execution,
    calls: dict[int, list[Call]],
    inst: Instances,
    limit_s: Callable[[Execution], float],
    deadline: dict[str, float],
    policy: DeadlinePolicy,
    now: int,
) -> bool:
    """Whether a batch waits on a call that still moves (see the module docstring): queued
    for a model whose instances moved within its deadline or are busy within theirs, or held
    by a batch still within its own (a cold start's is the ceiling). A batch none of whose
    possible calls is likeliest its own waits on them all: two parents that called one model
    one after the other both started before either call, and the newer took both
    (doc_extract_cold_start: the older waited on the cold start's batch and read as hung)."""
    own = calls.get(id(e), ())
    mine = any(call.owner is None or call.owner is e for call in own)
    for call in own:
        if mine and call.owner is not None and call.owner is not e:
            continue  # a newer open batch of a calling model is likelier to have sent it
        held = call.held_by
        if held is not None:
            if now - held.start_ns <= limit_s(held) * 1e9:
                return True
            continue
        model = call.request.model
        limit = deadline.get(model, policy.ceiling(model))
        if inst.progressed_since(model, now - int(limit * 1e9)):
            return True
        if any(now - b.start_ns <= limit_s(b) * 1e9 for b in inst.busy(model)):
            return True  # queued behind a batch still within its deadline (a cold start)
    return False
