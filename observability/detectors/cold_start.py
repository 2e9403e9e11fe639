"""Cold start: the first execution after a model (re)load takes far longer than the next ones.

Why: a model that defers its expensive set-up (loading weights, compiling, building caches) to
its first ``execute`` makes the first caller after every load or reload pay for it — and in
a BLS pipeline every parent waiting on that child, too. Triton reports the load as done, so
health checks pass while the first requests time out.

Rule: after ``successfully loaded '<model>'`` in the verbose log, the model's first execution
(``executing N requests`` … ``released N requests`` on one instance) lasts more than
``ratio`` times the steady state (the lower quartile of the following ``steady_executions``)
and more than ``min_s``.
Executions are paired per instance in log order; a reload that keeps the instance name works.
The request that paid is the last one of the model set to EXECUTING before that execution.

A load before the window (a capture started after the server came up) leaves no load line.
``/v2/models/stats`` still tells it: a snapshot with ``execution_count`` 0 for a model that
then executes means nothing ran since its load, so its next execution is the first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

from observability import events as ev
from observability.detectors.backend_failures import per_scrape
from observability.detectors.instances import Instances, instances_of
from observability.detectors.loads import clock
from observability.detectors.traced_calls import traced_callees
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ColdStart", "Execution", "executions"]

EXECS = "nv_inference_exec_count"
INFER_US = "nv_inference_compute_infer_duration_us"
ADVICE = (
    "Warm '{model}' up before it serves: add a model_warmup entry to its config.pbtxt (Triton "
    "runs it during the load, so the model is READY only when warm), or do the lazy work in "
    "initialize() — for a python backend model load the weights, compile and run one dummy "
    "batch there, not on the first execute. Until then, expect the first callers after every "
    "load or reload (and their BLS parents) to wait or time out."
)


@dataclass(frozen=True)
class Execution:
    model: str
    instance: str
    start_ns: int
    end_ns: int
    offset: int

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def executions(inst: Instances) -> list[Execution]:
    """Completed executions, in start order, as :mod:`instances` reads them (two versions
    served at once share instance names; a reload's unload ends the old copy's batches)."""
    done = [e for e in inst.executions if e.end_ns is not None and not e.died]
    return sorted(
        (Execution(e.model, e.instance, e.start_ns, e.end_ns or 0, e.offset) for e in done),
        key=lambda e: e.start_ns,
    )


@dataclass
class ColdStart:
    """The first execution after a load over ``ratio`` times steady state and ``min_s``."""

    kind: str = "cold_start"
    ratio: float = 5.0
    min_s: float = 1.0
    steady_executions: int = 20
    min_steady: int = 3
    """Executions after the first needed to call anything steady state."""
    critical_s: float = 30.0
    switch_s: float = 0.05
    """After a reload's 'loaded' line, how long the replaced copy may still start batches."""

    def detect(self, window: Window) -> list[Finding]:
        records = window.logs(
            ev.ModelStateChange,
            ev.InstanceExecuting,
            ev.InstanceReleased,
            ev.RequestPrepared,
            ev.RequestStateChange,
        )
        loads: list[Load] = []
        loading: dict[str, int | None] = {}
        for r in records:
            if not isinstance(r, ev.ModelStateChange):
                continue
            if r.state == "loading":
                loading[r.model] = r.version
            elif r.state == "loaded":
                version = r.version if r.version is not None else loading.pop(r.model, None)
                at, ref = r.header.at_ns, f"triton.log@{r.header.offset}"
                said = f"successfully loaded '{r.model}'"
                loads.append(Load(r.model, at, ref, said, "log", version))
        loads += _unlogged_loads(window.model_stats, {load.model for load in loads})
        if not loads:
            return []
        runs: dict[str, list[Execution]] = {}
        inst = instances_of(window)
        versions = inst.versions
        for e in executions(inst):
            runs.setdefault(e.model, []).append(e)
        worst: dict[str, Finding] = {}
        for load in loads:
            # A stats load is when nothing had *ended* yet: the first run may have begun.
            ends = load.source == "stats"
            after = [
                e
                for e in runs.get(load.model, [])
                if (e.end_ns if ends else e.start_ns) >= load.at_ns
            ]
            before = [e for e in runs.get(load.model, []) if e.end_ns <= load.at_ns]
            served = len(versions.get(load.model, ())) if load.version is not None else 1
            # Another version's batches on the same names start after the load too, and so
            # may the replaced copy's last batches just after a reload's 'loaded' line (a
            # 0.6 ms batch 0.8 ms after it, then the 4 s cold one, in a demo recording):
            # the loaded copy's first batch is the slowest of those and the next one.
            head = after[: max(served, self._overlapping(load, after) + 1)]
            slow = max(head, key=lambda e: e.seconds, default=None)
            after = [slow, *[e for e in after if e is not slow]] if slow else after
            finding = self._check(load, after, served == 1, window.whole_seconds, before)
            if finding is not None:
                finding = replace(finding, request_id=_request_at(records, load, after[0]))
            elif not runs.get(load.model) and load.model not in inst.instanceless:
                # Not an ensemble (requests in the log, no instance of its own): its first
                # requests waited on its steps, whose own first executions the log tells
                # (ops_router_callback_classify_cold: the reload of its step reloaded it).
                finding = self._from_metrics(window, load)
            known = worst.get(load.model)
            if finding is not None and (known is None or _secs(finding) > _secs(known)):
                worst[load.model] = finding
        found = [worst[m] for m in sorted(worst)]
        # A BLS parent's first execution that merely waited on its child's: the child's.
        # From /metrics a finding spans the load to the scrape, which says nothing of who
        # waited on whom: the traces' calls do (xl_translate_cold_start_quiet).
        calls = traced_callees(window)
        return [f for f in found if not any(_waited_on(f, g, calls) for g in found if g is not f)]

    def _overlapping(self, load: Load, after: list[Execution]) -> int:
        """How many batches began within ``switch_s`` of a logged load: any of them may
        still be the replaced copy's."""
        if load.source != "log":
            return 0
        limit = load.at_ns + int(self.switch_s * 1e9)
        return sum(1 for e in after if e.start_ns <= limit)

    def _check(
        self,
        load: Load,
        after: list[Execution],
        per_instance: bool,
        whole_seconds: bool,
        before: list[Execution],
    ) -> Finding | None:
        """``whole_seconds``: the log's times are whole seconds (``Window.whole_seconds``), so
        a batch's duration may be a second off: a 0.1 ms batch whose two lines straddle a
        second boundary reads 1.00 s (``ch_self_deadlock_iso``: a false cold start on
        ch_gateway), and a cold start must be a second longer to be told."""
        first, rest = (after[0], after[1 : 1 + self.steady_executions]) if after else (None, [])
        when = ""
        if first is not None and len(rest) < self.min_steady <= len(before):
            # Too few completed after the load (the next batch hangs: a cold start, then
            # calls that wait forever): the previous copy's batches are its steady state.
            rest, when = before[-self.steady_executions :], " before the load"
        if first is None or len(rest) < self.min_steady:
            return None
        steady = _steady(rest)
        if (
            first.seconds - (1.0 if whole_seconds else 0.0) <= self.min_s
            or first.seconds <= self.ratio * steady
        ):
            return None
        coarse = whole_seconds and steady < 1.0
        against = (
            "against a steady state under a second (the log's times are whole seconds, "
            "--log-format ISO8601)"
            if coarse
            else f"{first.seconds / max(steady, 1e-6):.0f}x its steady {steady * 1000:.1f} ms"
            + when
        )
        quartile = (
            "under a second (whole-second log times)"
            if coarse
            else f"{steady * 1000:.1f} ms (max {max(e.seconds for e in rest) * 1000:.1f} ms)"
        )
        model = load.model
        version = f" (version {load.version})" if load.version is not None else ""
        others = self._other_cold(first, after, steady) if per_instance else []
        also = (
            "; so did the first on "
            + ", ".join(f"{e.instance} ({e.seconds:.2f} s)" for e in others)
            + ": every instance does its set-up on its first request"
            if others
            else ": the model does its set-up on the first request"
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if first.seconds >= self.critical_s else Severity.WARNING,
            model=model,
            instance=None if others else first.instance,
            summary=(
                f"The first execution of '{model}'{version} after it was (re)loaded, on "
                f"{first.instance}, took "
                f"{first.seconds:.2f} s, {against}{also}."
            ),
            advice=ADVICE.format(model=model),
            first_seen_ns=first.start_ns,
            last_seen_ns=first.end_ns,
            evidence=(
                Evidence(load.source, load.at_ns, load.ref, load.detail),
                Evidence(
                    "log",
                    first.start_ns,
                    f"triton.log@{first.offset}",
                    f"first execution on {first.instance}: {first.seconds:.3f} s"
                    + (
                        f", starting {(first.start_ns - load.at_ns) / 1e9:.2f} s after the load"
                        if first.start_ns >= load.at_ns
                        else ", the first to end after that snapshot"
                    ),
                ),
                Evidence(
                    "log",
                    rest[-1].end_ns,
                    f"triton.log@{rest[0].offset}",
                    f"lower quartile of the {'last' if when else 'next'} {len(rest)} "
                    f"executions{when} {quartile}",
                ),
                *(
                    Evidence(
                        "log",
                        e.start_ns,
                        f"triton.log@{e.offset}",
                        f"first execution on {e.instance}: {e.seconds:.3f} s",
                    )
                    for e in others[:3]
                ),
            ),
        )

    def _from_metrics(self, window: Window, load: Load) -> Finding | None:
        """Without the verbose log (no execution lines): the first scrape interval after the
        load in which the model's ``nv_inference_exec_count`` rose, against the intervals
        after it. Each execution's compute time lands in
        ``nv_inference_compute_infer_duration_us`` when it ends, so a 4 s first execution
        shows as one interval averaging seconds among intervals of milliseconds
        (rag_cold_start: 4,052 ms over 2, then 4 ms)."""
        count = per_scrape(window, EXECS, load.model)
        spent = per_scrape(window, INFER_US, load.model)
        times = sorted(t for t in count if t in spent and t > load.at_ns)
        before = [t for t in count if t in spent and t <= load.at_ns]
        if before:
            times.insert(0, max(before))
        rises: list[tuple[int, float, float]] = []
        for a, b in pairwise(times):
            execs, us = count[b] - count[a], spent[b] - spent[a]
            if execs > 0 and us >= 0:  # a counter that fell was reset: a restart, not a rise
                rises.append((b, execs, us))
        if len(rises) <= self.min_steady:
            return None
        # A reload's replaced copy serves on until it is unloaded: its executions end in the
        # intervals before, and the loaded copy's first one in any of them or the next.
        gone = [
            r.header.at_ns
            for r in window.logs(ev.ModelStateChange)
            if r.model == load.model and r.state == "unloaded" and r.header.at_ns > load.at_ns
        ]
        head = 1 + sum(1 for t, _, _ in rises[:-1] if gone and t < gone[0])
        pick = max(range(min(head, len(rises))), key=lambda i: rises[i][2] / rises[i][1])
        if len(rises) - pick - 1 < self.min_steady:
            return None
        (at, execs, us), rest = rises[pick], rises[pick + 1 : pick + 1 + self.steady_executions]
        means = sorted(r_us / r_execs / 1e6 for _, r_execs, r_us in rest)
        steady = means[(len(means) - 1) // 4]
        mean = us / execs / 1e6  # one of them took at least this long
        if mean <= self.ratio * steady or mean <= self.min_s:
            return None
        model = load.model
        version = f" (version {load.version})" if load.version is not None else ""
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if mean >= self.critical_s else Severity.WARNING,
            model=model,
            summary=(
                f"The first executions of '{model}'{version} after it was (re)loaded took "
                f"{mean:.2f} s on average ({execs:g} ending in the scrape interval to "
                f"{clock(at)}), "
                f"{mean / max(steady, 1e-6):.0f}x its steady {steady * 1000:.1f} ms per "
                "execution (from /metrics: without the verbose log the instance and the "
                "request that paid are not named): the model does its set-up on the first "
                "requests."
            ),
            advice=ADVICE.format(model=model),
            first_seen_ns=load.at_ns,
            last_seen_ns=at,
            evidence=(
                Evidence(load.source, load.at_ns, load.ref, load.detail),
                Evidence(
                    "metrics",
                    at,
                    f'{INFER_US}{{model="{model}"}}',
                    f"rose {us / 1e6:.3f} s while {EXECS} rose {execs:g}",
                ),
                Evidence(
                    "metrics",
                    rest[-1][0],
                    f'{INFER_US}{{model="{model}"}}',
                    f"lower quartile of the next {len(rest)} intervals: {steady * 1000:.1f} ms "
                    "per execution",
                ),
            ),
        )

    def _other_cold(
        self, first: Execution, after: list[Execution], steady: float
    ) -> list[Execution]:
        """The first execution of each other instance, where it was as slow: a model with
        three instances pays its set-up three times (``rag_cold_start``: 4.05 s on each of
        rag_embed_0_2, _0_0 and _0_1), and naming one sent users to one instance."""
        firsts: dict[str, Execution] = {}
        for e in after:
            firsts.setdefault(e.instance, e)
        limit = max(self.min_s, self.ratio * steady)
        return [e for i, e in firsts.items() if i != first.instance and e.seconds > limit]


def _steady(rest: list[Execution]) -> float:
    """The steady state: the lower quartile of the executions after the first, not their
    median, so that another fault slowing the model right after its load (a slow child, a
    busy host) does not hide the cold start behind a steady state it inflated."""
    secs = sorted(e.seconds for e in rest)
    return secs[(len(secs) - 1) // 4]


@dataclass(frozen=True)
class Load:
    """When a model was last (re)loaded, and what says so."""

    model: str
    at_ns: int
    ref: str
    detail: str
    source: str = "log"
    version: int | None = None
    """The version the log's ``loading: M:V`` line named: two versions served at once both
    run instances named ``M_0_0``, and the user must know which one is cold."""


def _unlogged_loads(stats: list[ev.ModelStats], logged: set[str]) -> list[Load]:
    """Loads the log does not show: the last snapshot with nothing executed yet (see the
    module docstring), for models with no load line in the window."""
    last_zero: dict[str, ev.ModelStats] = {}
    ran: set[str] = set()
    for s in sorted(stats, key=lambda s: s.at_ns):
        if s.model in logged:
            continue
        if s.execution_count == 0:
            last_zero[s.model] = s
        elif s.model in last_zero:
            ran.add(s.model)
    return [
        Load(
            m,
            s.at_ns,
            f"/v2/models/stats {m} version {s.version}",
            "execution_count 0: nothing executed since its load",
            "stats",
        )
        for m, s in last_zero.items()
        if m in ran
    ]


def _waited_on(caller: Finding, child: Finding, calls: dict[str, set[str]]) -> bool:
    """Whether ``caller``'s slow first executions are only its wait on ``child``'s: from the
    log, the child's ran within the caller's; from /metrics (both), a traced call of the
    caller's went to the child, whose slow interval came no later."""
    if not (_from_scrapes(caller) or _from_scrapes(child)):
        return _within(child, caller)
    return (
        _from_scrapes(caller)
        and _from_scrapes(child)
        and child.model in calls.get(caller.model or "", ())
        and child.last_seen_ns <= caller.last_seen_ns
    )


def _from_scrapes(finding: Finding) -> bool:
    """Whether the finding was read from /metrics (no execution lines of its model)."""
    return any(e.source == "metrics" for e in finding.evidence)


def _within(inner: Finding, outer: Finding) -> bool:
    return outer.first_seen_ns <= inner.first_seen_ns and inner.last_seen_ns <= outer.last_seen_ns


def _secs(finding: Finding) -> int:
    return finding.last_seen_ns - finding.first_seen_ns


def _request_at(records: list[object], load: Load, first: Execution) -> str | None:
    """The id of the last request of the model set EXECUTING between the load and ``first``."""
    model_of: dict[str, str] = {}
    found: str | None = None
    for rec in records:
        if isinstance(rec, ev.RequestPrepared):
            model_of.setdefault(rec.request_id, rec.model)
        elif (
            isinstance(rec, ev.RequestStateChange)
            and rec.to_state == "EXECUTING"
            and rec.request_id
            and load.at_ns <= rec.header.at_ns <= first.start_ns
            and model_of.get(rec.request_id) == load.model
        ):
            found = rec.request_id
    return found
