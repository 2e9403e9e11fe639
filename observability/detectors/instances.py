"""Instance lifecycles rebuilt from the verbose log without request ids.

Why: real clients (tritonclient, perf_analyzer) send no request id and BLS children built with
``pb_utils.InferenceRequest`` have none, so the per-request state lines say ``<id_unknown>``
and cannot be joined. Three lines still tell the story of every request by model:

* ``prepared: ... request id: , model: M, ...`` when a request is admitted for model M;
* ``model M, instance I, executing N requests`` when instance I starts a batch of N;
* ``model instance name I released N requests`` when that batch ends.

Triton's schedulers hand requests to instances oldest first, so a batch of N on model M takes
the N oldest admitted requests of M that are still waiting: replaying the three lines in log
order rebuilds, per instance, its busy intervals (open ones are what holds an instance now),
the requests each batch held (named where they have ids), and the requests still queued per
model with their age. On a recorded demo run the admitted and executed counts agree for every
model that has instances; models without instance lines (ensembles, backends that do not log
them) are left out of the queue accounting.

A model's warmup (``model_warmup``, run inside its load) is Triton's own: the instance says so
(``WarmupRun``) before the batch, and the requests prepared for it never reach PENDING, so
neither joins the served copy's lifecycles (a reload warms up under the served copy's
instance names).

A request that never runs (cancelled or timed out in the queue) would stay at the head of its
model's queue and shift the join; it is dropped as soon as an instance of its model sat idle
for ``_IDLE_SLACK_NS`` while it waited, since an idle instance takes a queued request at once
(the same holds at the window's end).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from observability import events as ev
from observability.detectors.crashes import SAME_CRASH_NS, crash_of
from observability.detectors.origins import mostly_clients, origins_of
from observability.detectors.target_down import gone_ns, restarted_ns
from observability.detectors.window import Window, per_window

__all__ = ["Admitted", "Execution", "Instances", "build_instances", "instances_of"]

_IDLE_SLACK_NS = 500_000_000
"""How long an idle instance may leave a queued request waiting (a dynamic batcher's queue
delay, a starved thread): longer, and the request was not really queued. Not while the rate
limiter is on (a ``RateLimiterPool`` line): a request then waits with its model's instances
idle until a copy of its resources is free."""

_MAX_QUEUED = 100_000
"""Admitted requests remembered per model; beyond that the oldest are forgotten."""

_SERVED_UNQUEUED_NS = 50_000_000
"""A request released from PENDING this soon after its ``prepared:`` line never queued: a
response-cache hit is answered within a millisecond, without an execution
(``prepared`` -> ``INITIALIZED to PENDING`` -> ``add response output`` -> ``PENDING to
RELEASED``; doc_healthy: 43 of them, each first taken for a queued request)."""
_RECENT = 64
"""Admitted requests a cache hit's release is looked up among, newest first."""


@dataclass(eq=False)
class Admitted:
    """A request as its ``prepared:`` line tells it."""

    model: str
    request_id: str
    """``""`` for a request sent without an id."""
    prepared_ns: int
    offset: int
    execution: Execution | None = None
    version: int | None = None
    """The version Triton chose for it (``actual version``; ``None`` when not logged)."""


@dataclass(eq=False)
class Execution:
    """One batch on one instance, from ``executing N requests`` to ``released N requests``."""

    model: str
    instance: str
    count: int
    start_ns: int
    offset: int
    end_ns: int | None = None
    end_offset: int | None = None
    requests: list[Admitted] = field(default_factory=list)
    first_after_load: bool = False
    """The instance's first batch after its model was (re)loaded: a cold start may be slow."""
    died: bool = False
    """Open when the server crashed (``crashes.py``): ``end_ns`` is the crash, not a release."""

    @property
    def open(self) -> bool:
        return self.end_ns is None

    def age_s(self, now_ns: int) -> float:
        return ((self.end_ns if self.end_ns is not None else now_ns) - self.start_ns) / 1e9

    @property
    def ids(self) -> list[str]:
        return [r.request_id for r in self.requests if r.request_id]


@dataclass
class Instances:
    """Every instance execution of a window, the open ones, and what is queued per model."""

    executions: list[Execution]
    open: dict[str, Execution]
    """Instance name -> the batch it is executing at the window's end."""
    model_instances: dict[str, set[str]]
    """Model -> instance names seen executing (a lower bound of its instance count)."""
    queued: dict[str, list[Admitted]]
    """Model -> requests admitted and not yet executing at the window's end, oldest first."""
    last_start: dict[str, int]
    """Model -> when one of its instances last started a batch."""
    last_end: dict[str, int]
    """Model -> when one of its instances last released a batch."""
    until_ns: int
    instanceless: frozenset[str] = frozenset()
    """Models with requests but no instance seen executing: ensembles (their steps run on
    other models' instances), or a model idle for the whole window."""
    versions: dict[str, set[int]] = field(default_factory=dict)
    """Model -> the versions its requests were prepared for (two served at once share
    instance names)."""
    rejected: dict[str, list[Admitted]] = field(default_factory=dict)
    """Model -> requests Triton refused to queue (``PENDING to FAILED_ENQUEUE``: its queue
    was full, ``max_queue_size``), in time order."""
    steps: frozenset[tuple[int, int]] = frozenset()
    """``(prepared_ns, offset)`` of the ensembles' first steps (:func:`_first_steps`): no
    model's BLS calls."""
    client_only: frozenset[str] = frozenset()
    """Models whose requests come from clients alone (``origins.py``: nine in ten or more
    of ten or more follow a frontend line): no model's BLS callees."""
    known_calls: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """What earlier passes learned each model calls (``Window.known_calls``)."""
    unseen_until: dict[str, int] = field(default_factory=dict)
    """Instance name -> the latest release of a batch whose ``executing`` line the window
    lacks (begun before it, in ``watch``'s sliding window): until then the instance ran a
    batch no reader sees, whose calls are any caller's to claim."""

    def busy(self, model: str) -> list[Execution]:
        return [e for e in self.open.values() if e.model == model]

    def all_busy(self, model: str) -> bool:
        known = self.model_instances.get(model, set())
        return bool(known) and all(i in self.open for i in known)

    @cached_property
    def _completed(self) -> dict[str, list[tuple[int, float]]]:
        """Model -> (end, seconds) of its completed batches that were not cold starts, in
        window order: read once, not once per model (200 models over 10,000 batches made
        that most of a detector pass)."""
        out: dict[str, list[tuple[int, float]]] = {}
        for e in self.executions:
            if e.end_ns is not None and not e.first_after_load and not e.died:
                out.setdefault(e.model, []).append((e.end_ns, (e.end_ns - e.start_ns) / 1e9))
        return out

    def durations_s(self, model: str, before_ns: int | None = None) -> list[float]:
        """Completed batch durations of a model, for its usual latency (a cold start is not
        usual: left out); with ``before_ns``, only batches that ended before it."""
        done = self._completed.get(model, [])  # died batches are not in it
        if before_ns is None:
            return [s for _, s in done]
        return [s for end, s in done if end < before_ns]

    def progressed_since(self, model: str, since_ns: int) -> bool:
        """Whether an instance of the model started or finished a batch since ``since_ns``."""
        return max(self.last_start.get(model, 0), self.last_end.get(model, 0)) >= since_ns

    def open_after(self, start_ns: int, min_age_ns: int = 0) -> list[Admitted]:
        """Requests admitted after ``start_ns`` and still open (queued or in an open batch),
        at least ``min_age_ns`` old: the BLS calls a batch started then may be waiting on."""
        latest = self.until_ns - min_age_ns
        out = [
            r for queue in self.queued.values() for r in queue if start_ns < r.prepared_ns <= latest
        ]
        out += [
            r for e in self.open.values() for r in e.requests if start_ns < r.prepared_ns <= latest
        ]
        return sorted(out, key=lambda r: r.prepared_ns)


@per_window
def instances_of(window: Window) -> Instances:
    """The window's instance lifecycles, built once per window object."""
    records = window.logs_where(
        (
            ev.RequestPrepared,
            ev.InstanceExecuting,
            ev.InstanceReleased,
            ev.ModelStateChange,
            ev.RequestStateChange,
            ev.StubOutput,
            ev.WarmupRun,
            ev.RateLimiterPool,
            ev.ModelConfig,
        ),
        {ev.RequestStateChange: _kept_state, ev.StubOutput: _crash},
    )
    inst = build_instances(records, window.until_ns, gone_ns(window), restarted_ns(window))
    inst.known_calls = window.known_calls
    if not window.whole_seconds:  # there every line of a second is near a frontend line
        origin = origins_of(window)
        inst.client_only = frozenset(mostly_clients(origin, records))
    if inst.instanceless:
        inst.steps = frozenset(_first_steps(records, inst.instanceless))
    return inst


_FIRST_STEP_NS = 1_000_000
"""An ensemble's first step is prepared microseconds after the ensemble's own request."""


def _first_steps(records: Iterable[object], ensembles: frozenset[str]) -> set[tuple[int, int]]:
    """``(prepared_ns, offset)`` of the requests prepared right after an ensemble's own
    request, to another model: its first step, which the scheduler sends at once. Taken for
    a BLS call of whatever batch was running then, it gave a stuck plain model a call it
    never made (ops_enrich_hang_classify_growth). Later steps follow a step's release, where
    busy logs put BLS calls too: the callee learning keeps its own guard for those."""
    out: set[tuple[int, int]] = set()
    scheduled: int | None = None  # the last ensemble request still without its first step
    for r in records:
        if not isinstance(r, ev.RequestPrepared):
            continue
        at = r.header.at_ns
        if r.model in ensembles:
            scheduled = at
        elif scheduled is not None and at - scheduled <= _FIRST_STEP_NS:
            out.add((at, r.header.offset))
            scheduled = None
    return out


def build_instances(
    records: Iterable[object],
    until_ns: int,
    gone_ns: int | None = None,
    restarted_ns: int | None = None,
) -> Instances:
    """Instance lifecycles from log records in time order (pure). ``gone_ns``: the server
    went away after this instant and did not come back (``target_down.gone_ns``);
    ``restarted_ns``: it went away then and a new process came back
    (``target_down.restarted_ns``)."""
    executions: list[Execution] = []
    open_: dict[str, Execution] = {}
    model_instances: dict[str, set[str]] = {}
    queues: dict[str, deque[Admitted]] = {}
    idle_from: dict[str, int] = {}
    reloading: dict[str, int] = {}
    """Model -> when a reload of a live model began (its old copy is still serving)."""
    loaded: dict[str, set[str] | None] = {}
    """Model -> instances that have run since its last load (None: no load in the window)."""
    last_start: dict[str, int] = {}
    last_end: dict[str, int] = {}
    versions: dict[str, set[int]] = {}
    """Model -> the versions its requests were prepared for."""
    shadowed: dict[str, list[Execution]] = {}
    """Instance name -> older open batches of another version under the same name."""
    unseen_until: dict[str, int] = {}

    recent: deque[Admitted] = deque(maxlen=_RECENT)
    crashed_ns: int | None = None
    rejected: dict[str, list[Admitted]] = {}
    last: Admitted | None = None
    """The newest admitted request, until its ``INITIALIZED to PENDING`` line."""
    queued_ids: set[int] = set()
    """Admitted requests that reached PENDING (a client's or a BLS call's; a warmup's never)."""
    pending_seen = False
    warming: dict[str, str] = {}
    """Instance -> model: the instance logged that its next batch is a warmup sample's."""
    warm_open: set[str] = set()
    """Instances running a warmup batch: Triton's own, fed by no queue (a warmup that never
    returns is a load that never ends, ``model_load_stuck``'s, not a hang of the served
    copy)."""

    limited = False
    """The rate limiter is on: a request may wait with its model's instances idle."""
    configured: set[str] = set()
    """Models whose backend logged their configuration (a python model: instances of its
    own, unlike an ensemble)."""

    def prune(model: str, before_ns: int) -> None:
        if limited:
            return
        queue = queues.get(model)
        while queue and queue[0].prepared_ns < before_ns:
            queue.popleft()

    for rec in records:
        if isinstance(rec, ev.RequestPrepared):
            if rec.version is not None and rec.model:
                versions.setdefault(rec.model, set()).add(rec.version)
            if rec.model:
                queue = queues.setdefault(rec.model, deque(maxlen=_MAX_QUEUED))
                admitted = Admitted(
                    rec.model,
                    rec.request_id,
                    rec.header.at_ns,
                    rec.header.offset,
                    None,
                    rec.version,
                )
                queue.append(admitted)
                recent.append(admitted)
                last = admitted
        elif type(rec) is ev.StubOutput:  # a crash (instances_of passes no other)
            crashed_ns = rec.at_ns
            _die(open_, shadowed, crashed_ns)
            queues.clear()
            recent.clear()
            idle_from.clear()
        elif isinstance(rec, ev.RateLimiterPool):
            limited = True
        elif isinstance(rec, ev.ModelConfig):
            configured.add(rec.model)
        elif isinstance(rec, ev.WarmupRun):
            if not rec.failed:
                warming[rec.instance] = rec.model
                mixed = queues.get(rec.model)
                if mixed and (pending_seen or rec.model not in model_instances):
                    # The model's requests that never reached PENDING are the warmup's own.
                    clients = [a for a in mixed if id(a) in queued_ids]
                    mixed.clear()
                    mixed.extend(clients)
        elif isinstance(rec, ev.RequestStateChange):
            if rec.from_state == "INITIALIZED" and rec.to_state == "PENDING":
                pending_seen = True
                if last is not None:
                    queued_ids.add(id(last))
                    last = None
                continue
            served = _served_unqueued(recent, rec, queued_ids if pending_seen else None)
            if served is not None:
                if rec.to_state == FAILED_ENQUEUE:
                    rejected.setdefault(served.model, []).append(served)
                recent.remove(served)
                waiting = queues.get(served.model)
                if waiting is not None and served in waiting:
                    waiting.remove(served)
        elif isinstance(rec, ev.InstanceExecuting) and warming.pop(rec.instance, ""):
            warm_open.add(rec.instance)
        elif isinstance(rec, ev.InstanceReleased) and rec.instance in warm_open:
            if rec.instance not in open_:
                warm_open.discard(rec.instance)
                continue
            # The served copy's batch under the same name: the log does not say which of the
            # two ended; the served one, short, is taken (a warmup that hangs stays open).
            batch = open_.pop(rec.instance)
            batch.end_ns, batch.end_offset = rec.header.at_ns, rec.header.offset
            idle_from[rec.instance] = rec.header.at_ns
            last_end[batch.model] = rec.header.at_ns
        elif isinstance(rec, ev.InstanceExecuting):
            at = rec.header.at_ns
            model_instances.setdefault(rec.model, set()).add(rec.instance)
            idle = idle_from.pop(rec.instance, None)
            if idle is not None and at - idle > _IDLE_SLACK_NS:
                prune(rec.model, at - _IDLE_SLACK_NS)
            ran = loaded.get(rec.model)
            execution = Execution(
                rec.model,
                rec.instance,
                rec.count,
                at,
                rec.header.offset,
                first_after_load=ran is not None and rec.instance not in ran,
            )
            if ran is not None:
                ran.add(rec.instance)
            waiting = queues.get(rec.model)
            while waiting and len(execution.requests) < rec.count:
                admitted = waiting.popleft()
                admitted.execution = execution
                execution.requests.append(admitted)
            older = open_.get(rec.instance)
            if older is not None and len(shadowed.get(rec.instance, ())) + 1 < len(
                versions.get(rec.model, ())
            ):
                # Two versions served at once both run instances named M_0_0 and the log's
                # instance lines carry no version: a second batch on a busy name is the
                # other version's, not a lost release (foreign st_sequence_hang).
                shadowed.setdefault(rec.instance, []).append(older)
            open_[rec.instance] = execution
            executions.append(execution)
            last_start[rec.model] = at
        elif isinstance(rec, ev.InstanceReleased):
            ended = open_.pop(rec.instance, None)
            if shadowed.get(rec.instance):
                # The newest batch ends first: the other version's name keeps its older one
                # (a hung batch stays open while the other version's batches come and go).
                open_[rec.instance] = shadowed[rec.instance].pop()
            at = rec.header.at_ns
            idle_from[rec.instance] = at
            if ended is not None:
                ended.end_ns, ended.end_offset = at, rec.header.offset
                last_end[ended.model] = at
            else:
                unseen_until[rec.instance] = at
        elif isinstance(rec, ev.ModelStateChange):
            _lifecycle(rec, open_, queues, loaded, reloading, model_instances)
            if rec.state in ("unloading", "unloaded"):
                for name in [
                    n for n, older in shadowed.items() if older and older[0].model == rec.model
                ]:
                    del shadowed[name]  # an unload ends the other versions' batches too
    if gone_ns is not None and crashed_ns is None:
        crashed_ns = gone_ns  # killed without a word (SIGKILL, the OOM killer): the same end
    if crashed_ns is not None:
        # The dying server's other threads log on for a moment after the signal: what they
        # started and admitted then died with it (a later restart's work does not).
        _process_ended(open_, queues, crashed_ns, crashed_ns + SAME_CRASH_NS)
    if restarted_ns is not None:
        # The old process's batches and queues died with it; the new one's came after.
        _process_ended(open_, queues, restarted_ns, restarted_ns)
    for name, model in ((i, m) for m, names in model_instances.items() for i in names):
        idle = idle_from.get(name)
        if name not in open_ and idle is not None and until_ns - idle > _IDLE_SLACK_NS:
            prune(model, until_ns - _IDLE_SLACK_NS)
    for name, kept in shadowed.items():
        for k, e in enumerate(kept, start=1):
            open_[f"{name}#{k}"] = e  # keyed apart; its ``instance`` is the name Triton logs
    # Under the rate limiter a model whose instances never got a copy has none seen
    # executing, but it is no ensemble: its backend logged its configuration.
    serving = model_instances.keys() | (configured if limited else set())
    queued = {m: list(q) for m, q in queues.items() if m in serving and q}
    instanceless = frozenset(m for m, q in queues.items() if q and m not in serving)
    return Instances(
        executions,
        open_,
        model_instances,
        queued,
        last_start,
        last_end,
        until_ns,
        instanceless,
        versions,
        rejected,
        unseen_until=unseen_until,
    )


def _lifecycle(
    rec: ev.ModelStateChange,
    open_: dict[str, Execution],
    queues: dict[str, deque[Admitted]],
    loaded: dict[str, set[str] | None],
    reloading: dict[str, int],
    model_instances: dict[str, set[str]],
) -> None:
    """A model load, reload or unload, as it changes which batches can still end.

    A reload loads the new copy first (``loading``, ``successfully loaded``) and only then
    unloads the old one (``successfully unloaded``, no ``unloading:`` line on 2.51) under the
    same instance names: that unload ends only the batches started before the reload began,
    and a failed reload ends none (the old copy keeps serving). A plain unload
    (``unloading:``), or an unload with no reload under way, ends every batch of the model:
    its stub is gone and they will never be released."""
    model, at = rec.model, rec.header.at_ns
    if rec.state == "loading":
        if model in loaded or model in model_instances:
            reloading[model] = at
        return
    if rec.state == "loaded":
        loaded[model] = set()
        return
    # A reload unloads the old copy one version at a time (``successfully unloaded 'M'
    # version 1``, then ``version 2``): each of those lines ends only what began before the
    # reload, so the reload stays under way until the next load or a plain unload.
    since = None if rec.state == "unloading" else reloading.get(model)
    if rec.state == "unloading":
        reloading.pop(model, None)
    if rec.state == "failed" and since is not None:
        return
    for name in [n for n, e in open_.items() if e.model == model]:
        if since is None or open_[name].start_ns < since:
            del open_[name]
    if since is None:
        queues.pop(model, None)
        loaded.pop(model, None)


FAILED_ENQUEUE = "FAILED_ENQUEUE"
"""The state of a request its model's scheduler refused (a full queue): logged right after its
admission (tests/fixtures/foreign tts_queue_full_untraced: 2,916 of them)."""


def _crash(rec: ev.StubOutput) -> bool:
    return crash_of(rec) is not None


def _kept_state(rec: ev.RequestStateChange) -> bool:
    """The state lines the lifecycles read: a request queued (``INITIALIZED to PENDING``:
    one that never reaches it is a model warmup's), or ended without an execution."""
    return (rec.from_state == "INITIALIZED" and rec.to_state == "PENDING") or _unqueued(rec)


def _unqueued(rec: ev.RequestStateChange) -> bool:
    """Whether a state line ends a request that never executed: answered from the response
    cache (``PENDING to RELEASED``) or refused by a full queue (``FAILED_ENQUEUE``)."""
    return rec.to_state == FAILED_ENQUEUE or (
        rec.from_state == "PENDING" and rec.to_state == "RELEASED"
    )


def _served_unqueued(
    recent: deque[Admitted], rec: ev.RequestStateChange, pending: set[int] | None = None
) -> Admitted | None:
    """The admitted request a ``PENDING to RELEASED`` line answers without an execution (a
    response-cache hit), or a ``FAILED_ENQUEUE`` line refuses: the one of its id, else the
    newest still waiting, when admitted just before. A request released from the queue
    later (a queue timeout, a cancellation) is left for the idle-instance pruning.

    ``pending``: the admitted requests whose ``INITIALIZED to PENDING`` line was seen (where
    the log has them). Only one of those can be a cache hit: a request of another model
    prepared on another thread between the hit's ``prepared:`` and its release is not it
    (doc_extract_raises_cached: a doc_layout request logged in between was taken for the
    hit, and every later doc_extract batch was paired with the request before its own)."""
    if not _unqueued(rec):
        return None
    at = rec.header.at_ns
    for admitted in reversed(recent):
        other = rec.request_id and admitted.request_id != rec.request_id
        if admitted.execution is not None or other:
            continue
        if pending is not None and rec.to_state == "RELEASED" and id(admitted) not in pending:
            continue  # a cache hit: not one still before its PENDING line
        return admitted if at - admitted.prepared_ns <= _SERVED_UNQUEUED_NS else None
    return None


def _process_ended(
    open_: dict[str, Execution], queues: dict[str, deque[Admitted]], at_ns: int, before_ns: int
) -> None:
    """A server process ended at ``at_ns``: the open batches begun and the queued requests
    admitted before ``before_ns`` were its own, and died with it."""
    _die({n: open_.pop(n) for n, e in list(open_.items()) if e.start_ns < before_ns}, {}, at_ns)
    for queue in queues.values():
        alive = [a for a in queue if a.prepared_ns >= before_ns]
        queue.clear()
        queue.extend(alive)


def _die(open_: dict[str, Execution], shadowed: dict[str, list[Execution]], at_ns: int) -> None:
    """End every open batch at a crash: it never returns, and it is not a hang."""
    for e in [*open_.values(), *(e for es in shadowed.values() for e in es)]:
        e.end_ns, e.died = at_ns, True
    open_.clear()
    shadowed.clear()


def version_text(e: Execution, versions: dict[str, set[int]]) -> str:
    """`` (version 3)`` for a batch of a model served in several versions, whose instances
    share names (the python backend's lines carry no version): which one is stuck is told
    only by its requests' ``prepared:`` lines (med_classifier_v3_hang)."""
    if len(versions.get(e.model, ())) < 2:
        return ""
    seen = {r.version for r in e.requests if r.version is not None}
    return f" (version {seen.pop()})" if len(seen) == 1 else ""
