"""The in-flight registry and the watchdog that reports a hung BLS call while it is still hung.

Why a watchdog: Triton has no execution timeout and emits a span or trace entry only when it
ends, so a hung call is invisible exactly while it matters. Each stub keeps a dict of calls in
flight; one daemon thread scans it a few times per deadline, reports each call older than the
deadline once (a marker span exported at once, a stderr line in Triton's log, the hung gauge)
and, about once a second, publishes the metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Call", "InFlight", "Tracked", "Watchdog"]

_STACK_LIMIT = 12


@dataclass(eq=False, slots=True)
class Call:
    """One BLS call in flight: plain values taken at the start, formatted only when reported.

    ``trace_id``/``span_id`` exist even when the call is sampled out (``span`` is None then),
    so a hung report can still name the call it is about."""

    child: str
    parent_request_id: str
    child_request_id: str
    started: float
    """``time.monotonic()`` at the start."""
    trace_id: int = 0
    span_id: int = 0
    span: Any = None
    """The call's :class:`~observability.bls.spans.SpanRecord`; None when not exported."""
    task: Any = None
    """The asyncio task awaiting the call (async form): its coroutine stack is reported."""
    thread_id: int | None = None
    """The thread blocked in ``exec`` (sync form): its stack is reported."""
    hung_at: float | None = None
    exec_started: bool | None = None
    """async form: False while queued for an executor thread, True once one runs it."""
    key: int = field(default=0)

    def stack(self) -> str:
        """The waiting code, newest frame last; empty when it cannot be had cheaply."""
        try:
            if self.task is not None:
                frames = self.task.get_stack(limit=_STACK_LIMIT)
                summary = traceback.StackSummary.extract(
                    ((f, f.f_lineno) for f in frames), lookup_lines=False
                )
                return "".join(summary.format())
            if self.thread_id is not None:
                frame = sys._current_frames().get(self.thread_id)
                if frame is not None:
                    return "".join(traceback.format_stack(frame, limit=_STACK_LIMIT))
        except Exception:
            pass
        return ""


class Tracked(Protocol):
    """What the registry and the watchdog need of a tracked item (a call, a stream)."""

    key: int
    started: float
    hung_at: float | None


T = TypeVar("T", bound=Tracked)


class InFlight(Generic[T]):
    """Items in flight in this stub, keyed by a counter (dict ops are atomic under the GIL)."""

    def __init__(self) -> None:
        self._calls: dict[int, T] = {}
        self._ids = itertools.count(1)
        self.peak = 0

    def add(self, call: T) -> None:
        call.key = next(self._ids)
        self._calls[call.key] = call
        n = len(self._calls)
        if n > self.peak:
            self.peak = n

    def remove(self, call: T) -> None:
        self._calls.pop(call.key, None)

    def __len__(self) -> int:
        return len(self._calls)

    def calls(self) -> list[T]:
        return list(self._calls.values())


def current_task() -> Any:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


class Watchdog(Generic[T]):
    """A daemon thread: hung-call reports every ``tick_s``, ``on_publish`` every ``publish_s``."""

    def __init__(
        self,
        inflight: InFlight[T],
        deadline_s: float,
        on_hung: Callable[[T, float], None],
        on_publish: Callable[[], None],
        publish_s: float = 1.0,
    ) -> None:
        self._inflight = inflight
        self._deadline_s = deadline_s
        self._on_hung = on_hung
        self._on_publish = on_publish
        self._publish_s = publish_s
        self.tick_s = min(0.25, deadline_s / 4)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        ref = weakref.ref(self)

        def after_fork() -> None:
            watchdog = ref()
            if watchdog is not None:
                watchdog._after_fork()

        os.register_at_fork(after_in_child=after_fork)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="triton-obs-watchdog", daemon=True
            )
            self._thread.start()

    def _after_fork(self) -> None:
        was_running = self._thread is not None and not self._stop.is_set()
        self._stop = threading.Event()
        self._thread = None
        if was_running:
            self.start()

    def stop(self, timeout_s: float = 1.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._on_publish()

    def check(self, now: float | None = None) -> list[T]:
        """Report calls past the deadline not reported yet; returns them (for tests)."""
        now = time.monotonic() if now is None else now
        found = []
        for call in self._inflight.calls():
            if call.hung_at is None and now - call.started >= self._deadline_s:
                call.hung_at = now
                found.append(call)
                try:
                    self._on_hung(call, now - call.started)
                except Exception as exc:
                    print(f"triton-obs bls: hung report failed: {exc!r}", file=sys.stderr)
        return found

    def _run(self) -> None:
        next_publish = 0.0
        while not self._stop.wait(self.tick_s):
            self.check()
            now = time.monotonic()
            if now >= next_publish:
                next_publish = now + self._publish_s
                with contextlib.suppress(Exception):
                    self._on_publish()
