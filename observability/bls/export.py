"""Span export that never blocks the model: a bounded deque drained by one worker thread.

Why a ``deque(maxlen=...)``: appending is one atomic C call that drops the oldest record when
full (the newest say most about now), so the model's thread never waits for the worker; the
worker takes records with ``popleft`` (atomic too) and holds no lock the model needs while it
encodes and sends. The one lock here is taken by model threads only (and the watchdog, and
``shutdown``), so that drops are counted on /metrics, where the SDK drops silently (one log
line per 20 s); the count is exact but for one case, a record the worker takes in the instant
a model thread sees the queue full, which is counted though it was sent. A fork in the stub
gets a fresh queue and worker, and ``shutdown`` returns within its budget whatever the endpoint
does.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["ExportQueue", "SpanExporter", "build_exporter"]

DropCallback = Callable[[str, int], None]


class SpanExporter(Protocol):
    """Sends a batch; True when accepted. Must not raise (a raise counts as a failure)."""

    def export(self, batch: list[Any]) -> bool: ...

    def shutdown(self) -> None: ...


class ExportQueue:
    """Span records from the model's threads to one export worker."""

    def __init__(
        self,
        exporter: SpanExporter,
        on_drop: DropCallback,
        queue_size: int = 2048,
        batch_size: int = 256,
        interval_s: float = 1.0,
    ) -> None:
        self._exporter = exporter
        self._on_drop = on_drop
        self._queue_size = queue_size
        self._batch_size = batch_size
        self._interval_s = interval_s
        self.export_cpu_s = 0.0
        """CPU time the worker spent encoding and sending (for the benchmark's honesty)."""
        self.exported = 0
        self._init_state()
        ref = weakref.ref(self)

        def after_fork() -> None:
            queue = ref()
            if queue is not None:
                queue._init_state()

        os.register_at_fork(after_in_child=after_fork)

    def _init_state(self) -> None:
        self._lock = threading.Lock()  # never taken by the worker
        self._wake = threading.Event()
        self._queue: collections.deque = collections.deque(maxlen=self._queue_size)
        self._stopping = False
        self._abandoned = False
        self._busy = False
        self._worker: threading.Thread | None = None

    def submit(self, record: Any) -> None:
        """Queue a finished span; drops (and counts) the oldest when full. Never blocks on I/O."""
        queue = self._queue
        with self._lock:
            if self._stopping:
                full = None
            else:
                full = len(queue) >= self._queue_size
                queue.append(record)
                if self._worker is None:
                    self._start_worker()
        if full is None:
            self._on_drop("shutdown", 1)
            return
        if full:
            self._on_drop("queue_full", 1)
        elif len(queue) >= self._batch_size and not self._wake.is_set():
            self._wake.set()

    def export_soon(self) -> None:
        """Wake the worker now (a hung-call report must not wait for the interval)."""
        self._wake.set()

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Export what is queued now; True when it was all sent (or failed) within the time."""
        deadline = time.monotonic() + timeout_s
        self.export_soon()
        while time.monotonic() < deadline:
            if not self._queue and not self._busy:
                return True
            time.sleep(0.01)
        return False

    def shutdown(self, timeout_s: float = 4.0) -> None:
        """Export what is queued for at most ``timeout_s``, count the rest as dropped."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            worker = self._worker
        self._wake.set()
        if worker is not None:
            worker.join(max(0.0, deadline - time.monotonic() - 0.2))
        self._abandoned = True
        left = 0
        with contextlib.suppress(IndexError):
            while True:
                self._queue.popleft()
                left += 1
        if left:
            self._on_drop("shutdown", left)
        with contextlib.suppress(Exception):
            self._exporter.shutdown()  # also ends a request stalled past the budget

    # -- worker --------------------------------------------------------------------------
    def _start_worker(self) -> None:
        self._worker = threading.Thread(target=self._run, name="triton-obs-export", daemon=True)
        self._worker.start()

    def _run(self) -> None:
        queue, wake = self._queue, self._wake
        while True:
            wake.wait(self._interval_s)
            wake.clear()
            self._busy = True
            while queue and not self._abandoned:
                batch = []
                with contextlib.suppress(IndexError):
                    for _ in range(self._batch_size):
                        batch.append(queue.popleft())
                if batch:
                    self._export(batch)
            self._busy = False
            if self._stopping:
                return

    def _export(self, batch: list) -> None:
        cpu = time.thread_time()
        try:
            ok = self._exporter.export(batch) is True
        except Exception:
            ok = False
        self.export_cpu_s += time.thread_time() - cpu
        self.exported += len(batch)
        if not ok:
            self._on_drop("export_failed", len(batch))


def build_exporter(settings: Any, on_drop: DropCallback) -> ExportQueue | None:
    """An :class:`ExportQueue` sending OTLP/HTTP protobuf to ``settings.endpoint``; None when
    there is no endpoint (no spans are made then; metrics and hung reports stay on)."""
    if not settings.endpoint:
        return None
    from observability.bls.otlp import OtlpHttpExporter, env_headers

    resource = {
        "service.name": settings.model,
        "service.instance.id": f"{settings.instance}/{os.getpid()}",
        "triton.model.name": settings.model,
        "triton.model.instance": settings.instance,
        "telemetry.sdk.language": "python",
        "telemetry.sdk.name": "triton-observability",
        **dict(settings.resource_attributes),
    }
    if settings.service_name:  # OTEL_SERVICE_NAME beats service.name of the attributes
        resource["service.name"] = settings.service_name
    exporter = OtlpHttpExporter(
        settings.endpoint,
        settings.export_timeout_s,
        resource,
        env_headers(),
        gzip=settings.compression == "gzip",
    )
    return ExportQueue(
        exporter,
        on_drop,
        queue_size=settings.queue_size,
        batch_size=settings.batch_size,
        interval_s=settings.flush_interval_s,
    )
