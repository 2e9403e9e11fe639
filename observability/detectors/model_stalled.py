"""Model stalled: requests queue for a model while it executes nothing, seen from metrics alone.

Why: every hang and deadlock detector reads Triton's verbose log (the request state machine,
the instance lines), and many deployments run without ``--log-verbose``. On such a Triton an
outage left no finding at all. Two series on ``/metrics`` are enough to see the outage, though
not its cause:

* ``nv_inference_pending_request_count{model}`` (a gauge) counts requests *queued* for the
  model — not those executing;
* ``nv_inference_exec_count{model}`` (a counter, no ``_total``) grows when an execution
  *ends* (Triton reports a batch's statistics when it is released).

Rule: at every scrape from ``since`` to the last one the pending count is above zero, and the
execution counter has not moved since ``since``; when that lasts longer than the model's
deadline, the model is stalled — one critical finding per model. ``since`` is the later of the
first scrape of the trailing run of ``pending > 0`` and the last scrape at which the counter
moved or was reset, so a long but healthy execution with nothing queued, an idle model, and a
busy model that keeps completing work never qualify. A counter that goes *down* is a reset (a
restarted Triton, a reloaded model; ``observability.rates.counter_increase``): the stall clock
starts again there instead of reading the drop as "nothing executed".

``/v2/models/stats`` is the second witness: its ``execution_count`` (also counted at the end
of an execution) moving between two snapshots taken after ``since`` vetoes the finding, it
stands in for ``nv_inference_exec_count`` when the page lacks that series, and its
``last_inference_ms`` says since when nothing finished. It cannot replace the pending gauge:
every count in it (``queue_count`` too) is taken when a request completes, so nothing in it
says what waits now. Without ``/metrics`` there is no finding.

The deadline is ``DeadlinePolicy`` (``deadlines.py``) with ``deadline_s`` as its ceiling and
``deadlines`` as per-model overrides. Its durations come from the stats, not the verbose log:
the mean execution time between two snapshots (compute time over completed requests), one
value per interval in which the model executed.

The shutdown drain is a third witness, at any log verbosity: while Triton waits out its exit
timeout it logs, once a second, ``Model 'M' (version V) has N in-flight inferences``. A
count that stays above zero and never goes down through two or more of those lines is work
the model does not complete (server#6239: 71 and 35 in-flight inferences that never moved):
critical past the model's deadline, a warning before (the paste may stop early).

One outage, one alert: when the window holds verbose-log instance lines for the model
(``InstanceExecuting``/``InstanceReleased``), the log-based detectors (``hung_request``,
``bls_deadlock``) name the request and instance; this detector then says nothing for it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import pairwise

from observability import events as ev
from observability.detectors.deadlines import DeadlinePolicy
from observability.detectors.requests import log_ref
from observability.detectors.window import Window, per_window
from observability.findings import Evidence, Finding, Severity
from observability.rates import counter_increase

__all__ = ["Drain", "ModelStalled", "Stall", "drains", "ended_stalls", "logged_models", "stalls"]

PENDING = "nv_inference_pending_request_count"
EXECUTIONS = "nv_inference_exec_count"

Points = list[tuple[int, float]]
"""``(at_ns, value)`` in time order, one per scrape (the model's versions summed)."""


@dataclass(frozen=True)
class Stall:
    """A trailing run of scrapes where ``model`` had requests queued and executed nothing."""

    model: str
    target: str
    since_ns: int
    last_ns: int
    queued: float
    """Pending requests at the last scrape."""
    most_queued: float
    scrapes: int
    executions: float | None
    """The execution counter during the stall (``None`` when only the stats had one)."""
    moved_ns: int | None
    """The last scrape at which the counter moved or was reset; ``None``: not in the window."""
    reset: bool = False
    """Whether that last change was a reset (the counter went down)."""
    ended_ns: int | None = None
    """The scrape at which a stall that ended was seen over: the counter moved, or nothing
    was queued any more (``None``: stalled at the last scrape)."""

    @property
    def seconds(self) -> float:
        return (self.last_ns - self.since_ns) / 1e9


def series_by_model(
    rows: Iterable[tuple[str, int, ev.MetricSample]],
) -> dict[tuple[str, str], Points]:
    """Per ``(target, model)``: one point per scrape, the model's versions summed."""
    summed: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for target, at_ns, sample in rows:
        model = sample.label("model")
        if not model:
            continue
        per_scrape = summed[(target, model)]
        per_scrape[at_ns] = per_scrape.get(at_ns, 0.0) + sample.value
    return {key: sorted(points.items()) for key, points in summed.items()}


def points_by_model(window: Window, name: str) -> dict[tuple[str, str], dict[int, float]]:
    """``(target, model)`` -> scrape time -> value of one sample name (versions summed; each
    target its own: two servers may serve a model of the same name)."""
    return {key: dict(points) for key, points in series_by_model(window.samples(name)).items()}


def _last_change(points: Sequence[tuple[int, float]], until_ns: int) -> tuple[int | None, bool]:
    """The last instant (at or before ``until_ns``) at which a counter grew or was reset."""
    before = [change for change in _changes(points) if change[0] <= until_ns]
    return before[-1] if before else (None, False)


def _stats_series(stats: Iterable[ev.ModelStats]) -> dict[str, Points]:
    summed: dict[str, dict[int, float]] = defaultdict(dict)
    for s in stats:
        per = summed[s.model]
        per[s.at_ns] = per.get(s.at_ns, 0.0) + s.execution_count
    return {model: sorted(points.items()) for model, points in summed.items()}


def stalls(
    pending: Iterable[tuple[str, int, ev.MetricSample]],
    executions: Iterable[tuple[str, int, ev.MetricSample]],
    stats: Sequence[ev.ModelStats] = (),
) -> list[Stall]:
    """Every model whose trailing scrapes show queued requests and no execution, longest
    first; the deadline is the caller's to apply."""
    queued = series_by_model(pending)
    executed = series_by_model(executions)
    by_stats = _stats_series(stats)
    out: list[Stall] = []
    for (target, model), points in queued.items():
        if not points or points[-1][1] <= 0:
            continue
        run = len(points) - 1
        while run > 0 and points[run - 1][1] > 0:
            run -= 1
        last_ns = points[-1][0]
        counter = executed.get((target, model))
        if counter:
            moved, reset = _last_change(counter, last_ns)
            value: float | None = counter[-1][1]
        elif model in by_stats:
            moved, reset = _last_change(by_stats[model], last_ns)
            value = None
        else:
            continue  # queued, but nothing says whether it executes
        since = points[run][0] if moved is None else max(points[run][0], moved)
        if since >= last_ns:
            continue
        if model in by_stats and _moved_after(by_stats[model], since, last_ns):
            continue  # the stats saw an execution end after the stall began
        run_values = [v for at, v in points if at >= since]
        out.append(
            Stall(
                model=model,
                target=target,
                since_ns=since,
                last_ns=last_ns,
                queued=points[-1][1],
                most_queued=max(run_values),
                scrapes=len(run_values),
                executions=value,
                moved_ns=moved,
                reset=reset,
            )
        )
    return sorted(out, key=lambda s: (-s.seconds, s.model))


def ended_stalls(
    pending: Iterable[tuple[str, int, ev.MetricSample]],
    executions: Iterable[tuple[str, int, ev.MetricSample]],
    stats: Sequence[ev.ModelStats] = (),
) -> list[Stall]:
    """Every stretch, before the last scrape, in which a model had requests queued at each
    scrape and its execution counter stood still, and that then ended: the counter moved or
    the queue emptied. A stall that passes leaves its clients' timeouts and nothing else on
    /metrics (img_preprocess_hang_quiet: 19 s of the whole pipeline, until a guard in the
    caller answered its calls with errors). Longest first; the deadline is the caller's."""
    queued = series_by_model(pending)
    executed = series_by_model(executions)
    by_stats = _stats_series(stats)
    out: list[Stall] = []
    for (target, model), points in queued.items():
        counter = executed.get((target, model)) or by_stats.get(model)
        if not counter:
            continue
        changed = _changes(counter)
        changes = [at for at, _ in changed]
        resets = {at for at, reset in changed if reset}
        since: int | None = None
        last_ns = 0
        most = 0.0
        scrapes = 0
        for at, value in points:
            moved = _last_before(changes, at)
            if since is not None and (value <= 0 or (moved is not None and moved > since)):
                # Ended by a reset (a restarted Triton, a reloaded model): the restart is
                # what the other findings tell, and the queued requests went with it.
                if (
                    last_ns > since
                    and moved not in resets
                    and not (model in by_stats and _moved_after(by_stats[model], since, last_ns))
                ):
                    out.append(
                        Stall(model, target, since, last_ns, 0.0, most, scrapes,
                              _value_at(counter, last_ns), moved, ended_ns=at)
                    )  # fmt: skip
                since = None
            if value <= 0:
                continue
            if since is None:
                since = at if moved is None else max(at, moved)
                most, scrapes = 0.0, 0
            last_ns, most, scrapes = at, max(most, value), scrapes + 1
    return sorted(out, key=lambda s: (-s.seconds, s.model))


def _changes(points: Sequence[tuple[int, float]]) -> list[tuple[int, bool]]:
    """Each instant a counter grew or was reset, with whether it was a reset."""
    return [
        (at, cur < prev)
        for (_, prev), (at, cur) in pairwise(points)
        if cur < prev or counter_increase(prev, cur) > 0
    ]


def _last_before(changes: Sequence[int], at_ns: int) -> int | None:
    i = bisect_right(changes, at_ns)
    return changes[i - 1] if i else None


def _value_at(points: Sequence[tuple[int, float]], at_ns: int) -> float:
    return next((v for at, v in reversed(points) if at <= at_ns), points[0][1])


def _moved_after(points: Sequence[tuple[int, float]], since_ns: int, until_ns: int) -> bool:
    """Whether the counter grew between two snapshots both taken in ``[since, until]``."""
    inside = [(at, v) for at, v in points if since_ns <= at <= until_ns]
    return any(
        cur >= prev and counter_increase(prev, cur) > 0 for (_, prev), (_, cur) in pairwise(inside)
    )


@dataclass(frozen=True)
class Drain:
    """A model's in-flight count during shutdown that never went down."""

    model: str
    count: int
    since_ns: int
    last_ns: int
    lines: tuple[ev.ExitInflight, ...]

    @property
    def seconds(self) -> float:
        return (self.last_ns - self.since_ns) / 1e9


def drains(records: Iterable[ev.ExitInflight]) -> list[Drain]:
    """Per model (versions summed per line time), the trailing run of drain lines whose
    in-flight count stayed above zero and never dropped; only runs of two lines or more."""
    by_model: dict[str, dict[int, list[ev.ExitInflight]]] = defaultdict(dict)
    for r in records:
        by_model[r.model].setdefault(r.header.at_ns // 500_000_000, []).append(r)
    out = []
    for model, ticks in by_model.items():
        series = [(lines, sum(r.count for r in lines)) for _, lines in sorted(ticks.items())]
        run = len(series) - 1
        if series[run][1] <= 0:
            continue
        while run > 0 and 0 < series[run - 1][1] <= series[run][1]:  # never went down
            run -= 1
        kept = series[run:]
        if len(kept) < 2:
            continue
        lines = tuple(r for group, _ in kept for r in group)
        first, last = kept[0][0][0].header.at_ns, kept[-1][0][0].header.at_ns
        out.append(Drain(model, kept[-1][1], first, last, lines))
    return sorted(out, key=lambda d: (-d.seconds, d.model))


@per_window
def logged_models(window: Window) -> frozenset[str]:
    """Models with verbose-log instance lines in the window: the log-based detectors' own.
    Once per window: model_stalled and hung_request's level-0 path both leave them out."""
    records = window.logs(ev.InstanceExecuting, ev.InstanceReleased)
    owner = {r.instance: r.model for r in records if isinstance(r, ev.InstanceExecuting)}
    models = set(owner.values())
    for r in records:
        if isinstance(r, ev.InstanceReleased):
            # Triton names instances <model>_<group>_<index> unless the config names them.
            models.add(owner.get(r.instance) or r.instance.rsplit("_", 2)[0])
    return frozenset(models)


def execution_durations(stats: Sequence[ev.ModelStats]) -> dict[str, list[float]]:
    """Per model, the mean execution time (s) of each snapshot interval in which it executed:
    compute time over completed requests (a batch's requests each carry its compute time)."""
    by_key: dict[tuple[str, str], list[ev.ModelStats]] = defaultdict(list)
    for s in stats:
        by_key[(s.model, s.version)].append(s)
    out: dict[str, list[float]] = defaultdict(list)
    for (model, _), snaps in by_key.items():
        snaps.sort(key=lambda s: s.at_ns)
        for prev, cur in pairwise(snaps):
            done = cur.success_count - prev.success_count
            compute = _compute_ns(cur) - _compute_ns(prev)
            ran = cur.execution_count - prev.execution_count
            if done > 0 and ran > 0 and compute >= 0:
                out[model].append(compute / done / 1e9)
    return out


def _compute_ns(s: ev.ModelStats) -> int:
    return s.compute_input_ns + s.compute_infer_ns + s.compute_output_ns


def _blind(window: Window, model: str, since_ns: int) -> str:
    """Why the metrics speak alone: no verbose log, or one that began after the stall did
    (cap_doc_layout_hang_late: requests logged, none executing, the stuck batch's lines
    written before the log's copy began), or a model whose batches never started though its
    log runs from its load (rl_default_pool_deadlock: the rate limiter held its queue)."""
    loaded = any(r.model == model and r.state == "loaded" for r in window.logs(ev.ModelStateChange))
    # A stalled model is never among logged_models (its batches would have the log-based
    # detectors); other models' batches there show the log was on while none of it started.
    if loaded and logged_models(window):
        return (
            "The verbose log runs from its load and no batch of it ever started: its requests "
            "wait for something other than its instances (a rate limiter's resource, a "
            "sequence slot, a higher priority's requests)."
        )
    if window.logs(ev.RequestPrepared):
        first = window.first_log_ns
        if first is not None and first < since_ns:
            # ``watch``'s window: the log runs from before the stall, its evidence does not
            # reach the model's last batch (rl_resource_deadlock 36 s in, 20 s of evidence).
            return (
                "The verbose log runs from before the stall and has no batch of it: none "
                "started since (its requests wait for something other than its instances: a "
                "rate limiter's resource, a sequence slot, a higher priority's requests), or "
                "the one that holds it began before this window (watch --evidence)."
            )
        return (
            "The verbose log here begins after the stall did (no line of the batch that holds "
            "the model is in it): a copy of the log from the server's start would name the "
            "request and instance."
        )
    return (
        "Seen from metrics only: Triton's verbose log (--log-verbose 1) would tell which "
        "request and instance hold it."
    )


def _clock(at_ns: int) -> str:
    return datetime.fromtimestamp(at_ns / 1e9, tz=timezone.utc).strftime("%H:%M:%S")


def _series_ref(name: str, model: str, target: str) -> str:
    return f'{name}{{model="{model}"}} @ {target}'


@dataclass
class ModelStalled:
    """Queued requests and no execution for longer than the model's deadline, from metrics."""

    kind: str = "model_stalled"
    deadline_s: float = 10.0
    """The ceiling of every model's deadline (the same setting the log-based detectors use)."""
    deadlines: Mapping[str, float] = field(default_factory=dict)
    """Per-model deadlines (seconds) that replace the learned one."""

    def detect(self, window: Window) -> list[Finding]:
        found = stalls(window.samples(PENDING), window.samples(EXECUTIONS), window.model_stats)
        drained = drains(window.logs(ev.ExitInflight))
        deferred = logged_models(window)
        policy = DeadlinePolicy(ceiling_s=self.deadline_s, overrides=dict(self.deadlines))
        durations = execution_durations(window.model_stats)
        out: list[Finding] = []
        reported: set[str] = set()
        passed = ended_stalls(
            window.samples(PENDING), window.samples(EXECUTIONS), window.model_stats
        )
        for stall in [*found, *passed]:  # one per model: the stall now before one that ended
            if stall.model in deferred or stall.model in reported:
                continue
            seen = durations.get(stall.model, [])
            deadline = policy.deadline_s(stall.model, seen)
            if stall.seconds <= deadline:
                continue
            reported.add(stall.model)
            out.append(self._finding(stall, deadline, policy.explain(stall.model, seen), window))
        for drain in drained:
            if drain.model in deferred or drain.model in reported:
                continue
            reported.add(drain.model)
            deadline = policy.deadline_s(drain.model, durations.get(drain.model, []))
            out.append(self._drain_finding(drain, deadline))
        return out

    def _drain_finding(self, drain: Drain, deadline: float) -> Finding:
        past = drain.seconds > deadline
        summary = (
            f"{drain.model} does not complete its work: while Triton shut down, its "
            f"{drain.count} in-flight inference{'s' if drain.count != 1 else ''} did not go "
            f"down for {drain.seconds:.0f} s ({len(drain.lines)} drain lines)"
            + (f", past its {deadline:.3g} s deadline." if past else
               f"; the log stops before its {deadline:.3g} s deadline.")
            + " Seen from the shutdown drain only: the verbose log (--log-verbose 1) would "
            "tell which requests and instances hold it."
        )  # fmt: skip
        evidence = tuple(
            Evidence(
                "log",
                r.header.at_ns,
                log_ref(r.header.offset),
                f"Model '{r.model}' (version {r.version}) has {r.count} in-flight inferences",
            )
            for r in (drain.lines[0], drain.lines[-1])
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if past else Severity.WARNING,
            model=drain.model,
            summary=summary,
            advice=(
                "Requests entered the model and never finished: an execute blocked (a BLS "
                "call that never returns, a deadlock, a lock or I/O), or a GPU wedged. Before "
                "restarting, take py-spy dump --pid <stub pid> (python models) or the GPU's "
                "state; run with --log-verbose 1 to name the requests and instances, and bound "
                "every BLS call with a timeout."
            ),
            first_seen_ns=drain.since_ns,
            last_seen_ns=drain.last_ns,
            evidence=evidence,
        )

    def _finding(self, stall: Stall, deadline: float, why: str, window: Window) -> Finding:
        stats = sorted(
            (s for s in window.model_stats if s.model == stall.model), key=lambda s: s.at_ns
        )
        last_inference_ns = max((s.last_inference_ms for s in stats), default=0) * 1_000_000
        began = stall.since_ns
        if 0 < last_inference_ns <= stall.last_ns:
            idle = f"nothing has finished executing since {_clock(last_inference_ns)} UTC"
            began = min(began, last_inference_ns)
        else:
            idle = f"nothing has executed since {_clock(stall.since_ns)} UTC"
        if stall.ended_ns is not None:
            return self._ended_finding(stall, deadline, why)
        queued = f"{stall.queued:g} request{'s' if stall.queued != 1 else ''}"
        summary = (
            f"{stall.model} is stalled: {queued} queued and {idle} — {stall.seconds:.1f} s "
            f"of queued work with no execution, past its {deadline:.3g} s deadline ({why}). "
            + _blind(window, stall.model, began)
        )
        evidence = [
            Evidence(
                "metrics",
                stall.last_ns,
                _series_ref(PENDING, stall.model, stall.target),
                f"{stall.queued:g} queued at the last scrape, > 0 at all {stall.scrapes} "
                f"scrapes since {_clock(stall.since_ns)} UTC (at most {stall.most_queued:g})",
            ),
            Evidence(
                "metrics",
                stall.since_ns,
                _series_ref(EXECUTIONS, stall.model, stall.target),
                (
                    f"{stall.executions:g} and unchanged for {stall.seconds:.1f} s"
                    if stall.executions is not None
                    else "not on the page; the execution count comes from /v2/models/stats"
                )
                + (" (the counter was reset: Triton restarted or the model reloaded)"
                   if stall.reset else ""),
            ),
        ]  # fmt: skip
        during = [s for s in stats if s.at_ns >= stall.since_ns]
        if during:
            last = during[-1]
            evidence.append(
                Evidence(
                    "stats",
                    last.at_ns,
                    f"/v2/models/stats {stall.model} version {last.version}",
                    f"execution_count {last.execution_count} over {len(during)} snapshots "
                    f"since the stall began; inference_count {last.inference_count}, "
                    f"success_count {last.success_count}; last_inference "
                    + (_clock(last.last_inference_ms * 1_000_000) + " UTC"
                       if last.last_inference_ms else "never"),
                )
            )  # fmt: skip
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=stall.model,
            summary=summary,
            advice=_ADVICE,
            first_seen_ns=stall.since_ns,
            last_seen_ns=stall.last_ns,
            evidence=tuple(evidence),
        )

    def _ended_finding(self, stall: Stall, deadline: float, why: str) -> Finding:
        assert stall.ended_ns is not None
        how = (
            "its execution count moved again"
            if stall.moved_ns is not None and stall.moved_ns > stall.since_ns
            else "its queue emptied with no execution (the queued requests timed out or "
            "were cancelled)"
        )
        summary = (
            f"{stall.model} stalled for {stall.seconds:.1f} s and then went on: requests were "
            f"queued (at most {stall.most_queued:g}) at every scrape from "
            f"{_clock(stall.since_ns)} to {_clock(stall.last_ns)} UTC while it finished no "
            f"execution, past its {deadline:.3g} s deadline ({why}); at "
            f"{_clock(stall.ended_ns)} UTC {how}. Its clients waited through it, or timed out. "
            "Seen from metrics only: Triton's verbose log (--log-verbose 1) would tell which "
            "request and instance held it."
        )
        evidence = (
            Evidence(
                "metrics",
                stall.since_ns,
                _series_ref(PENDING, stall.model, stall.target),
                f"> 0 at all {stall.scrapes} scrapes from {_clock(stall.since_ns)} to "
                f"{_clock(stall.last_ns)} UTC (at most {stall.most_queued:g})",
            ),
            Evidence(
                "metrics",
                stall.ended_ns,
                _series_ref(EXECUTIONS, stall.model, stall.target),
                (
                    f"{stall.executions:g} and unchanged for {stall.seconds:.1f} s"
                    if stall.executions is not None
                    else "the execution count of /v2/models/stats unchanged"
                )
                + f"; at {_clock(stall.ended_ns)} UTC {how}",
            ),
        )
        return Finding(
            kind=self.kind,
            severity=Severity.WARNING,
            model=stall.model,
            summary=summary,
            advice=_ADVICE,
            first_seen_ns=stall.since_ns,
            last_seen_ns=stall.ended_ns,
            evidence=evidence,
        )


_ADVICE = (
    "Something holds every instance of the model: a BLS call into the model's own "
    "only instance or a cycle A→B→A (a deadlock), an execute blocked on I/O or a "
    "lock, a stub that stopped answering. Turn the verbose log on to name the "
    "request and instance (restart with --log-verbose 1, or live: POST "
    '/v2/logging {"log_verbose_level": 1}); py-spy dump --pid <stub pid> shows '
    "where the stub waits. Restarting the model frees it; the queued requests are lost."
)
