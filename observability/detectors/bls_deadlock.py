"""bls_deadlock: a cycle in the wait-for graph of BLS calls and model instances.

Two kinds of edges, both read from the verbose log: a request waits on its open BLS children
(``<parent>.<x>`` ids), and a request queued for model M waits on the requests executing on
M's instances. A child queued for M while every instance of M is held by its own ancestors
can never start: the python backend docs warn that a BLS call into the model's own (only)
instance, or a cycle A -> B -> A, blocks forever, and Triton itself never notices (no
execution timeout, the pending count just sits at 1).

The rule is a greatest fixed point, so it also covers several parents each holding one of M's
instances: start from every request queued for longer than ``min_pending_s``; drop one when
its model has an instance that no blocked request holds (a free instance, or a holder that
is not waiting on a blocked request); repeat until nothing changes. What is left can never
run. A finding is made for each blocked request whose own ancestor holds its model (the
cycle closes through it); other blocked requests queued behind the cycle are listed as its
victims. Instance counts are the instances seen executing in the window (``model M, instance
I, executing N requests``), a lower bound; a holder's instance counts as well.

Without request ids the same fixed point runs over instance lifecycles (``waits.py``), with
two kinds of node: a queued request that is a possible BLS call of a stuck batch stays
blocked while every known instance of its model is held by blocked batches; a stuck batch
stays blocked while every call it waits on is a blocked queued request or is executing in a
blocked batch. A batch waiting on a call that a batch outside the set executes (one stuck in
a ``sleep`` or on I/O) drops out: that is a hang, not a cycle. The cycle closes when one of a
blocked request's possible callers is itself blocked: A -> A through a call into the
caller's own model, or A -> B -> A through another model's batch. One cycle is one finding:
when B's only instance also holds A's usual call to B queued (a second A instance waits on
B), both queued calls are blocked in the same cycle, and only the call that closes it (on a
path ``waits.callees`` never learned from healthy batches: B calling A back) is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from observability import events as ev
from observability.detectors.deadlines import DeadlinePolicy
from observability.detectors.instances import Admitted, Execution
from observability.detectors.requests import (
    Lifecycle,
    Requests,
    execution_evidence,
    log_ref,
    requests_of,
)
from observability.detectors.waits import Call, Waits, callees, waits_of
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["BlsDeadlockDetector"]

ADVICE = (
    "Never send a BLS request to a model whose instances the caller may be holding: call the "
    "code directly instead of through BLS, give the called model more instances than "
    "concurrent callers (instance_group count), or split the cycle into separate models. "
    "Bound every BLS call (asyncio.wait_for / a timeout on the waiting thread) and answer an "
    "error, since the python backend has no execution timeout and InferenceRequest(timeout=) "
    "only applies while queued."
)


POOL_ADVICE = (
    "Do not declare the rate limiter's resource on a BLS parent's instance group when its "
    "calls need the same resource (a parent waiting on its calls must not hold a copy they "
    "need), or give the pool more copies than the parents can hold at once "
    "(--rate-limit-resource=NAME:COUNT; without it Triton makes only as many as the largest "
    "single request for it). Bound every BLS call with a timeout and answer an error."
)


@dataclass
class BlsDeadlockDetector:
    """Requests queued for longer than ``min_pending_s`` behind their own ancestors."""

    min_pending_s: float = 5.0
    max_victims_named: int = 5
    kind: str = "bls_deadlock"

    def detect(self, window: Window) -> list[Finding]:
        found = self._by_ids(window)
        named = {f.model for f in found}
        waits = waits_of(window, DeadlinePolicy(ceiling_s=self.min_pending_s))
        return found + [f for f in self._without_ids(window, waits) if f.model not in named]

    def _by_ids(self, window: Window) -> list[Finding]:
        reqs = requests_of(window)
        now = window.until_ns
        limit = int(self.min_pending_s * 1e9)
        queued = [
            c
            for c in reqs.lifecycles
            if c.state == "PENDING" and c.pending_ns is not None and now - c.pending_ns > limit
        ]
        if not queued:
            return []
        holders: dict[str, list[Lifecycle]] = {}
        for c in reqs.lifecycles:
            if c.state == "EXECUTING" and c.model:
                holders.setdefault(c.model, []).append(c)
        blocked = _blocked(reqs, queued, holders)
        out = []
        for child in blocked:
            chain = _cycle(reqs, child, holders.get(child.model, []))
            if chain:
                victims = [c for c in blocked if c.model == child.model and c is not child]
                out.append(self._finding(now, child, chain, victims))
        return out

    def _finding(
        self, now: int, child: Lifecycle, chain: list[Lifecycle], victims: list[Lifecycle]
    ) -> Finding:
        holder = chain[0]
        assert child.pending_ns is not None and holder.executing_ns is not None
        path = " -> ".join(f"{c.model} ({c.request_id})" for c in [*chain, child])
        instance = holder.instance or "its instance"
        if len(chain) == 1:
            why = (
                f"Request '{holder.request_id}' holds {instance} of {child.model} and waits on "
                f"its own BLS call '{child.request_id}' to {child.model}"
            )
        else:
            why = (
                f"Request '{holder.request_id}' holds {instance} of {child.model} and waits, "
                f"through {path}, on '{child.request_id}'"
            )
        summary = (
            f"{why}, which has been queued for {(now - child.pending_ns) / 1e9:.1f} s behind "
            f"it: a BLS deadlock; neither can ever finish."
        )
        if victims:
            summary += f" {len(victims)} more request(s) to {child.model} are queued behind it."
        evidence = [
            Evidence(
                "log",
                c.executing_ns or 0,
                log_ref(c.executing_offset) if c.executing_offset is not None else c.request_id,
                f"[request id: {c.request_id}] Setting state from PENDING to EXECUTING "
                f"(model {c.model}" + (f", instance {c.instance})" if c.instance else ")"),
            )
            for c in chain
        ]
        evidence += [
            Evidence(
                "log",
                c.pending_ns or 0,
                log_ref(c.pending_offset) if c.pending_offset is not None else c.request_id,
                f"[request id: {c.request_id}] Setting state from INITIALIZED to PENDING "
                f"(model {c.model}); never EXECUTING"
                + ("" if c is child else " (queued behind the deadlock)"),
            )
            for c in [child, *victims[: self.max_victims_named]]
        ]
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=child.model,
            instance=holder.instance,
            request_id=holder.request_id,
            first_seen_ns=child.pending_ns + int(self.min_pending_s * 1e9),
            last_seen_ns=now,
            summary=summary,
            evidence=tuple(evidence),
            advice=ADVICE,
        )

    def _without_ids(self, window: Window, waits: Waits) -> list[Finding]:
        now = window.until_ns
        limit = now - int(self.min_pending_s * 1e9)
        blocked = {
            id(r): r
            for queue in waits.instances.queued.values()
            for r in queue
            if not r.request_id and r.prepared_ns <= limit and id(r) in waits.callers
        }
        held = {id(e): e for e in waits.stuck if waits.calls.get(id(e))}
        pool = window.logs(ev.RateLimiterPool)
        running = list(waits.instances.open.values())
        changed = True
        while changed:  # the greatest fixed point (module docstring)
            changed = False
            by_copies = bool(pool) and _all_held(running, held)
            for key, r in list(blocked.items()):
                holders = waits.instances.busy(r.model)
                by_instances = waits.instances.all_busy(r.model) and all(
                    id(h) in held for h in holders
                )
                if not by_instances and not by_copies:
                    del blocked[key]
                    changed = True
            for key, e in list(held.items()):
                if not all(_blocked_call(c, blocked, held) for c in waits.calls[id(e)]):
                    del held[key]
                    changed = True
        # Blocked with instances idle: waiting for the rate limiter's copies. They keep the
        # batches waiting on them blocked, but a cycle through instances is told first.
        copies = [r for r in blocked.values() if not waits.instances.all_busy(r.model)]
        for r in copies:
            del blocked[id(r)]
        out: dict[str, Finding] = {}
        cycles: dict[str, tuple[bool, set[int]]] = {}
        learned = callees(waits.instances)
        for r in sorted(blocked.values(), key=lambda x: x.prepared_ns):
            holders = waits.instances.busy(r.model)
            # The cycle closes through a blocked caller that the model's holders wait on:
            # one of the holders itself (a call into the caller's own model) first.
            callers = sorted(
                (c for c in waits.callers[id(r)] if id(c) in held and _reaches(waits, holders, c)),
                key=lambda c: c.model != r.model,
            )
            if callers and r.model not in out:
                holder = callers[0] if callers[0].model == r.model else holders[0]
                victims = [v for v in waits.victims(r.model, now) if id(v) not in blocked]
                out[r.model] = self._idless_finding(now, r, holder, callers[0], waits, victims)
                usual = r.model in learned.get(callers[0].model, set())
                cycles[r.model] = (usual, {id(e) for e in [*holders, *callers]})
        # One cycle, one finding: where a cycle's queued calls are reported for several
        # models, keep the call that closes it (a call path never seen in healthy batches,
        # e.g. B calling A back) and drop the ones on the usual path (A -> B) that share its
        # batches, as the id path reports only the call into an ancestor's model.
        for model, (usual, batches) in cycles.items():
            if usual and any(not u and batches & b for m, (u, b) in cycles.items() if m != model):
                del out[model]
        if not out and copies:
            found = self._pool_finding(now, copies, running, pool[-1], waits)
            return [] if found is None else [found]
        return list(out.values())

    def _pool_finding(
        self,
        now: int,
        queued: list[Admitted],
        running: list[Execution],
        pool: ev.RateLimiterPool,
        waits: Waits,
    ) -> Finding | None:
        """Every running batch holds a copy of the rate limiter's resources and waits on
        calls that the rate limiter will not start until a copy is free, though their models
        have idle instances (Triton's ``--rate-limit=execution_count``)."""
        live = {id(e) for e in running}
        callers = {id(c): c for r in queued for c in waits.callers[id(r)] if id(c) in live}
        if not callers:
            return None
        by_model: dict[str, list[Execution]] = {}
        for e in sorted(callers.values(), key=lambda e: e.start_ns):
            by_model.setdefault(e.model, []).append(e)
        model, holders = max(by_model.items(), key=lambda kv: len(kv[1]))
        called = sorted({r.model for r in queued})
        oldest = min(queued, key=lambda r: r.prepared_ns)
        idle = {}
        for m in called:
            known = len(waits.instances.model_instances.get(m, set()))
            idle[m] = (
                f"{known - len(waits.instances.busy(m))} of {m}'s {known} known instances idle"
                if known
                else f"no batch of {m} started in the window"
            )
        copies = ", ".join(f"{name}: {count}" for _device, name, count in pool.resources)
        names = ", ".join(e.instance for e in holders)
        summary = (
            f"Every batch running holds a copy of the rate limiter's resources "
            f"({copies or 'the pool'}) and waits on BLS calls that cannot start: "
            f"{len(holders)} {'batches' if len(holders) > 1 else 'batch'} of {model} ({names}) "
            f"{'have' if len(holders) > 1 else 'has'} been executing for up to "
            f"{max(e.age_s(now) for e in holders):.1f} s, waiting on {len(queued)} call(s) to "
            f"{', '.join(called)} queued for up to {(now - oldest.prepared_ns) / 1e9:.1f} s, "
            + "; ".join(idle[m] for m in called)
            + ". The rate limiter (--rate-limit=execution_count) starts no call until a batch "
            "releases a copy, and no batch releases one before its calls finish: a deadlock "
            "through the rate limiter's resource pool. The requests carry no id, so the cycle "
            "is read from instance lifecycles and admission times."
        )
        evidence = [execution_evidence(e, now) for e in holders]
        evidence += [
            _queued_evidence(r)
            for r in sorted(queued, key=lambda r: r.prepared_ns)[: self.max_victims_named]
        ]
        evidence.append(
            Evidence(
                "log",
                pool.header.at_ns,
                log_ref(pool.header.offset),
                f"rate limiter: Max Resource Map ({copies or 'no resource'})",
            )
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=holders[0].instance,
            request_id=holders[0].ids[0] if holders[0].ids else None,
            first_seen_ns=min(now, oldest.prepared_ns + int(self.min_pending_s * 1e9)),
            last_seen_ns=now,
            summary=summary,
            evidence=tuple(evidence),
            advice=POOL_ADVICE,
        )

    def _idless_finding(
        self,
        now: int,
        child: Admitted,
        holder: Execution,
        caller: Execution,
        waits: Waits,
        victims: list[Admitted],
    ) -> Finding:
        callers = len(waits.callers[id(child)])
        who = f"'{holder.ids[0]}'" if holder.ids else "a request without an id"
        if caller.model == child.model:
            through = "a call into the caller's own model"
        else:
            through = (
                f"{child.model} -> {caller.model} -> {child.model}: {caller.instance} of "
                f"{caller.model}, itself waited on by {child.model}, issued the queued call"
            )
        after_s = (child.prepared_ns - caller.start_ns) / 1e9
        admitted = (
            f"{after_s * 1e3:.0f} ms after its caller started"
            if not waits.whole_seconds
            else "in the second its caller started"
            if after_s < 1.0
            else f"{after_s:.0f} s after its caller started"
        )
        summary = (
            f"{holder.instance} of {child.model} has been executing {who} for "
            f"{holder.age_s(now):.1f} s while a request to {child.model} (no request id) admitted "
            f"{admitted} has "
            f"been queued for {(now - child.prepared_ns) / 1e9:.1f} s, and every known instance "
            f"of {child.model} is held by a batch that waits only on blocked calls: a BLS "
            f"deadlock through the instances ({through})"
        )
        if callers > 1:
            summary += f"; the queued call is one of {callers} candidate callers' calls"
        summary += (
            ". The requests carry no id, so the cycle is read from instance lifecycles and "
            "admission times."
        )
        if victims:
            summary += f" {len(victims)} more request(s) to {child.model} are queued behind it."
        evidence = [execution_evidence(e, now) for e in dict.fromkeys([holder, caller])]
        evidence.append(_queued_evidence(child))
        evidence += [
            Evidence(
                "log",
                v.prepared_ns,
                log_ref(v.offset),
                f"prepared: request id: {v.request_id}, model: {v.model}; queued behind the "
                "deadlock",
            )
            for v in victims[: self.max_victims_named]
        ]
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=child.model,
            instance=holder.instance,
            request_id=holder.ids[0] if holder.ids else None,
            first_seen_ns=min(now, child.prepared_ns + int(self.min_pending_s * 1e9)),
            last_seen_ns=now,
            summary=summary,
            evidence=tuple(evidence),
            advice=ADVICE,
        )


def _queued_evidence(r: Admitted) -> Evidence:
    """A call without an id that can never start."""
    return Evidence(
        "log",
        r.prepared_ns,
        log_ref(r.offset),
        f"prepared: model {r.model} (no request id); never executing",
    )


def _all_held(running: list[Execution], held: dict[int, Execution]) -> bool:
    """Every batch running is a blocked one: no copy of the rate limiter's resources will be
    released (a copy is held from a batch's start to its release)."""
    return bool(running) and all(id(e) in held for e in running)


def _reaches(waits: Waits, start: list[Execution], target: Execution) -> bool:
    """Whether ``target`` is one of ``start`` or a batch they wait on, through calls held
    by other batches or queued behind the batches holding the called model."""
    seen: set[int] = set()
    stack = list(start)
    while stack:
        e = stack.pop()
        if e is target:
            return True
        if id(e) in seen:
            continue
        seen.add(id(e))
        for call in waits.calls.get(id(e), ()):
            if call.held_by is not None:
                stack.append(call.held_by)
            else:
                stack.extend(waits.instances.busy(call.request.model))
    return False


def _blocked_call(call: Call, blocked: dict[int, Admitted], held: dict[int, Execution]) -> bool:
    """A call that cannot end: queued and blocked, or executing in a blocked batch."""
    if call.held_by is None:
        return id(call.request) in blocked
    return id(call.held_by) in held


def _blocked(
    reqs: Requests, queued: list[Lifecycle], holders: dict[str, list[Lifecycle]]
) -> list[Lifecycle]:
    """The queued requests that can never start (greatest fixed point, see module doc)."""
    blocked = {id(c): c for c in queued if c.model}
    changed = True
    while changed:
        changed = False
        waiting = {a for c in blocked.values() for a in reqs.ancestors(c.request_id)}
        for key, c in list(blocked.items()):
            held = holders.get(c.model, [])
            seen = set(reqs.instances.get(c.model, ())) | {h.instance for h in held if h.instance}
            held_by_waiters = {h.instance or id(h) for h in held if h.request_id in waiting}
            free = len(seen) > len(held_by_waiters) or any(
                h.request_id not in waiting for h in held
            )
            if not held or free:
                del blocked[key]
                changed = True
    return list(blocked.values())


def _cycle(reqs: Requests, child: Lifecycle, held: list[Lifecycle]) -> list[Lifecycle]:
    """The chain from the ancestor holding the child's model down to the child's parent."""
    ancestors = reqs.ancestors(child.request_id)  # nearest first
    holder_ids = {h.request_id for h in held}
    for i, rid in enumerate(ancestors):
        if rid in holder_ids:
            chain = []
            for a in reversed(ancestors[: i + 1]):
                open_ = [c for c in reqs.by_id.get(a, []) if c.state == "EXECUTING"]
                if open_:
                    chain.append(open_[0])
            return chain
    return []
