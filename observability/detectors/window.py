"""A read-only view of the signals between two instants: what every detector reads.

Detectors are pure over a window: the same window gives the same findings, live (``watch``
evaluates at the wall clock) or offline (``analyze`` evaluates at the bundle's end). A window
is backed by the store, or by plain event lists in tests.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, cast, overload

from observability import events as ev
from observability.store import Store

__all__ = ["ISO_SPREAD_NS", "Window", "per_window"]

R = TypeVar("R")
K = TypeVar("K")

ISO_SPREAD_NS = 50_000_000
"""An ISO8601 header (``--log-format ISO8601``) has whole seconds; the parser places the
n-th record of a second n µs into it, so such times sit in a second's first 50 ms (50,000
records). A glog time falls there one time in twenty."""
_WHOLE_SECONDS_MIN = 8
"""Records needed to call a log whole-second: eight glog times all in the first 50 ms of
their seconds happen once in 4e10 windows."""


@dataclass
class Window:
    since_ns: int
    until_ns: int
    """The evaluation instant ("now"): a request open at ``until_ns`` is still open."""
    store: Store | None = None
    events: Sequence[object] = field(default_factory=tuple)
    """Used instead of a store (tests, in-memory pipelines)."""
    clock_offset_ns: int | None = None
    """``epoch - monotonic`` of the Triton host: turns trace-file timestamps into epoch."""
    log_read: bool = False
    """A log was read for this window (a bundle's ``triton.log``, the file ``watch`` tails),
    even where it holds no line of it: below ``--log-verbose 1`` a serving Triton writes
    nothing until something goes wrong, so its silence is a signal, not a missing one."""
    known_calls: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Model -> the models it calls through BLS, as earlier passes of ``watch`` learned them
    (``waits.callees``): kept for a model whose completed batches have left the evidence
    window. A batch hung for longer than the window is otherwise a model of unknown calls,
    free to claim every request queued since, a client's request to its own caller included,
    and a hang read as a deadlock (doc_extract_hang with 20 s of evidence)."""

    # -- log ---------------------------------------------------------------------------
    @cached_property
    def _logs(self) -> list[object]:
        if self.store is not None:
            return list(self.store.log_records(since_ns=self.since_ns, until_ns=self.until_ns + 1))
        since, until, kinds = self.since_ns, self.until_ns, _log_kinds(self.events)
        # Chosen by class, then timed: analyze's windows hold every line, and a test of each
        # event's fields in a Python loop was most of the cost of building this list.
        logs = [e for e in self.events if type(e) in kinds]
        logs = [e for e in logs if since <= _log_time(e) <= until]
        logs.sort(key=_log_time)  # stable: records of one instant keep the file's order
        return logs

    @overload
    def logs(self) -> list[object]: ...
    @overload
    def logs(self, kind: type[R], /) -> list[R]: ...
    @overload
    def logs(self, *kinds: type) -> list[object]: ...

    def logs(self, *kinds: type) -> list[Any]:
        """Log records of the given classes (all when none), in time order: one class gives
        a list of that class, so a detector reads its fields typed."""
        if not kinds:
            return list(self._logs)
        logs, index = self._logs, self._log_index
        if len(kinds) == 1:
            return [logs[i] for i in index.get(kinds[0], ())]
        return [logs[i] for i in sorted(i for k in kinds for i in index.get(k, ()))]

    def logs_where(
        self, kinds: Iterable[type], where: Mapping[type, Callable[[Any], bool]]
    ) -> list[object]:
        """``logs(*kinds)``, keeping a record of a class in ``where`` only when its test
        passes: a reader that needs a few of a numerous class (the state lines, about three a
        request) tests them instead of merging them all into its time order."""
        logs, index = self._logs, self._log_index
        picked: list[int] = []
        for kind in kinds:
            test = where.get(kind)
            at = index.get(kind, ())
            picked.extend(at if test is None else (i for i in at if test(logs[i])))
        return [logs[i] for i in sorted(picked)]

    @cached_property
    def _header_times(self) -> list[int]:
        """The time of every record with a log header (a stub's bare text has none)."""
        return [h.at_ns for e in self._logs if (h := getattr(e, "header", None)) is not None]

    @property
    def last_log_ns(self) -> int | None:
        """When the log's last headed line was written (None: no such line)."""
        return max(self._header_times, default=None)

    @property
    def first_log_ns(self) -> int | None:
        """When the window's first headed log line was written (None: no such line)."""
        return min(self._header_times, default=None)

    @cached_property
    def whole_seconds(self) -> bool:
        """Whether the log's times are whole seconds (``--log-format ISO8601``): a batch
        under a second then reads as microseconds, so a finding must not quote it in ms."""
        stamps = self._header_times
        return len(stamps) >= _WHOLE_SECONDS_MIN and all(
            t % 1_000_000_000 < ISO_SPREAD_NS for t in stamps
        )

    @cached_property
    def _log_index(self) -> dict[type, list[int]]:
        """Positions of the records by exact class: a dozen detectors ask for a few kinds
        each, and a scan of every record per ask was a scan of the whole window."""
        out: dict[type, list[int]] = {}
        for i, e in enumerate(self._logs):
            out.setdefault(type(e), []).append(i)
        return out

    # -- metrics and stats -------------------------------------------------------------
    @cached_property
    def _by_type(self) -> dict[type, list[object]]:
        """The events by exact class, in their order, made in one pass: five readers each
        scanned every event of an in-memory window (most of them log lines) for one class."""
        out: dict[type, list[object]] = {}
        for e in self.events:
            out.setdefault(type(e), []).append(e)
        return out

    def _of(self, kind: type[R]) -> list[R]:
        """The events of ``kind`` or a subclass of it, each class's in event order."""
        found = [e for t, es in self._by_type.items() if issubclass(t, kind) for e in es]
        return cast(list[R], found)

    def samples(self, name: str) -> list[tuple[str, int, ev.MetricSample]]:
        """``(target, at_ns, sample)`` of one sample name, in time order."""
        if self.store is not None:
            return list(self.store.metric_samples(name, self.since_ns, self.until_ns + 1))
        return list(self._samples_by_name.get(name, ()))

    @cached_property
    def _samples_by_name(self) -> dict[str, list[tuple[str, int, ev.MetricSample]]]:
        """Every sample of the events by name, built once: detectors ask for a dozen names
        per pass, and a scan of the events per name was a scan of the whole live window."""
        out: dict[str, list[tuple[str, int, ev.MetricSample]]] = {}
        scrapes = [
            e for e in self._of(ev.MetricsScrape) if self.since_ns <= e.at_ns <= self.until_ns
        ]
        for e in sorted(scrapes, key=lambda e: e.at_ns):
            for s in e.samples:
                out.setdefault(s.name, []).append((e.target, e.at_ns, s))
        return out

    @cached_property
    def model_stats(self) -> list[ev.ModelStats]:
        source: Iterable[object] = (
            self.store.model_stats() if self.store is not None else self._of(ev.ModelStats)
        )
        return [
            e
            for e in source
            if isinstance(e, ev.ModelStats) and self.since_ns <= e.at_ns <= self.until_ns
        ]

    @cached_property
    def scrapes(self) -> list[ev.ScrapeStatus]:
        source: Iterable[object] = (
            self.store.scrapes() if self.store is not None else self._of(ev.ScrapeStatus)
        )
        return [
            e
            for e in source
            if isinstance(e, ev.ScrapeStatus) and self.since_ns <= e.at_ns <= self.until_ns
        ]

    # -- spans -------------------------------------------------------------------------
    @cached_property
    def trace_spans(self) -> list[ev.TraceSpan]:
        """Trace-file spans (monotonic clock; see :meth:`trace_epoch_ns`). Not time-filtered
        unless the clock offset is known."""
        source: Iterable[object] = (
            self.store.trace_spans() if self.store is not None else self._of(ev.TraceSpan)
        )
        spans = [e for e in source if isinstance(e, ev.TraceSpan)]
        if self.clock_offset_ns is None:
            return spans
        return [s for s in spans if self._in_window(s)]

    def _in_window(self, span: ev.TraceSpan) -> bool:
        stamps = [ns for _, ns in span.timestamps]
        if not stamps:
            return False
        start = self.trace_epoch_ns(min(stamps))
        return start is not None and self.since_ns <= start <= self.until_ns

    def trace_epoch_ns(self, monotonic_ns: int) -> int | None:
        return None if self.clock_offset_ns is None else monotonic_ns + self.clock_offset_ns

    @cached_property
    def otlp_spans(self) -> list[ev.OtlpSpan]:
        source: Iterable[object] = (
            self.store.otlp_spans() if self.store is not None else self._of(ev.OtlpSpan)
        )
        return [
            e
            for e in source
            if isinstance(e, ev.OtlpSpan) and self.since_ns <= e.start_ns <= self.until_ns
        ]


def _log_kinds(events: Iterable[object]) -> frozenset[type]:
    """The classes of ``events`` that are log records: those with a log header, and a stub's
    headerless print (every instance of an event class has a header or none)."""
    sample = {type(e): e for e in events}
    return frozenset(
        t for t, e in sample.items() if getattr(e, "header", None) is not None or t is ev.StubOutput
    )


def _log_time(record: object) -> int:
    """When a log record was written: its header's time, or the time a stub's print borrows."""
    header = getattr(record, "header", None)
    return header.at_ns if header is not None else record.at_ns  # type: ignore[attr-defined]


def per_window(read: Callable[[K], R]) -> Callable[[K], R]:
    """``read`` made once per window object (or per any object read from one, such as its
    instance lifecycles): the detectors of one pass ask for the same readings of it, and a
    window is read-only. The result goes with its object."""
    cache: dict[int, tuple[weakref.ref[K], R]] = {}

    @functools.wraps(read)
    def once(window: K) -> R:
        key = id(window)
        hit = cache.get(key)
        if hit is not None and hit[0]() is window:
            return hit[1]
        result = read(window)
        cache[key] = (weakref.ref(window, lambda _ref: cache.pop(key, None)), result)
        return result

    return once
