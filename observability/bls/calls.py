"""The instrumenter of one stub: a span, a registry entry and counters around every BLS call.

Why spans are parented the way they are (first match wins): the current opentelemetry span
(set by ``traced_execute`` for a one-request batch, by ``task`` for a wrapped task, or by the
user); the request span ``traced_execute`` opened for this parent request; Triton's own span
from ``request.trace().get_context()`` (opentelemetry trace mode); else a new trace that carries
the request ids as attributes, so it can still be joined with Triton's trace file and log.

Why ``async_exec`` is re-implemented as ``loop.run_in_executor(None, exec)``: that is what the
python backend's ``async_exec`` does (pb_stub.cc), and doing it ourselves is the only way to see
when an executor thread picks the call up, i.e. how long it waited for one.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from observability.bls.inflight import Call, InFlight, Watchdog
from observability.bls.metrics import BlsMetrics, Publisher
from observability.bls.settings import Settings
from observability.bls.tensors import describe_tensors

__all__ = ["CallScope", "Instrumenter", "ResponseStream"]

_PROPAGATOR = TraceContextTextMapPropagator()
_HUNG_LINES_PER_TICK = 20
_perf = time.perf_counter


def _text(obj: Any, method: str) -> str:
    try:
        value = getattr(obj, method)()
    except Exception:
        return ""
    return value if isinstance(value, str) else ""


def child_model(infer_request: Any, parent_id: str, child_id: str) -> str:
    """The child's model name. 2.51's ``InferenceRequest`` does not expose it, so it falls back
    to the request-id convention ``<parent id>.<model>[.<n>]`` (see ``bls.child_request``)."""
    name = _text(infer_request, "model_name")
    if name:
        return name
    if parent_id and child_id.startswith(parent_id + "."):
        return child_id[len(parent_id) + 1 :].split(".", 1)[0] or "unknown"
    return "unknown"


def triton_context(request: Any) -> Any:
    """The opentelemetry context of Triton's span for ``request``; None in triton trace mode."""
    try:
        trace = request.trace()
        raw = trace.get_context() if trace is not None else None
    except Exception:
        return None
    if not raw:
        return None
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            carrier = json.loads(raw)
        except ValueError:
            return None
    else:
        carrier = {"traceparent": str(raw)}
    if not isinstance(carrier, dict) or "traceparent" not in carrier:
        return None
    ctx = _PROPAGATOR.extract({str(k): str(v) for k, v in carrier.items()})
    span = otel_trace.get_current_span(ctx)
    return ctx if span.get_span_context().is_valid else None


class Instrumenter:
    """Everything one model instance records. Created by :func:`observability.bls.setup`."""

    def __init__(
        self,
        settings: Settings,
        tracer: Any = None,
        processor: Any = None,
        pb_utils: Any = None,
        marker_tracer: Any = None,
    ) -> None:
        self.settings = settings
        self.tracer = tracer if tracer is not None else otel_trace.NoOpTracer()
        self.marker_tracer = marker_tracer if marker_tracer is not None else self.tracer
        self.processor = processor
        self.metrics = BlsMetrics(settings.model, settings.instance)
        self.publisher = Publisher(self.metrics, pb_utils if settings.metrics else None)
        self.inflight = InFlight()
        self.watchdog = Watchdog(
            self.inflight, settings.deadline_s, self._report_hung, self._publish
        )
        self._requests: dict[int, tuple[Any, Any]] = {}
        self._loop: Any = None
        self._hung_children: set[str] = set()
        self._hung_lines = 0
        self._base_attrs = {
            "triton.bls.parent.model": settings.model,
            "triton.bls.parent.instance": settings.instance,
        }
        self._calls_key = "triton_obs_bls_calls"
        self.metrics.set(
            "triton_obs_bls_thread_pool_capacity",
            self.metrics.own("python_backend"),
            float(settings.thread_pool_size),
        )
        self.watchdog.start()

    # -- parents -------------------------------------------------------------------------
    def _parent(self, request: Any) -> Any:
        current = otel_trace.get_current_span()
        if current.get_span_context().is_valid:
            return None  # the current context already carries the right parent
        entry = self._requests.get(id(request))
        if entry is not None and entry[0] is request:
            return entry[1]
        return triton_context(request)

    def begin_requests(self, requests: list) -> Any:
        """Open one span per request of an ``execute`` batch (see ``traced_execute``)."""
        token = None
        for request in requests:
            span = self.tracer.start_span(
                f"{self.settings.model} execute",
                context=triton_context(request),
                kind=SpanKind.SERVER,
                attributes={
                    **self._base_attrs,
                    "triton.request_id": _text(request, "request_id"),
                    "triton.batch_requests": len(requests),
                },
            )
            ctx = otel_trace.set_span_in_context(span)
            self._requests[id(request)] = (request, ctx)
        if len(requests) == 1:
            token = otel_context.attach(self._requests[id(requests[0])][1])
        return token

    def end_requests(self, requests: list, token: Any, responses: Any = None) -> None:
        if token is not None:
            otel_context.detach(token)
        if not isinstance(responses, list) or len(responses) != len(requests):
            responses = [None] * len(requests)
        for request, response in zip(requests, responses, strict=True):
            entry = self._requests.pop(id(request), None)
            if entry is None:
                continue
            span = otel_trace.get_current_span(entry[1])
            error = _error_message(response)
            if error is not None:
                span.set_status(Status(StatusCode.ERROR, error))
            span.end()

    # -- calls ---------------------------------------------------------------------------
    def begin(
        self,
        request: Any,
        infer_request: Any,
        decoupled: bool,
        task: Any = None,
        model: str | None = None,
    ) -> Call:
        parent_id = _text(request, "request_id") if request is not None else ""
        child_id = _text(infer_request, "request_id")
        child = model or child_model(infer_request, parent_id, child_id)
        span = self.tracer.start_span(
            f"bls {child}",
            context=self._parent(request) if request is not None else None,
            kind=SpanKind.CLIENT,
            attributes={
                **self._base_attrs,
                "triton.bls.child.model": child,
                "triton.bls.parent.request_id": parent_id,
                "triton.bls.child.request_id": child_id,
                "triton.bls.decoupled": decoupled,
            },
        )
        if span.is_recording():
            span.set_attribute("triton.bls.inputs", describe_tensors(_safe(infer_request.inputs)))
        call = Call(child, parent_id, child_id, time.monotonic(), span, task=task)
        if task is None:
            call.thread_id = threading.get_ident()
        self.inflight.add(call)
        return call

    def end(
        self,
        call: Call,
        response: Any = None,
        exc: BaseException | None = None,
        wait_s: float | None = None,
        responses: int | None = None,
    ) -> None:
        self.inflight.remove(call)
        if exc is not None:
            outcome = "cancelled" if isinstance(exc, asyncio.CancelledError) else "exception"
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = _error_message(response)
            outcome = "ok" if error is None else "error"
        m = self.metrics
        m.add(self._calls_key, m.edge(call.child, outcome))
        if wait_s is not None:
            m.add("triton_obs_bls_executor_wait_seconds", m.own(), wait_s)
            m.add("triton_obs_bls_executor_waits", m.own())
        span = call.span
        if span.is_recording():
            attrs: dict[str, Any] = {"triton.bls.outcome": outcome}
            if wait_s is not None:
                attrs["triton.bls.executor_wait_s"] = wait_s
            if responses is not None:
                attrs["triton.bls.responses"] = responses
            elif response is not None and error is None:
                attrs["triton.bls.outputs"] = describe_tensors(_safe(response.output_tensors))
            if call.hung_at is not None:
                attrs["triton.bls.hung"] = True
                attrs["triton.bls.hung_after_s"] = call.hung_at - call.started
            span.set_attributes(attrs)
            if exc is not None and not isinstance(exc, asyncio.CancelledError):
                span.record_exception(exc)
            if error is not None:
                span.set_status(Status(StatusCode.ERROR, error))
        span.end()

    def exec(
        self, request: Any, infer_request: Any, decoupled: bool = False, model: str | None = None
    ) -> Any:
        try:
            call = self.begin(request, infer_request, decoupled, model=model)
        except Exception:  # telemetry must never break the call
            return infer_request.exec(decoupled=decoupled)
        try:
            response = infer_request.exec(decoupled=decoupled)
        except BaseException as exc:
            self.safe_end(call, exc=exc)
            raise
        if decoupled:
            return ResponseStream(self, call, response)
        self.safe_end(call, response)
        return response

    async def async_exec(
        self, request: Any, infer_request: Any, decoupled: bool = False, model: str | None = None
    ) -> Any:
        loop = asyncio.get_running_loop()
        try:
            if loop is not self._loop:
                self._install_handler(loop)
            task = asyncio.current_task()
            call = self.begin(request, infer_request, decoupled, task=task, model=model)
            if task is not None and _own_coro(task) is not None:
                _TASK_CALLS[task] = call
        except Exception:  # telemetry must never break the call
            return await infer_request.async_exec(decoupled=decoupled)
        submitted = _perf()
        started: list[float] = []

        def run() -> Any:
            started.append(_perf())
            call.exec_started = True
            return infer_request.exec(decoupled=decoupled)

        call.exec_started = False
        try:
            response = await loop.run_in_executor(None, run)
        except BaseException as exc:
            self.safe_end(call, exc=exc, wait_s=started[0] - submitted if started else None)
            raise
        wait_s = started[0] - submitted
        if decoupled:
            return ResponseStream(self, call, response, wait_s)
        self.safe_end(call, response, wait_s=wait_s)
        return response

    def safe_end(self, call: Call, *args: Any, **kwargs: Any) -> None:
        """:meth:`end` that never raises into the model (the registry entry always goes)."""
        try:
            self.end(call, *args, **kwargs)
        except Exception as exc:
            self.inflight.remove(call)
            print(f"triton-obs bls: recording a call failed: {exc!r}", file=sys.stderr)

    # -- hung calls and metrics ----------------------------------------------------------
    def _report_hung(self, call: Call, age_s: float) -> None:
        m = self.metrics
        m.add("triton_obs_bls_hung_calls", m.edge(call.child))
        self._hung_children.add(call.child)
        stack = call.stack()
        ctx = call.span.get_span_context()
        attrs = {
            **self._base_attrs,
            "triton.bls.child.model": call.child,
            "triton.bls.parent.request_id": call.parent_request_id,
            "triton.bls.child.request_id": call.child_request_id,
            "triton.bls.age_s": age_s,
            "triton.bls.deadline_s": self.settings.deadline_s,
            "triton.bls.stack": stack,
            "triton.bls.call.trace_id": f"{ctx.trace_id:032x}",
            "triton.bls.call.span_id": f"{ctx.span_id:016x}",
        }
        marker = self.marker_tracer.start_span(
            "bls.call.hung",
            context=otel_trace.set_span_in_context(call.span),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
        )
        marker.set_status(Status(StatusCode.ERROR, f"in flight for {age_s:.1f} s"))
        marker.end()
        if call.span.is_recording():
            call.span.add_event("bls.call.hung", {"triton.bls.age_s": age_s})
        if self.processor is not None:
            self.processor.export_soon()
        if self._hung_lines < _HUNG_LINES_PER_TICK:
            self._hung_lines += 1
            print(
                f"triton-obs bls: HUNG BLS call {self.settings.model} -> {call.child} "
                f"instance={self.settings.instance} parent_request_id={call.parent_request_id!r} "
                f"child_request_id={call.child_request_id!r} age={age_s:.2f}s "
                f"deadline={self.settings.deadline_s:g}s trace_id={ctx.trace_id:032x}",
                file=sys.stderr,
                flush=True,
            )

    def refresh_gauges(self) -> None:
        m = self.metrics
        calls = self.inflight.calls()
        m.set("triton_obs_bls_inflight", m.own(), float(len(calls)))
        m.set("triton_obs_bls_inflight_peak", m.own(), float(self.inflight.peak))
        waiting = sum(1 for c in calls if c.exec_started is False)
        m.set("triton_obs_bls_executor_waiting", m.own(), float(waiting))
        hung: dict[str, int] = dict.fromkeys(self._hung_children, 0)
        for c in calls:
            if c.hung_at is not None:
                hung[c.child] = hung.get(c.child, 0) + 1
        for child, n in hung.items():
            m.set("triton_obs_bls_hung", m.edge(child), float(n))
        executor = getattr(self._loop, "_default_executor", None)
        workers = getattr(executor, "_max_workers", None)
        if workers:
            m.set(
                "triton_obs_bls_thread_pool_capacity",
                m.own("asyncio_executor"),
                float(workers),
            )

    def _publish(self) -> None:
        self._hung_lines = 0
        self.refresh_gauges()
        self.publisher.publish()

    # -- asyncio errors nobody wrapped ---------------------------------------------------
    def _install_handler(self, loop: Any) -> None:
        from observability.bls.callbacks import install_exception_handler

        self._loop = loop
        install_exception_handler(self, loop)

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop the watchdog, publish last values, export what fits in the budget (≤ 5 s)."""
        budget = min(self.settings.shutdown_timeout_s if timeout_s is None else timeout_s, 5.0)
        deadline = time.monotonic() + budget
        self.watchdog.stop(min(1.0, budget / 4))
        if self.processor is not None:
            self.processor.shutdown(max(0.0, deadline - time.monotonic()))
            self.publisher.publish()  # the shutdown drops, if any
        self.publisher.close()

    def on_drop(self, reason: str, n: int) -> None:
        self.metrics.add("triton_obs_bls_dropped_spans", self.metrics.own(reason), float(n))


class ResponseStream:
    """A decoupled child's responses; the call ends (span, registry) when the stream does."""

    def __init__(self, inst: Instrumenter, call: Call, inner: Any, wait_s: float | None = None):
        self._inst = inst
        self._call: Call | None = call
        self._inner = iter(inner)
        self._wait_s = wait_s
        self._count = 0
        self._error: Any = None

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            response = next(self._inner)
        except StopIteration:
            self._finish(None)
            raise
        except BaseException as exc:
            self._finish(exc)
            raise
        self._count += 1
        if self._error is None and _error_message(response) is not None:
            self._error = response
        return response

    def _finish(self, exc: BaseException | None) -> None:
        call, self._call = self._call, None
        if call is not None:
            self._inst.safe_end(call, self._error, exc, wait_s=self._wait_s, responses=self._count)

    def close(self) -> None:
        """Stop reading early: the call ends now."""
        self._finish(None)

    def __del__(self) -> None:
        self._finish(None)


class CallScope:
    """``with bls.call(request, infer_request) as c: c.response = <the user's own call>``."""

    def __init__(
        self, inst: Instrumenter | None, request: Any, infer_request: Any, model: str | None = None
    ) -> None:
        self._inst = inst
        self._model = model
        self._request = request
        self._infer_request = infer_request
        self._call: Call | None = None
        self.response: Any = None

    def __enter__(self) -> CallScope:
        if self._inst is not None:
            self._call = self._inst.begin(
                self._request, self._infer_request, False, None, self._model
            )
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self._call is not None:
            self._inst.safe_end(self._call, self.response, exc)  # type: ignore[union-attr]

    async def __aenter__(self) -> CallScope:
        if self._inst is not None:
            try:
                task = asyncio.current_task()
            except RuntimeError:
                task = None
            self._call = self._inst.begin(
                self._request, self._infer_request, False, task, self._model
            )
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.__exit__(exc_type, exc, tb)


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _error_message(response: Any) -> str | None:
    if response is None:
        return None
    try:
        if not response.has_error():
            return None
        return str(response.error().message())
    except Exception:
        return None


_TASK_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Tasks that are exactly one ``async_exec`` (``ensure_future(bls.async_exec(...))``) -> call,
so a done-callback on such a task is parented on the call it follows."""


def _own_coro(task: Any) -> Any:
    coro = task.get_coro()
    return coro if getattr(coro, "cr_code", None) is Instrumenter.async_exec.__code__ else None
