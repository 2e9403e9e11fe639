"""Instance saturation: every instance of a model busy for seconds while its queue grows.

Why this rule: Triton dispatches a queued request to the first free instance, so a queue that
grows while *every* instance is executing means the model cannot keep up with its callers —
in a BLS pipeline usually one slow child behind a parent with many instances (8 router
instances calling 1 classifier instance). Busy time comes from the verbose log (``model M,
instance I, executing N requests`` … ``model instance name I released N requests``), the queue
from ``nv_inference_pending_request_count{model}``; with no /metrics (a user's log alone) from
the log itself: each request from its ``prepared:`` line to the batch that took it
(``instances.py``), read once a second as a scrape reads the gauge.

What it deliberately does not flag:

* momentary all-busy moments (a dynamically batched model with two instances queues a few
  requests for a millisecond while both run: the demo's detector) — the all-busy stretch must
  last ``min_busy_s``;
* a busy model whose queue is steady — the pending count must rise during the stretch;
* the steady state of a closed loop: clients that keep a fixed number of requests in flight
  (perf_analyzer's ``--concurrency-range``, ``async_infer`` with N slots) keep the slowest
  model busy with a level queue from the moment they start. A stretch that began with the
  model's first traffic in the window has no idle level to rise from, so its queue must grow
  past the level it held once it filled (the median of its first seconds) — by half that
  level and at least ``min_rise`` — and its requests must have waited several batches, not
  the one a batching model at its clients' pace makes each wait (hx_healthy: 16 tickets in
  flight, 12 then 8 queued for 35 s, every one answered; hx_healthy_ramp: 4 -> 16 -> 4),
  unless the model or one of its callees slowed 2x across the stretch: a creep, whose queue
  a closed loop keeps level too (sw_pacing_leak);
* a burst of clients' requests that keeps a model only clients call all busy for less than
  ``min_surge_s`` (the load's own variance: a Poisson rate near capacity, sw_healthy_rate);
* a model whose every request fails in its backend (a dead stub answers each execution with
  an error after its timeout: busy, but doing nothing) — that is ``stub_unhealthy``;
* one execution holding an instance (a hang, a deadlock, a cold start) — that is
  ``hung_request``, ``bls_deadlock`` or ``cold_start``; saturation needs work flowing too
  slowly: at least ``min_executions`` executions completed inside the stretch and no single
  execution longer than ``max_single_fraction`` of it.

Client cancellations (``Cancellation notification received for ...``: a gRPC deadline or
cancel) during the stretch are counted in the finding: Triton keeps executing a cancelled
request, so a saturated model may be busy with work nobody waits for. The line names no model
and no request, so they are counted, not attributed.

The upstream callers are the parents of the requests the model received during the stretch:
a BLS child's id is ``<parent id>.<child>…`` and the parent's model is on its own
``prepared`` log line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from observability import events as ev
from observability.detectors.backend_failures import failing
from observability.detectors.instances import Execution, Instances, instances_of
from observability.detectors.stub_unhealthy import dead_stubs
from observability.detectors.waits import callees
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["InstanceSaturation", "Stretch", "all_busy_stretches"]

PENDING = "nv_inference_pending_request_count"
_LOG_SCRAPE_NS = 1_000_000_000
"""How often the queue a log alone tells is read (see ``_sampled``): a scrape's interval."""


@dataclass(frozen=True)
class Stretch:
    """A time span during which every known instance of ``model`` was executing."""

    model: str
    instances: tuple[str, ...]
    start_ns: int
    end_ns: int
    executions: int
    """Executions that completed inside the stretch."""
    first_offset: int
    """Log byte offset of the execution that opened the stretch."""
    longest_s: float = 0.0
    """The longest single execution that overlapped the stretch."""

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def all_busy_stretches(
    records: Iterable[object],
    until_ns: int,
    merge_gap_s: float = 0.025,
    capacity: dict[str, int] | None = None,
) -> list[Stretch]:
    """Maximal all-instances-busy spans per model from Instance{Executing,Released} records.

    Two all-busy spans separated by less than ``merge_gap_s`` are one stretch: a saturated
    instance picks the next queued request within microseconds of releasing the last one,
    or, with dynamic batching, once the batcher's queue delay is over (emb_encode_saturated:
    gaps up to 19 ms under a 10 ms max_queue_delay; a 5 ms gap cut 14 s of saturation into
    stretches of 1 s), and a rate limiter hands its resource on in 5 to 11 ms
    (doc_layout_rate_saturation).
    An execution still open at ``until_ns`` counts as busy until then. Linear in the records.
    ``capacity``: model -> how many of its instances may run at once, when fewer than all
    (a rate limiter's resources); a stretch is then that many busy.
    """
    records = list(records)
    capacity = capacity or {}
    model_of: dict[str, str] = {}
    for rec in records:
        if isinstance(rec, ev.InstanceExecuting):
            model_of[rec.instance] = rec.model
    instances: dict[str, set[str]] = {}
    for instance, model in model_of.items():
        instances.setdefault(model, set()).add(instance)

    gap_ns = int(merge_gap_s * 1e9)
    busy: dict[str, set[str]] = {m: set() for m in instances}
    started: dict[str, int] = {}
    # Per model: [start, end, executions completed, log offset, longest execution ns]; a
    # stretch that ended waits in ``done`` in case the model is all busy again within the gap.
    open_: dict[str, list[int]] = {}
    done: dict[str, list[int]] = {}
    out: list[Stretch] = []

    def close(model: str) -> None:
        start, end, count, offset, longest = done.pop(model)
        members = tuple(sorted(instances[model]))
        out.append(Stretch(model, members, start, end, count, offset, longest / 1e9))

    for rec in records:
        if isinstance(rec, ev.InstanceExecuting):
            model, at = rec.model, rec.header.at_ns
            busy[model].add(rec.instance)
            started[rec.instance] = at
            full = len(busy[model]) >= capacity.get(model, len(instances[model]))
            if full and model not in open_:
                last = done.get(model)
                if last is not None and at - last[1] <= gap_ns:
                    open_[model] = done.pop(model)  # resume the previous stretch
                else:
                    if last is not None:
                        close(model)
                    open_[model] = [at, at, 0, rec.header.offset, 0]
        elif isinstance(rec, ev.InstanceReleased):
            model = model_of.get(rec.instance, "")
            if rec.instance not in busy.get(model, ()):
                continue
            at = rec.header.at_ns
            stretch = open_.get(model)
            if stretch is not None:
                stretch[2] += 1
                stretch[1] = at
                # Every instance busy until now, the releasing one and any still held (a hung
                # request holds its instance through every stretch until it is released).
                for instance in busy[model]:
                    stretch[4] = max(stretch[4], at - started.get(instance, at))
                done[model] = open_.pop(model)
            busy[model].discard(rec.instance)
    for model, stretch in open_.items():
        stretch[1] = until_ns
        for instance in busy[model]:
            stretch[4] = max(stretch[4], until_ns - started.get(instance, until_ns))
        done[model] = stretch
    for model in list(done):
        close(model)
    return sorted(out, key=lambda s: s.start_ns)


@dataclass
class InstanceSaturation:
    """All instances of a model busy ≥ ``min_busy_s`` while its pending count rises."""

    kind: str = "instance_saturation"
    min_busy_s: float = 2.0
    min_executions: int = 2
    min_pending: float = 1.0
    """The queue must reach at least this many requests inside the stretch ... (one: two BLS
    parents, each blocked on its own call, never queue more than one call behind a slow
    single-instance child; vid_gateway_bls_timeout: 15 s busy, clients' latency 0.23 s to
    8.9 s, pending at most 1)"""
    min_rise: float = 1.0
    """... and grow by at least this much over its value when the stretch began."""
    min_wait_s: float = 0.1
    wait_fraction: float = 0.25
    """A queue that cannot grow (callers that each wait on their one call, a closed loop):
    the stretch counts when the requests it took waited in the queue a median of at least
    ``min_wait_s`` and this fraction of its median batch (med_normalize_slow_saturation:
    0.77 s behind 2 s batches, pending never above 1)."""
    max_single_fraction: float = 0.5
    merge_gap_s: float = 0.025
    critical_busy_s: float = 30.0
    with_load_s: float = 2.0
    """A stretch that began this close to the model's first request in the window began
    with its load: there is no idle level before it to measure a rise from."""
    fill_s: float = 5.0
    """... and the level its queue settled at is read over its first this many seconds (at
    most a quarter of the stretch)."""
    growth_fraction: float = 0.5
    """... it must grow by this share of that level (and by ``min_rise`` at least)."""
    min_surge_s: float = 5.0
    """A model only clients call, all busy for less than this (so far, or before an instance
    was free again and its queue empty), met a burst of arrivals, not a lack of capacity:
    requests at a Poisson rate of 78% of capacity queue 7 deep for 4 s now and then
    (sw_healthy_rate); so does a client cancelling and reopening its stream
    (gs_stream_cancel, 2.3 s). Bursts of BLS calls are kept: a fan-out queueing its children
    is the pathology (the demo's)."""
    overload_batches: float = 2.0
    """... and its requests must have waited a median of this many of its batches: clients
    that step their requests in flight up (4 -> 16) deepen the queue by what the batches
    then take, and each request still waits about one batch (hx_healthy_ramp: 0.48 s behind
    0.49 s batches; hx_sentiment_saturated, clients giving up and sending more: 7.0 s behind
    2.5 s)."""

    def detect(self, window: Window) -> list[Finding]:
        records = window.logs(ev.InstanceExecuting, ev.InstanceReleased)
        limited = _limited(records)
        stretches = [
            s
            for s in all_busy_stretches(records, window.until_ns, self.merge_gap_s, limited)
            if s.seconds >= self.min_busy_s
            and s.executions >= self.min_executions
            and s.longest_s <= self.max_single_fraction * s.seconds
        ]
        if not stretches:
            return []
        dead = {f.model for f in failing(window)}  # failed executions are no work done
        dead |= {d.model for d in dead_stubs(window)}
        stretches = [s for s in stretches if s.model not in dead]
        pending = _pending_by_model(window)
        best: dict[str, tuple[Stretch, float, float, int]] = {}
        waits: dict[int, tuple[float, int, float]] = {}
        inst = instances_of(window)
        first = _first_requests(inst)
        calls = callees(inst)
        called = {m for cs in calls.values() for m in cs}
        logged: dict[str, list[tuple[int, int]]] | None = None
        from_log: set[int] = set()
        for stretch in stretches:
            points = pending.get(stretch.model)
            if points is None:  # no /metrics (a log alone): the queue the log tells
                if window.whole_seconds and stretch.seconds < self.min_busy_s + 1.0:
                    continue  # whole seconds: 2 s may be one (emb_tokenize_cold_start_iso)
                logged = _queue_spans(inst) if logged is None else logged
                points = _sampled(logged.get(stretch.model, []), stretch)
                from_log.add(id(stretch))
            rise = _rise(points, stretch)
            if rise is None:
                continue
            with_load = stretch.start_ns - first.get(stretch.model, 0) <= self.with_load_s * 1e9
            if with_load and not _creeping(inst, calls, stretch):
                rise = _settled(points, stretch, min(self.fill_s * 1e9, stretch.seconds * 25e7))
                if rise is None or rise[1] - rise[0] < max(
                    self.min_rise, self.growth_fraction * rise[0]
                ):
                    continue  # a closed loop's level queue, not a queue that grows
                waited = _queued(inst.executions, stretch)
                if waited is None or waited[0] < self.overload_batches * waited[2]:
                    continue  # each request waited about one batch: the batching keeps up
            before, peak, peak_at = rise
            if stretch.model not in called and stretch.seconds < self.min_surge_s:
                continue  # a burst of clients' requests: the load's own variance
            if peak < self.min_pending or peak - before <= self.min_rise:
                waited = _queued(inst.executions, stretch)
                if waited is None or waited[0] < max(
                    self.min_wait_s, self.wait_fraction * waited[2]
                ):
                    continue
                waits[id(stretch)] = waited
            known = best.get(stretch.model)  # keep the worst queue, then the longest
            if known is None or (peak, stretch.seconds) > (known[2], known[0].seconds):
                best[stretch.model] = (stretch, before, peak, peak_at)
        if not best:
            return []
        # A parent whose instances were all busy awaiting a saturated child is that child's
        # caller, not a second bottleneck (doc_layout_rate_saturation: doc_router).
        paced = _paced(best, calls)
        waiting = {
            m
            for m, (s, *_rest) in best.items()
            for child in calls.get(m, ())
            if child in best and child not in paced and child != m and _overlap(s, best[child][0])
        }
        best = {m: v for m, v in best.items() if m not in waiting and m not in paced}
        callers = _callers(window, {m: v[0] for m, v in best.items()})
        cancels = [
            c
            for c in window.logs(ev.FrontendCancellation)
            if isinstance(c, ev.FrontendCancellation)
        ]
        return [
            self._finding(
                stretch,
                before,
                peak,
                peak_at,
                limited.get(model),
                callers.get(model) or Counter({c: 0 for c, cs in calls.items() if model in cs}),
                [c for c in cancels if stretch.start_ns <= c.header.at_ns <= stretch.end_ns],
                waits.get(id(stretch)),
                id(stretch) in from_log,
                _slowed_callee(inst, calls.get(model, set()), stretch),
                _busiest_callee(inst, calls.get(model, set()), stretch),
            )
            for model, (stretch, before, peak, peak_at) in sorted(best.items())
        ]

    def _finding(
        self,
        s: Stretch,
        before: float,
        peak: float,
        peak_at: int,
        allowed: int | None,
        callers: Counter[str],
        cancels: list[ev.FrontendCancellation],
        waited: tuple[float, int, float] | None = None,
        from_log: bool = False,
        slowed: tuple[str, float, float] | None = None,
        busiest: tuple[str, int, float] | None = None,
    ) -> Finding:
        n = len(s.instances)
        fed = (
            ", ".join(
                f"{m} ({c} requests)" if c else f"BLS calls from {m}"
                for m, c in callers.most_common(5)
            )
            or "clients"
        )
        who = (
            f"All {n} instances of '{s.model}' were"
            if n > 1
            else (f"The only instance of '{s.model}' was")
        )
        if allowed is not None:
            who = (
                f"'{s.model}' never ran more than {allowed} of its {n} instances at once (a "
                "rate limiter's resources, --rate-limit=execution_count, hold the others "
                f"back), and {'that one was' if allowed == 1 else f'those {allowed} were'}"
            )
        queue = f"its queue grew from {before:g} to {peak:g} requests"
        if waited is not None:
            queue = (
                f"the {waited[1]} requests it took waited {waited[0]:.2f} s in its queue "
                f"(median; its batches took {waited[2]:.2f} s), with at most {peak:g} in the "
                "queue at once: each caller waits on its one call, so the queue cannot grow"
            )
        summary = (
            f"{who} busy for {s.seconds:.1f} s while {queue} (fed by {fed}): the model "
            "cannot keep up with its callers."
        )
        if busiest is not None and (slowed is None or slowed[0] != busiest[0]):
            child, count, share = busiest
            held = "its only instance was" if count == 1 else f"its {count} instances were"
            summary += (
                f" Its batches wait on its BLS calls to '{child}': {held} busy {share:.0%} of "
                "the stretch, a callee at its capacity holds this model's instances (its own "
                "queue stays short when each of its batches takes all that waits)."
            )
        if slowed is not None:
            child, early, late = slowed
            summary += (
                f" Its batches wait on its BLS calls to '{child}', whose executions slowed "
                f"across the stretch from a median of {early * 1e3:.0f} ms to "
                f"{late * 1e3:.0f} ms: the callee getting slower is what holds this model's "
                "instances."
            )
        cancel_advice = ""
        if cancels:
            summary += (
                f" Meanwhile {len(cancels)} client request(s) were cancelled by their clients "
                "(a deadline or a cancel; the log names neither model nor id): Triton keeps "
                "executing a cancelled request, so part of this busy time may be work nobody "
                "waits for."
            )
            cancel_advice = (
                " Drop cancelled work: check request.is_cancelled() in execute before the "
                "expensive part (and between BLS calls) and answer a CANCELLED error."
            )
        upstream = ", ".join(callers) or "its callers"
        advice = (
            f"Add instances of '{s.model}' (instance_group [{{ count: {2 * n} }}] in its "
            f"config.pbtxt) if the host has cores to spare; enable dynamic_batching so one "
            f"execute serves several queued requests; rate-limit or bound the concurrency of "
            f"{upstream} (e.g. an asyncio.Semaphore around the BLS calls); and check why "
            f"'{s.model}' is slow (its compute time per request in /v2/models/stats)."
            + cancel_advice
        )
        series = f'{PENDING}{{model="{s.model}"}}'
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if s.seconds >= self.critical_busy_s else Severity.WARNING,
            model=s.model,
            instance=s.instances[0] if n == 1 else None,
            summary=summary,
            advice=advice,
            first_seen_ns=s.start_ns,
            last_seen_ns=s.end_ns,
            evidence=(
                Evidence(
                    "log",
                    s.start_ns,
                    f"triton.log@{s.first_offset}",
                    f"instances {', '.join(s.instances)} all executing from here for "
                    f"{s.seconds:.2f} s; {s.executions} executions completed meanwhile, "
                    f"the longest {s.longest_s:.2f} s",
                ),
                Evidence(
                    "log" if from_log else "metrics",
                    peak_at,
                    "triton.log prepared: to executing (no /metrics)" if from_log else series,
                    f"pending {before:g} when the stretch began, peak {peak:g}"
                    + (" (the log's, read once a second)" if from_log else "")
                    + (
                        f"; requests admitted in the stretch waited {waited[0]:.2f} s (median "
                        f"of {waited[1]}) from prepared: to executing"
                        if waited is not None
                        else ""
                    ),
                ),
                *(
                    [
                        Evidence(
                            "log",
                            s.start_ns,
                            "triton.log request ids <parent>.<child>",
                            "callers during the stretch: "
                            + ", ".join(f"{m}={c}" for m, c in callers.most_common()),
                        )
                    ]
                    if callers
                    else []
                ),
                *(
                    [
                        Evidence(
                            "log",
                            cancels[0].header.at_ns,
                            f"triton.log@{cancels[0].header.offset}",
                            f"{len(cancels)} '{cancels[0].detail.split(',')[0]}' lines during the "
                            "stretch",
                        )
                    ]
                    if cancels
                    else []
                ),
            ),
        )


def _pending_by_model(window: Window) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for _target, at_ns, sample in window.samples(PENDING):
        out.setdefault(sample.label("model"), []).append((at_ns, sample.value))
    return out


def _queue_spans(inst: Instances) -> dict[str, list[tuple[int, int]]]:
    """Model -> ``(admitted, taken)`` of each request the log shows queued: from its
    ``prepared:`` line to the start of the batch that took it (``-1``: still queued at the
    window's end)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for e in inst.executions:
        spans = out.setdefault(e.model, [])
        spans += [(r.prepared_ns, e.start_ns) for r in e.requests]
    for model, queue in inst.queued.items():
        out.setdefault(model, []).extend((r.prepared_ns, -1) for r in queue)
    return out


def _sampled(spans: list[tuple[int, int]], s: Stretch) -> list[tuple[int, float]]:
    """The log's queue of a model read as ``nv_inference_pending_request_count`` would be
    scraped: once a second from the stretch's start, so that a request that waited a
    millisecond for a batch is no more a queue here than on /metrics."""
    near = [(a, t) for a, t in spans if a <= s.end_ns and (t < 0 or t > s.start_ns)]
    return [
        (at, float(sum(1 for a, taken in near if a <= at and (taken > at or taken < 0))))
        for at in range(s.start_ns, s.end_ns + 1, _LOG_SCRAPE_NS)
    ]


def _rise(points: list[tuple[int, float]], s: Stretch) -> tuple[float, float, int] | None:
    """Pending when the stretch began (last sample at or before it, else 0) and its peak."""
    before = 0.0
    peak: tuple[float, int] | None = None
    for at, value in points:
        if at <= s.start_ns:
            before = value
        elif at <= s.end_ns and (peak is None or value > peak[0]):
            peak = (value, at)
    if peak is None:
        return None
    return before, peak[0], peak[1]


def _creeping(inst: Instances, calls: dict[str, set[str]], s: Stretch) -> bool:
    """Whether the model or one of its callees slowed 2x across the stretch."""
    return _slowed_callee(inst, {s.model, *calls.get(s.model, ())}, s) is not None


def _first_requests(inst: Instances) -> dict[str, int]:
    """Model -> when its first request in the window was admitted (or, without its
    ``prepared:`` line, when its first batch started)."""
    out: dict[str, int] = {}
    for e in inst.executions:
        seen = min([e.start_ns, *(r.prepared_ns for r in e.requests if r.prepared_ns)])
        out[e.model] = min(out.get(e.model, seen), seen)
    for model, queue in inst.queued.items():
        for r in queue:
            if r.prepared_ns:
                out[model] = min(out.get(model, r.prepared_ns), r.prepared_ns)
    return out


def _settled(
    points: list[tuple[int, float]], s: Stretch, fill_ns: float
) -> tuple[float, float, int] | None:
    """For a stretch that began with its model's load: the level its queue held over its
    first ``fill_ns`` (the median sample) and the peak after it."""
    filling = [v for at, v in points if s.start_ns < at <= s.start_ns + fill_ns]
    later = [(v, at) for at, v in points if s.start_ns + fill_ns < at <= s.end_ns]
    if not filling or not later:
        return None
    peak, peak_at = max(later)
    return median(filling), peak, peak_at


def _paced(
    best: dict[str, tuple[Stretch, float, float, int]], calls: dict[str, set[str]]
) -> set[str]:
    """Saturated models whose queue never held more than one call per instance of their
    saturated callers while a caller's own queue grew past its instances: each caller's
    instance waits on its one call, so the child works at the pace its callers set, and the
    queue that grows is theirs (cx_gateway_ignores_cancel: cx_score's queue 1 -> 2 under two
    cx_gateway instances, whose own queue grew 0 -> 23 with quotes whose clients had gone).
    A caller whose queue stays within its instances is waiting on a slow child, which keeps
    the finding (vid_gateway_bls_timeout: vid_track at 3 s an execute)."""
    out: set[str] = set()
    for child, (stretch, _before, peak, _at) in best.items():
        parents = [
            best[m]
            for m, cs in calls.items()
            if child in cs and m != child and m in best and _overlap(best[m][0], stretch)
        ]
        held = sum(len(p[0].instances) for p in parents)
        if parents and peak <= held and any(p[2] > len(p[0].instances) for p in parents):
            out.add(child)
    return out


def _callers(window: Window, stretches: dict[str, Stretch]) -> dict[str, Counter[str]]:
    """Per saturated model: the models of the parents whose BLS children it received."""
    model_of: dict[str, str] = {}
    received: list[tuple[str, str]] = []
    for rec in window.logs(ev.RequestPrepared):
        assert isinstance(rec, ev.RequestPrepared)
        if not rec.request_id:
            continue
        model_of.setdefault(rec.request_id, rec.model)
        s = stretches.get(rec.model)
        if s is not None and s.start_ns <= rec.header.at_ns <= s.end_ns:
            received.append((rec.model, rec.request_id))
    out: dict[str, Counter[str]] = {}
    for model, request_id in received:
        parent = _parent_model(request_id, model_of)
        if parent is not None:
            out.setdefault(model, Counter())[parent] += 1
    return out


def _parent_model(request_id: str, model_of: dict[str, str]) -> str | None:
    """The model of the nearest known ancestor id (``a.b.c`` → ``a.b`` → ``a``)."""
    head = request_id
    while "." in head:
        head = head.rsplit(".", 1)[0]
        if head in model_of:
            return model_of[head]
    return None


def _limited(records: list[object]) -> dict[str, int]:
    """Models whose instances never all ran at once though requests queued: how many may.
    Triton dispatches a queued request to any free instance, so an instance left idle while
    others run is held back (a rate limiter): its model saturates at that many busy."""
    model_of: dict[str, str] = {}
    busy: dict[str, set[str]] = {}
    peak: dict[str, int] = {}
    for rec in records:
        if isinstance(rec, ev.InstanceExecuting):
            model_of[rec.instance] = rec.model
            now = busy.setdefault(rec.model, set())
            now.add(rec.instance)
            peak[rec.model] = max(peak.get(rec.model, 0), len(now))
        elif isinstance(rec, ev.InstanceReleased):
            busy.get(model_of.get(rec.instance, ""), set()).discard(rec.instance)
    names: dict[str, int] = {}
    for model in model_of.values():
        names[model] = names.get(model, 0) + 1
    return {m: p for m, p in peak.items() if p < names[m]}


_SLOWED = 2.0
"""How many times slower a callee's executions must end the stretch than they began it."""
_SLOWED_MIN_S = 0.05


def _slowed_callee(
    inst: Instances, called: set[str], s: Stretch
) -> tuple[str, float, float] | None:
    """The callee whose executions slowed most across the stretch, ``(model, early median,
    late median)``: those ending in its first quarter (or before it) against those ending in
    its last. A caller saturated because a child keeps getting slower (a latency creep: no
    error, no queue at the child, its instances never all busy) shows only the caller's
    queue (img_preprocess_latency_creep: 44 ms to 373 ms)."""
    quarter = (s.end_ns - s.start_ns) // 4
    best: tuple[str, float, float] | None = None
    for child in sorted(called):
        early, late = [], []
        for e in inst.executions:
            if e.model != child or e.end_ns is None or e.end_ns > s.end_ns:
                continue
            took = (e.end_ns - e.start_ns) / 1e9
            if e.end_ns <= s.start_ns + quarter:
                early.append(took)
            elif e.end_ns >= s.end_ns - quarter:
                late.append(took)
        if len(early) < 3 or len(late) < 3:
            continue
        a, b = median(early), median(late)
        if b >= _SLOWED * a and b >= _SLOWED_MIN_S and (best is None or b / a > best[2] / best[1]):
            best = (child, a, b)
    return best


_AT_CAPACITY = 0.8
"""A callee whose instances were busy this share of a saturated caller's stretch is at its
capacity (hx_sentiment_saturated: hx_sentiment's one instance 29 s of 35, at most 6 queued)."""


def _busiest_callee(inst: Instances, called: set[str], s: Stretch) -> tuple[str, int, float] | None:
    """The callee whose instances were busiest over the stretch, ``(model, instances, share
    of their time)``, when at least ``_AT_CAPACITY``: a slow child whose batches take every
    call queued for it shows no queue of its own, only its callers'."""
    span = s.end_ns - s.start_ns
    best: tuple[str, int, float] | None = None
    for child in sorted(called):
        names: set[str] = set()
        busy = 0
        for e in inst.executions:
            if e.model != child:
                continue
            names.add(e.instance)
            end = s.end_ns if e.end_ns is None else min(e.end_ns, s.end_ns)
            busy += max(0, end - max(e.start_ns, s.start_ns))
        if not names or span <= 0:
            continue
        share = busy / (len(names) * span)
        if share >= _AT_CAPACITY and (best is None or share > best[2]):
            best = (child, len(names), share)
    return best


def _overlap(a: Stretch, b: Stretch) -> bool:
    return a.start_ns < b.end_ns and b.start_ns < a.end_ns


def _queued(executions: Iterable[Execution], s: Stretch) -> tuple[float, int, float] | None:
    """``(median wait s, requests, median batch s)`` of the model's batches that began in
    the stretch: each request's wait from its ``prepared:`` line to its batch's start. None
    with fewer than three such requests."""
    waits: list[float] = []
    batches: list[float] = []
    for e in executions:
        if e.model != s.model or not s.start_ns <= e.start_ns <= s.end_ns or e.end_ns is None:
            continue
        batches.append((e.end_ns - e.start_ns) / 1e9)
        waits += [(e.start_ns - r.prepared_ns) / 1e9 for r in e.requests]
    if len(waits) < 3:
        return None
    return median(waits), len(waits), median(batches)
