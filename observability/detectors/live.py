"""The window ``watch`` detects over: kept in memory, fed with each batch the collector stores.

Why not re-read the store on every pass: a pass decoded every record of the lookback from
SQLite, about 55 µs each. At 30 requests/s through the demo pipeline Triton's verbose log
writes some 1,700 records a second, so a ten-minute lookback was a million decodes every two
seconds: detection fell behind, starved the collector thread of the GIL, and its memory grew
pass after pass (the three-cycle soak of ``tests/soak`` measured it).

Here each record is decoded at most once (when ``watch`` starts on a store that already has
data) and a pass costs what the evidence window holds. The window keeps ``evidence_s`` of
every signal, plus, up to ``lookback_s`` back, what is still *open* at its edge:

* every record of a request id with more lifecycles begun (``prepared``, ``to PENDING``) than
  released, so a request hung for minutes keeps its whole story;
* the ``executing N requests`` lines of an instance not released since (one per version
  served at once: the lines name no version), so a stuck instance still reads as busy;
* the ``loading`` line of a model load not ended since, so a load that never ends is still
  seen, and the lines of a failed load that left its model unavailable (not loaded again
  since), so it stays found while it lasts (older completed loads go: ``cold_start`` must not
  pair a load with a batch long after it whose predecessors were dropped);
* a crash's ``Signal (N) received.`` line: the batches it ended are carried as still
  executing, and without it they read as hung (tts_queue_full with 20 s of evidence: three
  hung_request findings on a server that had crashed).

Past ``lookback_s``, what is still stuck stays, for as long as its server keeps logging (a
line in the evidence window): an unreleased batch line that is its instance's last (nothing
executed there since, its model not loaded again, no crash since), and a load not ended or
failed that left its model unavailable. Dropped at the lookback, a hang that outlived it
resolved in ``watch`` after twice the lookback while the model was still stuck: with 5 s of
evidence and a 10 s lookback, the corpus's recordings fed through the tap gave 30 of their
expected findings at their end, 78 with these lines carried. What it costs: a batch whose
release line was lost (a log cut by a rotation) on an instance that never runs again stays
a hang until the model next executes or loads; the old bound gave it twice the lookback. A
restarted ``watch`` reads only the lookback (``prime``), so it does not see a hang older.

And, whatever their age, the lines that tell how the server is set up, written once at load
and true until the next: the last config each model logged (``ModelConfig``) and the rate
limiter's last resource pool (``RateLimiterPool``). Dropped with the evidence window, they
left ``output_contract``, ``preserve_ordering`` (``ordering.py``), the decoupled models of
``streams.py`` and the rate limiter's deadlocks (``bls_deadlock``) blind two minutes after the
models loaded, for as long as ``watch`` ran. A restarted ``watch`` reads them from the store's
``setup`` table, whatever their age.

Older closed records are dropped. ``Watcher`` keeps each finding whose evidence aged out
active until ``lookback_s`` after it was last seen, so the findings' lifetime stays that of a
``lookback_s`` window while the work per pass does not grow with it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from observability import events as ev
from observability.detectors.crashes import crash_of
from observability.detectors.instances import instances_of
from observability.detectors.loads import attempts
from observability.detectors.waits import callees
from observability.detectors.window import Window
from observability.store import Store
from observability.store.schema import SETUP_KINDS

__all__ = ["LiveStats", "LiveWindow"]

log = logging.getLogger(__name__)

_REQUEST_KINDS = (ev.RequestPrepared, ev.RequestStateChange)
_LOADS = ("ModelStateChange",)
_MAX_SHADOWED = 4
"""Unreleased batches kept per instance name: one per version served at once."""
_CARRIED = (
    *_LOADS,
    *(k.__name__ for k in SETUP_KINDS),
    "InstanceExecuting",
    "InstanceReleased",
    "StubOutput",
)
"""The kinds a restarted ``watch`` reads from the lookback: what the tap may carry."""
_T = TypeVar("_T")


@dataclass
class LiveStats:
    records: int = 0
    carried: int = 0
    """Records older than the evidence window kept because their request or instance is open."""
    dropped_over_cap: int = 0
    duplicates: int = 0
    primed: int = 0


def _identity(source: str, event: object) -> tuple[object, ...]:
    """The store's primary key of an event: what makes a replayed batch a duplicate."""
    header = getattr(event, "header", None)
    if header is not None:
        return ("log", source, header.offset, type(event).__name__)
    if isinstance(event, ev.StubOutput):
        return ("log", source, event.offset, "StubOutput")
    if isinstance(event, ev.OtlpSpan):
        return ("otlp", event.trace_id, event.span_id)
    if isinstance(event, ev.TraceSpan):
        start = min((ns for _, ns in event.timestamps), default=0)
        return ("trace", source or event.source, event.trace_id, start)
    if isinstance(event, ev.MetricsScrape):
        return ("metrics", event.target, event.at_ns)
    if isinstance(event, ev.ScrapeStatus):
        return ("scrape", event.target, event.at_ns)
    if isinstance(event, ev.ModelStats):
        return ("stats", event.model, event.version, event.at_ns)
    return ("other", id(event))


def _at(event: object, arrived_ns: int) -> int:
    """Epoch time of an event; trace-file spans (monotonic clock) count from their arrival."""
    header = getattr(event, "header", None)
    if header is not None:
        return int(header.at_ns)
    if isinstance(event, ev.OtlpSpan):
        return event.start_ns
    if isinstance(event, ev.TraceSpan):
        return arrived_ns
    return int(getattr(event, "at_ns", arrived_ns))


class LiveWindow:
    """Thread-safe: the collector thread calls :meth:`add`, the detection thread the rest."""

    def __init__(
        self, evidence_s: float = 120.0, lookback_s: float = 600.0, max_records: int = 600_000
    ) -> None:
        self.evidence_ns = int(evidence_s * 1e9)
        self.lookback_ns = int(max(lookback_s, evidence_s) * 1e9)
        self.max_records = max_records
        """A bound on memory whatever the load (~0.4 KiB a record); oldest dropped beyond."""
        self.stats = LiveStats()
        self.primed = False
        self.log_read = False
        """A log is tailed into this window (``Window.log_read``)."""
        self._lock = threading.Lock()
        self._incoming: list[tuple[tuple[object, ...], int, object]] = []
        self._kept: dict[tuple[object, ...], tuple[int, object]] = {}
        self._newest_batch: dict[tuple[object, str], tuple[int, tuple[object, ...]]] = {}
        """(log, instance name) -> its newest batch line seen, kept after the line is dropped:
        a batch is stuck only if nothing ran on its instance after it."""
        self._changed: dict[tuple[object, str], int] = {}
        """(log, model) -> its newest load line seen; (log, "") -> its newest crash line: a
        batch begun before either is not stuck, even once those lines are dropped."""
        self.known_calls: dict[str, frozenset[str]] = {}
        """Model -> its BLS callees as the last pass that could learn them did
        (:meth:`learn`; ``Window.known_calls``)."""

    def add(self, source: str, events: Iterable[object]) -> None:
        """Events the collector has just stored (cheap: detection sorts them out later)."""
        now = time.time_ns()
        batch = [(_identity(source, e), _at(e, now), e) for e in events]
        with self._lock:
            self._incoming.extend(batch)

    def prime(self, store: Store, now_ns: int) -> None:
        """Load what the store already holds (a restarted ``watch``): the evidence window,
        and, up to ``lookback_s`` back, what the tap would have carried: the records of
        requests still open at its edge, each instance's batch not released by then, loads
        not ended, and the setup lines in force."""
        since = now_ns - self.evidence_ns
        rows: list[tuple[tuple[object, ...], int, object]] = []
        open_ids = store.open_request_ids(now_ns - self.lookback_ns, since)
        for chunk in range(0, len(open_ids), 500):
            ids = open_ids[chunk : chunk + 500]
            for source, rec in store.log_rows(now_ns - self.lookback_ns, since, ids):
                rows.append((_identity(source, rec), _at(rec, now_ns), rec))
        # What the tap carries past the evidence window, in one read of the lookback: loads,
        # setup lines, instance batch lines and crash lines.
        loads: list[tuple[tuple[object, ...], int, object]] = []
        setup = {
            _identity(source, rec): (_at(rec, now_ns), rec) for source, rec in store.setup_lines()
        }  # a store migrated to schema 6 has no setup rows of the lines before it: read below
        unreleased: dict[tuple[str, str], list[tuple[tuple[object, ...], int, object]]] = {}
        for source, rec in store.log_rows(now_ns - self.lookback_ns, since, kinds=_CARRIED):
            row = (_identity(source, rec), _at(rec, now_ns), rec)
            if isinstance(rec, ev.ModelStateChange):
                loads.append(row)
            elif isinstance(rec, SETUP_KINDS):
                setup[row[0]] = row[1:]
            elif isinstance(rec, ev.InstanceExecuting | ev.InstanceReleased):
                # Batches begun before the evidence window and not released by its start.
                stack = unreleased.setdefault((source, rec.instance), [])
                _batch_line(stack, row, isinstance(rec, ev.InstanceExecuting))
            elif crash_of(rec) is not None:
                rows.append(row)
        still = _open_loads({key: (at, rec) for key, at, rec in loads})
        rows += [row for row in loads if row[0] in still]
        rows += [(key, at, rec) for key, (at, rec) in setup.items() if at < since]
        rows += [row for stack in unreleased.values() for row in stack]
        for source, rec in store.log_rows(since):
            rows.append((_identity(source, rec), _at(rec, now_ns), rec))
        others: list[Iterable[object]] = [
            store.otlp_spans(since),
            store.scrapes(since),
            store.model_stats(since),
            store.metric_scrapes(since),
        ]
        for events in others:
            rows.extend((_identity("", e), _at(e, now_ns), e) for e in events)
        with self._lock:
            self._incoming[:0] = rows
        self.stats.primed = len(rows)
        self.primed = True

    def window(self, now_ns: int) -> Window:
        """The window to detect over at ``now_ns``; drops what no longer belongs in it."""
        with self._lock:
            incoming, self._incoming = self._incoming, []
        kept = self._kept
        for key, at, event in incoming:
            if key in kept:
                self.stats.duplicates += 1
            else:
                kept[key] = (at, event)
        self._evict(now_ns)
        # Time order, file order within a tick (a stable sort of arrival order), as the store
        # returns them: request lifecycles are paired in that order.
        rows = sorted(kept.values(), key=lambda row: row[0])
        since = rows[0][0] if rows else now_ns
        return Window(
            since_ns=min(since, now_ns - self.evidence_ns),
            until_ns=now_ns,
            events=[event for _, event in rows],
            log_read=self.log_read,
            known_calls=dict(self.known_calls),
        )

    def learn(self, window: Window) -> None:
        """Keep what a pass over ``window`` learned each model calls, for the passes after
        its batches leave the evidence window (``Window.known_calls``). A model learned again
        replaces what was known of it: a reload may change its calls."""
        try:
            learned = callees(instances_of(window))
        except Exception:  # the detectors' own reading failed too, and was reported there
            log.exception("learning the calls of this pass failed")
            return
        self.known_calls.update((model, frozenset(calls)) for model, calls in learned.items())

    def _evict(self, now_ns: int) -> None:
        horizon = now_ns - self.evidence_ns
        oldest = now_ns - self.lookback_ns
        kept = self._kept
        if len(kept) > self.max_records:
            over = len(kept) - self.max_records
            standing = _standing(kept)  # the oldest records, and the last to go
            for key in sorted(kept.keys() - standing, key=lambda k: kept[k][0])[:over]:
                del kept[key]
            self.stats.dropped_over_cap += over
            log.warning("live window full (%d): dropped the oldest %d", self.max_records, over)
        if not any(at < horizon for at, _ in kept.values()):
            self.stats.records, self.stats.carried = len(kept), 0
            return
        begun: dict[str, int] = {}
        pending: dict[str, int] = {}
        released: dict[str, int] = {}
        busy: dict[str, list[tuple[object, ...]]] = {}
        """Instance name -> its batches not released, newest last: two versions served at
        once run instances of the same name, and the log's instance lines carry no version
        (st_sequence_hang: version 1's batch hung on sess_tracker_0_1 while version 2's came
        and went under the name). A release ends the newest, as ``instances.py`` pairs them."""
        setup: dict[tuple[object, ...], tuple[int, tuple[object, ...]]] = {}
        admitted: dict[str, int] = {}
        newest, changed = self._newest_batch, self._changed
        logging_now: set[object] = set()
        """Logs with a line in the evidence window: their server is up and writing."""
        for key, (at, event) in kept.items():
            if key[0] == "log" and at >= horizon:
                logging_now.add(key[1])
            if isinstance(event, ev.RequestPrepared):
                begun[event.request_id] = begun.get(event.request_id, 0) + 1
                admitted[event.model] = max(at, admitted.get(event.model, at))
            elif isinstance(event, ev.RequestStateChange):
                rid = event.request_id
                if event.to_state == "PENDING":
                    pending[rid] = pending.get(rid, 0) + 1
                elif event.to_state == "RELEASED":
                    released[rid] = released.get(rid, 0) + 1
            elif isinstance(event, ev.InstanceExecuting | ev.InstanceReleased):
                # The tap's order is the log's.
                stack = busy.setdefault(event.instance, [])
                _batch_line(stack, key, isinstance(event, ev.InstanceExecuting))
                name = (key[1], event.instance)
                if at >= newest.get(name, (at, key))[0]:
                    newest[name] = (at, key)
            elif isinstance(event, SETUP_KINDS):
                _newest_setup(setup, key, at, event)
            elif isinstance(event, ev.ModelStateChange):
                changed[(key[1], event.model)] = max(at, changed.get((key[1], event.model), at))
            elif crash_of(event) is not None:
                changed[(key[1], "")] = max(at, changed.get((key[1], ""), at))
        open_ids = {
            rid
            for rid in begun.keys() | pending.keys()
            if rid and max(begun.get(rid, 0), pending.get(rid, 0)) > released.get(rid, 0)
        }
        busy_keys = {key for stack in busy.values() for key in stack}
        loading = _open_loads(kept, admitted)
        standing = {key for _, key in setup.values()}
        lasting = {key for key in loading if key[1] in logging_now}
        for name, (at, key) in list(newest.items()):
            log_of, line = name[0], kept.get(key)
            if line is None:
                if at < oldest:  # nothing older on its name can be carried past the lookback
                    del newest[name]
                continue
            event = line[1]
            if (
                key in busy_keys
                and log_of in logging_now
                and isinstance(event, ev.InstanceExecuting)
                and at > changed.get((log_of, event.model), at - 1)
                and at > changed.get((log_of, ""), at - 1)
            ):
                lasting.add(key)
        for what, at in list(changed.items()):
            if at < oldest:  # every batch begun before it is past the lookback, and dropped
                del changed[what]
        carried = 0
        for key, (at, event) in list(kept.items()):
            if at >= horizon:
                continue
            keep = (
                key in standing
                or key in lasting
                or (
                    at >= oldest
                    and (
                        key in busy_keys
                        or (isinstance(event, _REQUEST_KINDS) and event.request_id in open_ids)
                        or key in loading
                        or crash_of(event) is not None
                    )
                )
            )
            if keep:
                carried += 1
            else:
                del kept[key]
        self.stats.records, self.stats.carried = len(kept), carried


def _batch_line(stack: list[_T], item: _T, executing: bool) -> None:
    """One instance line on its name's batches not released, newest last: a release ends the
    newest, as ``instances.py`` pairs them; lost releases must not pile up."""
    if executing:
        stack.append(item)
        del stack[:-_MAX_SHADOWED]
    elif stack:
        stack.pop()


def _standing(kept: dict[tuple[object, ...], tuple[int, object]]) -> set[tuple[object, ...]]:
    """Keys of the setup lines in force: each log's last config of each model, and its last
    rate-limiter pool (each line gives the whole pool so far)."""
    setup: dict[tuple[object, ...], tuple[int, tuple[object, ...]]] = {}
    for key, (at, event) in kept.items():
        if isinstance(event, SETUP_KINDS):
            _newest_setup(setup, key, at, event)
    return {key for _, key in setup.values()}


def _newest_setup(
    setup: dict[tuple[object, ...], tuple[int, tuple[object, ...]]],
    key: tuple[object, ...],
    at: int,
    event: ev.ModelConfig | ev.RateLimiterPool,
) -> None:
    """Keep ``key`` in ``setup`` if its line is the newest of its kind and name in its log
    (``key[1]``: two servers may serve a model of the same name)."""
    what = (key[1], event.model) if isinstance(event, ev.ModelConfig) else (key[1],)
    if what not in setup or at >= setup[what][0]:
        setup[what] = (at, key)


def _open_loads(
    kept: dict[tuple[object, ...], tuple[int, object]], admitted: dict[str, int] | None = None
) -> set[tuple[object, ...]]:
    """Keys of the lines of loads that still tell the model's state, as ``loads.attempts``
    pairs them: the ``loading`` line of a load not ended since (``model_load_stuck``), and
    both lines of a failed load of a model that was not loaded again since and, as far as
    the window tells, has no copy serving: none loaded when it began, and no request to it
    admitted after it (``admitted``: model -> its latest ``prepared:`` line; a model with no
    copy refuses requests before that line). It is still unavailable (``model_load_failed``,
    ``ensemble_fanout``). A refused reload while an older copy serves is history, not state:
    it goes with its evidence."""
    changes = sorted(
        ((at, key, e) for key, (at, e) in kept.items() if isinstance(e, ev.ModelStateChange)),
        key=lambda row: row[0],
    )
    tried = attempts(e for _, _, e in changes)
    still: set[int] = set()
    for i, a in enumerate(tried):
        if a.ended is None and a.begun is not None:
            still.add(id(a.begun))
        elif (
            a.failed
            and a.ended is not None
            and not a.serving
            and (admitted or {}).get(a.model, 0) <= a.ended.header.at_ns
            and not any(b.model == a.model for b in tried[i + 1 :])
        ):
            still.update(id(line) for line in (a.begun, a.ended) if line is not None)
    return {key for _, key, e in changes if id(e) in still}
