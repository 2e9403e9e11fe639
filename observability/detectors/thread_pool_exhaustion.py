"""Thread-pool exhaustion: a BLS parent's concurrent calls queue for executor threads.

Why: every ``async_exec`` holds a thread while its child runs — a thread of Python's default
asyncio executor (``min(32, cpu + 4)`` threads: 6 on a 2-core host) and one of the python
backend's per-instance pool (``thread-pool-size``, default 32). A parent that fans out more
calls than that does not fail: the extra calls silently wait for a thread, and the parent's
latency becomes ``ceil(n / threads)`` child latencies.

Triton's own log shows it without any instrumentation. Each BLS child reaches Triton (its
``INITIALIZED`` state line) only once it holds a thread, so for one parent (child ids are
``<parent id>.<child>…``):

* they arrive in waves of the pool's size, one child latency apart (a wave starts when the
  previous one returns its threads);
* the last one arrives long after the parent started executing — that delay is the executor
  wait.

The cap is inferred from the plateau (the host's cpu count is in no signal): 32 or more is the
python backend pool, less is the asyncio executor or a pool the model made itself (a
``ThreadPoolExecutor`` running synchronous ``exec()`` calls); under 5 it can only be the
latter. When the in-model instrumentation (``observability.bls``) publishes
``triton_obs_bls_*`` on Triton's /metrics, its executor wait counter and pool capacity gauge
are used too.

Without request ids the children are read from instance lifecycles (``instances.py``): a
request to a model that the parent's model calls (``waits.callees``), admitted while a batch
of the parent's model runs and no other batch of a calling model does, is that batch's call
(with several open, nothing says whose it is, and it is not counted: a fan-out is still seen
while its parent runs alone, as a long fan-out mostly does). The waves show the same way in
the children's admission times. Batches of the parent's model that run *together* (started
and ended within a tenth of the shorter one's time, as when its clients fall in step: every
call of ``pz_pool_exhausted`` was made while both orchestrator instances ran, 0.15 ms apart)
are read as one: their calls arrive in waves of the pools' sizes added up, and each parent's
share is that divided by how many ran together.
Sequential code (one call at a time) and small fan-outs are never flagged.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

from observability import events as ev
from observability.detectors.instances import Admitted, Execution, Instances, instances_of
from observability.detectors.origins import STEP, origins_of
from observability.detectors.waits import callees
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity
from observability.rates import increase

__all__ = ["FanOut", "ThreadPoolExhaustion", "fan_outs"]

WAIT_SECONDS = (
    "triton_obs_bls_executor_wait_seconds_total",
    "triton_obs_bls_executor_wait_seconds",
)
WAITS = ("triton_obs_bls_executor_waits_total", "triton_obs_bls_executor_waits")
"""Today's name first; before 0.2 the counters had no ``_total`` (recordings keep it)."""
CAPACITY = "triton_obs_bls_thread_pool_capacity"
PEAK = "triton_obs_bls_inflight_peak"


@dataclass
class _Life:
    request_id: str
    created_ns: int
    offset: int
    executing_ns: int | None = None
    released_ns: int | None = None


@dataclass(frozen=True)
class FanOut:
    """One parent request and the BLS children it issued, as Triton saw them."""

    parent_id: str
    parent_model: str
    child_models: tuple[tuple[str, int], ...]
    """``(model, calls)``, most called first."""
    children: int
    started_ns: int
    """When the parent started executing."""
    plateau: int
    """Children per wave (median): the threads available to the parent's calls."""
    waves: int
    peak: int
    """Most children between reaching Triton and RELEASED at once; counts a little high,
    since a caller's thread is free when the response arrives, before the RELEASED line."""
    first_wait_s: float
    last_wait_s: float
    """Delay between the parent starting and its first / last child reaching Triton."""
    last_child_ns: int
    offset: int
    instance: str = ""
    """The parent's instance, for a parent without a request id (``parent_id`` empty)."""
    by_order: bool = False
    """Waves read from the log's order, not its times (whole-second times): the waits are
    not measured."""
    together: tuple[str, ...] = ()
    """Without ids, the instances of parents that ran together and whose calls were read as
    one (``children``, ``plateau`` and ``peak`` are then each parent's share)."""


def _lifecycles(window: Window) -> tuple[dict[str, _Life], dict[str, str]]:
    """Per request id: when Triton first saw it, started and released it; and its model."""
    lives: dict[str, _Life] = {}
    model_of: dict[str, str] = {}
    for rec in window.logs(ev.RequestStateChange, ev.RequestPrepared):
        if isinstance(rec, ev.RequestPrepared):
            if rec.request_id:
                model_of.setdefault(rec.request_id, rec.model)
            continue
        assert isinstance(rec, ev.RequestStateChange)
        rid = rec.request_id
        if not rid:
            continue  # <id_unknown>: cannot be joined to a parent
        at = rec.header.at_ns
        life = lives.get(rid)
        if life is None or (rec.from_state == "INITIALIZED" and life.released_ns is not None):
            life = lives[rid] = _Life(rid, at, rec.header.offset)
        if rec.to_state == "EXECUTING" and life.executing_ns is None:
            life.executing_ns = at
        elif rec.to_state == "RELEASED":
            life.released_ns = at
    return lives, model_of


def fan_outs(window: Window, min_children: int, wave_gap: float = 0.5) -> list[FanOut]:
    """Every parent with at least ``min_children`` BLS children, with their waves.

    A wave is a run of children reaching Triton with gaps under ``wave_gap`` times the children's
    median latency: with every thread taken, the next child can only start when one returns,
    roughly one child latency later. The plateau is the median wave size.
    """
    lives, model_of = _lifecycles(window)
    children: dict[str, list[_Life]] = defaultdict(list)
    for rid, life in lives.items():
        head = rid
        while "." in head:
            head = head.rsplit(".", 1)[0]
            if head in lives:
                children[head].append(life)
                break
    out: list[FanOut] = []
    for parent_id, kids in children.items():
        parent = lives[parent_id]
        if len(kids) < min_children or parent.executing_ns is None:
            continue
        created = sorted(k.created_ns for k in kids)
        latencies = [k.released_ns - k.created_ns for k in kids if k.released_ns is not None]
        gap = max(1_000_000, int(wave_gap * median(latencies))) if latencies else 1_000_000
        released = [k.released_ns for k in kids if k.released_ns is not None]
        sizes = _waves(created, released, gap, window.whole_seconds)
        peak = _peak(created, released)
        plateau = _plateau(sizes, peak, window.whole_seconds)
        if plateau is None:
            continue
        out.append(
            FanOut(
                parent_id=parent_id,
                parent_model=model_of.get(parent_id, ""),
                child_models=tuple(
                    Counter(model_of.get(k.request_id, "?") for k in kids).most_common()
                ),
                children=len(kids),
                started_ns=parent.executing_ns,
                plateau=plateau,
                waves=len(sizes),
                peak=peak,
                first_wait_s=max(0.0, (created[0] - parent.executing_ns) / 1e9),
                last_wait_s=max(0.0, (created[-1] - parent.executing_ns) / 1e9),
                last_child_ns=created[-1],
                offset=parent.offset,
                by_order=window.whole_seconds,
            )
        )
    return out


def _waves(created: list[int], ended: list[int], gap: int, by_order: bool) -> list[int]:
    """Children per wave. By time: a gap over ``gap`` between two children reaching Triton
    starts a wave. By order, for a log whose times are whole seconds (``--log-format
    ISO8601``: the lines of one second are told apart only by their order): a child that
    reaches Triton after another child was released starts one, since a capped pool frees a
    thread only when a call returns, while calls issued at once all arrive first."""
    sizes = [1]
    if by_order:
        edges = sorted([(t, 1) for t in created[1:]] + [(t, 0) for t in ended])
        returned = False
        for _at, arrival in edges:
            if not arrival:
                returned = True
            elif returned:
                sizes.append(1)
                returned = False
            else:
                sizes[-1] += 1
        return sizes
    for prev, cur in pairwise(created):
        if cur - prev > gap:
            sizes.append(1)
        else:
            sizes[-1] += 1
    return sizes


def _peak(created: list[int], ended: list[int]) -> int:
    """Most children in flight at once; at equal times a departure counts before an
    arrival."""
    inflight = peak = 0
    for _at, step in sorted([(t, 1) for t in created] + [(t, -1) for t in ended]):
        inflight += step
        peak = max(peak, inflight)
    return peak


def _plateau(sizes: list[int], peak: int, by_order: bool) -> int | None:
    """The pool's size: the median wave. By order a freed thread takes the next call at
    once, so waves after a full one are a call or two: the size is the most in flight, and
    only when one wave of that many arrived back to back (calls issued faster than they
    return, so the pauses are the pool's; at least 3, as a slow loop's calls pair up by
    chance). ``None``: no pool to tell."""
    if not by_order:
        return int(median(sizes))
    return peak if peak >= 3 and max(sizes) >= peak else None


class _Spans:
    """Parents' executions by model, for "which were open at t" without a scan of them all
    (that scan was half of an id-less recording's analysis): an execution open at ``t``
    started within the model's longest execution before it, or has not ended."""

    def __init__(self, parents: list[Execution]) -> None:
        self.ended: dict[str, list[Execution]] = defaultdict(list)
        self.open: list[Execution] = []
        for e in parents:  # sorted by start
            (self.ended[e.model] if e.end_ns else self.open).append(e)
        self.starts = {m: [e.start_ns for e in es] for m, es in self.ended.items()}
        self.longest = {
            m: max(int(e.end_ns or 0) - e.start_ns for e in es) for m, es in self.ended.items()
        }

    def open_at(self, t: int, models: set[str]) -> list[Execution]:
        out = [e for e in self.open if e.model in models and e.start_ns <= t]
        for m in models:
            starts = self.starts.get(m)
            if not starts:
                continue
            lo = bisect_left(starts, t - self.longest[m])
            hi = bisect_right(starts, t)
            out += [e for e in self.ended[m][lo:hi] if int(e.end_ns or 0) >= t]
        return out


_TOGETHER = 0.1
"""Batches started and ended within this share of the shorter one's time ran together."""


def _together(batches: list[Execution]) -> bool:
    """Whether these batches of one model ran in step (see the module docstring)."""
    if len({e.model for e in batches}) != 1 or any(e.end_ns is None for e in batches):
        return False
    starts = [e.start_ns for e in batches]
    ends = [int(e.end_ns or 0) for e in batches]
    shortest = min(end - start for start, end in zip(starts, ends, strict=True))
    allowed = _TOGETHER * shortest
    return max(starts) - min(starts) <= allowed and max(ends) - min(ends) <= allowed


def _unseen_until(inst: Instances) -> dict[str, int]:
    """Model -> until when one of its instances ran a batch begun before the window
    (``Instances.unseen_until``); ``""`` for an instance never seen executing, whose model
    the log does not name."""
    owner = {i: m for m, names in inst.model_instances.items() for i in names}
    out: dict[str, int] = {}
    for name, at in inst.unseen_until.items():
        model = owner.get(name, "")
        out[model] = max(out.get(model, at), at)
    return out


def idless_fan_outs(window: Window, min_children: int, wave_gap: float = 0.5) -> list[FanOut]:
    """``fan_outs`` for parents and children without request ids (module docstring)."""
    inst = instances_of(window)
    calls = callees(inst)
    callers: dict[str, set[str]] = defaultdict(set)
    for caller, models in calls.items():
        for model in models:
            callers[model].add(caller)
    parents = sorted((e for e in inst.executions if calls.get(e.model)), key=lambda e: e.start_ns)
    admitted = [r for e in inst.executions for r in e.requests]
    admitted += [r for queue in inst.queued.values() for r in queue]
    kids: dict[tuple[int, ...], list[Admitted]] = defaultdict(list)
    span = _Spans(parents)
    origin = origins_of(window)
    unseen = _unseen_until(inst)
    anyone = unseen.get("", 0)
    for r in admitted:
        if r.request_id or r.model not in callers:
            continue
        if any(r.prepared_ns <= max(unseen.get(m, 0), anyone) for m in callers[r.model]):
            # A batch of a caller begun before the window was running: it may have been the
            # caller (cx_healthy in a sliding window: the other instance's calls were read
            # as the one seen batch's, a fan-out held to 2 at once).
            continue
        if inst.instanceless and origin.get((r.prepared_ns, r.offset)) == STEP:
            continue  # an ensemble's step, sent by its scheduler (gen_postprocessing_leak)
        open_ = span.open_at(r.prepared_ns, callers[r.model])
        if len(open_) == 1:
            kids[(id(open_[0]),)].append(r)
        elif _together(open_):  # several open: only parents in step share their calls
            kids[tuple(sorted(map(id, open_)))].append(r)
    by_id = {id(e): e for e in parents}
    out = []
    for key, children in kids.items():
        # By their lines: parents begun in the same microsecond came in the order of their
        # ids, memory addresses, and so did the one the finding named (pz_pool_exhausted).
        group = sorted((by_id[i] for i in key), key=lambda e: (e.start_ns, e.offset))
        parent, k = group[0], len(group)
        if len(children) < min_children * k:
            continue
        created = sorted(r.prepared_ns for r in children)
        ended = [
            (r.prepared_ns, r.execution.end_ns)
            for r in children
            if r.execution is not None and r.execution.end_ns is not None
        ]
        latencies = [end - start for start, end in ended]
        gap = max(1_000_000, int(wave_gap * median(latencies))) if latencies else 1_000_000
        by_order = window.whole_seconds
        sizes = _waves(created, [end for _, end in ended], gap, by_order)
        spread = created[-1] - created[0]
        if not latencies or (not by_order and spread > 3 * len(sizes) * median(latencies)):
            continue  # waves a child latency apart, or sparse calls a long batch collected
        peak = _peak(created, [end for _, end in ended])
        plateau = _plateau(sizes, peak, by_order)
        if plateau is None:
            continue
        out.append(
            FanOut(
                parent_id="",
                parent_model=parent.model,
                child_models=tuple(
                    (m, n // k) for m, n in Counter(r.model for r in children).most_common()
                ),
                children=len(children) // k,
                started_ns=parent.start_ns,
                plateau=round(plateau / k),
                waves=len(sizes),
                peak=peak // k,
                first_wait_s=max(0.0, (created[0] - parent.start_ns) / 1e9),
                last_wait_s=max(0.0, (created[-1] - parent.start_ns) / 1e9),
                last_child_ns=created[-1],
                offset=parent.offset,
                instance=parent.instance,
                by_order=by_order,
                together=tuple(e.instance for e in group) if k > 1 else (),
            )
        )
    return out


@dataclass
class ThreadPoolExhaustion:
    """A parent's BLS calls plateau at a thread pool's size while later calls wait."""

    kind: str = "thread_pool_exhaustion"
    min_children: int = 8
    min_wait_s: float = 0.1
    """The last child must reach Triton at least this long after its parent started."""
    min_waves: int = 3
    wave_gap: float = 0.5
    """Children further apart than this times their median latency start a new wave."""
    python_pool_size: int = 32
    min_metric_wait_s: float = 1.0
    """With ``triton_obs_bls_*`` metrics: total executor wait in the window to flag."""
    critical_wait_s: float = 5.0

    def detect(self, window: Window) -> list[Finding]:
        worst: dict[str, list[FanOut]] = defaultdict(list)
        found = fan_outs(window, self.min_children, self.wave_gap)
        found += idless_fan_outs(window, self.min_children, self.wave_gap)
        for f in found:
            if (
                f.plateau >= 2  # one at a time is sequential code, not a pool
                and f.peak >= f.plateau  # the waves' children really overlapped
                and f.children >= 2 * f.plateau
                and f.waves >= self.min_waves
                and (f.last_wait_s >= self.min_wait_s or f.by_order)
            ):
                worst[f.parent_model].append(f)
        metric = self._from_metrics(window)
        findings = []
        for model in sorted(set(worst) | set(metric)):
            found = sorted(worst.get(model, []), key=lambda f: f.last_wait_s)
            findings.append(self._finding(model, found, metric.get(model, [])))
        return findings

    def _finding(self, model: str, found: list[FanOut], metric: list[Evidence]) -> Finding:
        pool_advice = (
            "Cap the concurrent calls: wrap each async_exec in an asyncio.Semaphore sized "
            "below the pool (or issue them in bounded batches); if the host can take it, "
            "give the loop a larger executor in initialize() "
            "(loop.set_default_executor(ThreadPoolExecutor(max_workers=N))), or the model's "
            "own ThreadPoolExecutor more max_workers, and raise "
            "--backend-config=python,thread-pool-size=N to match; or batch the children "
            "into fewer, larger requests (the child has dynamic batching for that)."
        )
        if not found:
            at = max(e.at_ns for e in metric)
            return Finding(
                kind=self.kind,
                severity=Severity.WARNING,
                model=model,
                summary=(
                    f"BLS calls from '{model}' waited for an executor thread: its concurrent "
                    f"calls reached the thread pool's capacity."
                ),
                advice=pool_advice,
                first_seen_ns=min(e.at_ns for e in metric),
                last_seen_ns=at,
                evidence=tuple(metric),
            )
        w = found[-1]
        if w.plateau >= self.python_pool_size:
            pool = f"the python backend's BLS thread pool (thread-pool-size, {w.plateau})"
        elif w.plateau >= 5:
            pool = (
                f"asyncio's default executor (min(32, cpu+4) = {w.plateau} threads, "
                f"so ~{w.plateau - 4} cores) or a thread pool of that size the model created"
            )
        else:  # asyncio's default executor has at least 5 threads (min(32, 1 + 4))
            pool = (
                f"a {w.plateau}-thread pool the model created (a ThreadPoolExecutor running "
                "exec() or async_exec(): smaller than asyncio's default executor)"
            )
        children = ", ".join(f"'{m}' x{n}" for m, n in w.child_models)
        main_child = w.child_models[0][0]
        if w.parent_id:
            who = f"Request {w.parent_id}"
        elif w.together:
            who = (
                f"Each of {len(w.together)} requests (no id) running together on "
                f"{', '.join(w.together)}"
            )
        else:
            who = f"A request (no id) on {w.instance}"
        waited = (
            f"the last calls waited for {w.waves - 1} earlier waves to return (the log's times "
            "are whole seconds, --log-format ISO8601: the waves are read from its order and "
            "the wait is not measured)"
            if w.by_order
            else f"the last call waited {w.last_wait_s:.2f} s for a thread"
        )
        summary = (
            f"{who} of '{model}' issued {w.children} BLS calls (mostly to "
            f"'{main_child}') but only about {w.plateau} ran at once — the limit of {pool}; "
            f"{waited}."
        )
        each = " per parent" if w.together else ""
        evidence = [
            Evidence(
                "log",
                w.started_ns,
                f"triton.log@{w.offset}",
                (
                    f"parents on {', '.join(w.together)} ({model}) executing together; "
                    f"{w.children} children each to {children} (no ids: calls admitted while "
                    "they ran, shared out)"
                )
                if w.together
                else f"parent {w.parent_id or w.instance} ({model}) executing; {w.children} "
                f"children to {children}"
                + ("" if w.parent_id else " (no ids: calls admitted while it ran)"),
            ),
            Evidence(
                "log",
                w.last_child_ns,
                f"triton.log request ids {w.parent_id}.*" if w.parent_id else "triton.log",
                f"children reached Triton in {w.waves} waves of ~{w.plateau}{each} (at most "
                f"{w.peak} between INITIALIZED and RELEASED at once{each}); first child reached "
                f"Triton {w.first_wait_s * 1000:.0f} ms after the parent started, the last "
                f"{w.last_wait_s * 1000:.0f} ms after",
            ),
        ]
        if len(found) > 1:
            evidence.append(
                Evidence(
                    "log",
                    found[0].started_ns,
                    "triton.log",
                    f"{len(found)} parent requests of '{model}' hit the cap: "
                    + ", ".join(f.parent_id or f.instance for f in found[-10:]),
                )
            )
        return Finding(
            kind=self.kind,
            severity=(
                Severity.CRITICAL if w.last_wait_s >= self.critical_wait_s else Severity.WARNING
            ),
            model=model,
            request_id=w.parent_id or None,
            summary=summary,
            advice=pool_advice,
            first_seen_ns=min(f.started_ns for f in found),
            last_seen_ns=max(f.last_child_ns for f in found),
            evidence=(*evidence, *metric),
        )

    def _from_metrics(self, window: Window) -> dict[str, list[Evidence]]:
        """Per parent model: evidence from the instrumentation's executor-wait counter."""
        waits: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
        calls: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
        last_at: dict[tuple[str, str], int] = {}
        for names, into in ((WAIT_SECONDS, waits), (WAITS, calls)):
            for _target, at, s in (row for name in names for row in window.samples(name)):
                key = (s.label("model"), _instance(s))
                into[key].append((at / 1e9, s.value))
                last_at[key] = at
        capacity: dict[tuple[str, str], float] = {}
        peak: dict[tuple[str, str], float] = {}
        for name, gauge, pick in ((CAPACITY, capacity, min), (PEAK, peak, max)):
            for _target, _at, s in window.samples(name):
                key = (s.label("model"), _instance(s))
                gauge[key] = pick(gauge.get(key, s.value), s.value)
        out: dict[str, list[Evidence]] = defaultdict(list)
        for key, points in waits.items():
            model, instance = key
            found = increase(points)
            if found is None or found[0] < self.min_metric_wait_s:
                continue
            cap, top = capacity.get(key), peak.get(key)
            if cap is not None and top is not None and top < cap:
                continue  # waits without a full pool: not this pathology
            n = increase(calls.get(key, []))
            mean = f", mean {found[0] / n[0]:.3f} s over {n[0]:g} calls" if n and n[0] else ""
            out[model].append(
                Evidence(
                    "metrics",
                    last_at[key],
                    f'{WAIT_SECONDS}{{model="{model}",instance="{instance}"}}',
                    f"executor wait grew by {found[0]:.2f} s{mean}; in-flight peak "
                    f"{top if top is not None else '?'} of capacity "
                    f"{cap if cap is not None else '?'}",
                )
            )
        return out


def _instance(sample: ev.MetricSample) -> str:
    """The library's model-instance label (``instance`` before 0.2, as recordings keep it)."""
    return sample.label("model_instance") or sample.label("instance")
