"""Span export that never blocks the model: a bounded queue drained by one worker thread.

Why our own processor and not the SDK's ``BatchSpanProcessor``: the SDK drops silently (one log
line per 20 s) and we must count every dropped span on /metrics. The contract is the SDK's:
``on_end`` only appends under a lock (dropping the oldest when full), the worker exports in
batches with a bounded timeout and swallows exporter failures, a fork in the stub gets a fresh
queue and worker, and ``shutdown`` returns within its budget whatever the endpoint does.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["BoundedBatchProcessor", "build_tracer"]

DropCallback = Callable[[str, int], None]


class BoundedBatchProcessor:
    """An opentelemetry-sdk ``SpanProcessor`` (duck-typed so importing us never needs the SDK)."""

    def __init__(
        self,
        exporter: Any,
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
        self._init_state()
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (p := ref()) and p._init_state())

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: collections.deque = collections.deque()
        self._stopping = False
        self._flush_requested = False
        self._worker: threading.Thread | None = None

    # -- SpanProcessor -------------------------------------------------------------------
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def _on_ending(self, span: Any) -> None:
        pass

    def on_end(self, span: Any) -> None:
        if not span.context.trace_flags.sampled:
            return
        dropped = False
        with self._lock:
            if self._stopping:
                dropped = True
            else:
                if len(self._queue) >= self._queue_size:
                    self._queue.popleft()  # drop the oldest: the newest say most about now
                    dropped = True
                self._queue.append(span)
                if self._worker is None:
                    self._start_worker()
                elif len(self._queue) >= self._batch_size:
                    self._wake.notify()
        if dropped:
            self._on_drop("shutdown" if self._stopping else "queue_full", 1)

    def export_soon(self) -> None:
        """Wake the worker now (a hung-call report must not wait for the interval)."""
        with self._lock:
            self._flush_requested = True
            if self._worker is None and self._queue:
                self._start_worker()
            self._wake.notify()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        self.export_soon()
        while time.monotonic() < deadline:
            with self._lock:
                if not self._queue and not self._flush_requested:
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
            self._wake.notify()
            worker = self._worker
        if worker is not None:
            worker.join(max(0.0, deadline - time.monotonic() - 0.2))
        with self._lock:
            left = len(self._queue)
            self._queue.clear()
        if left:
            self._on_drop("shutdown", left)
        with contextlib.suppress(Exception):
            self._exporter.shutdown()

    # -- worker --------------------------------------------------------------------------
    def _start_worker(self) -> None:
        self._worker = threading.Thread(target=self._run, name="triton-obs-export", daemon=True)
        self._worker.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                idle = not self._stopping and not self._flush_requested
                if idle and len(self._queue) < self._batch_size:
                    self._wake.wait(self._interval_s)
                batch = [
                    self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))
                ]
                stopping = self._stopping
                if not self._queue:
                    self._flush_requested = False
            if batch:
                self._export(batch)
            elif stopping:
                return

    def _export(self, batch: list) -> None:
        try:
            result = self._exporter.export(batch)
            ok = getattr(result, "name", "SUCCESS") == "SUCCESS"
        except Exception:
            ok = False
        if not ok:
            self._on_drop("export_failed", len(batch))


def build_tracer(
    settings: Any, on_drop: DropCallback
) -> tuple[Any, Any, BoundedBatchProcessor] | None:
    """Private SDK tracers exporting OTLP/HTTP protobuf to ``settings.endpoint``.

    Returns ``(tracer, marker_tracer, processor)``: the marker tracer samples everything, so a
    hung-call report goes out even when the hung call itself was sampled out.

    None when there is no endpoint or the SDK/exporter is not installed: the caller then uses
    the opentelemetry API's no-op tracer. The provider is private (not set as the global one)
    so a model that configures opentelemetry itself keeps its own setup.
    """
    if not settings.endpoint:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased
    except ImportError:
        return None
    # One "Transient error ... retrying" line per failed batch would flood Triton's log while a
    # collector is down; the drops are counted on /metrics instead.
    logging.getLogger("opentelemetry.exporter").setLevel(logging.ERROR)
    exporter = OTLPSpanExporter(endpoint=settings.endpoint, timeout=settings.export_timeout_s)
    processor = BoundedBatchProcessor(
        exporter,
        on_drop,
        queue_size=settings.queue_size,
        batch_size=settings.batch_size,
        interval_s=settings.flush_interval_s,
    )
    resource = Resource.create(
        {
            "service.name": settings.model,
            "service.instance.id": f"{settings.instance}/{os.getpid()}",
            "triton.model.name": settings.model,
            "triton.model.instance": settings.instance,
        }
    )
    provider = TracerProvider(
        resource=resource,
        sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
        shutdown_on_exit=False,  # ours is bounded and runs from finalize / our atexit hook
    )
    provider.add_span_processor(processor)
    markers = TracerProvider(resource=resource, sampler=ALWAYS_ON, shutdown_on_exit=False)
    markers.add_span_processor(processor)
    return (
        provider.get_tracer("observability.bls"),
        markers.get_tracer("observability.bls.hung"),
        processor,
    )
