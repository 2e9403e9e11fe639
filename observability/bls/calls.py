"""The instrumenter of one stub: a span, a registry entry and counters around every BLS call.

Why spans are parented the way they are (first match wins): the current opentelemetry span
(set by ``traced_execute`` for a one-request batch, by ``task`` for a wrapped task, or by the
user); the request span ``traced_execute`` opened for this parent request; Triton's own span
from ``request.trace().get_context()`` (opentelemetry trace mode); else a new trace that carries
the request ids as attributes, so it can still be joined with Triton's trace file and log.

Why the hot path is what it is: the sampling decision is made first; a sampled-out call only
gets its registry entry (the watchdog needs it for hang reports) and its counters; a sampled one
also gets a :class:`~observability.bls.spans.SpanRecord` that goes to the export queue when the
call ends. Encoding, formatting and network all happen on the export thread.

Why ``async_exec`` is re-implemented as ``loop.run_in_executor(None, exec)``: that is what the
python backend's ``async_exec`` does (pb_stub.cc), and doing it ourselves is the only way to see
when an executor thread picks the call up, i.e. how long it waited for one.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from opentelemetry import context as otel_context

from observability.bls.export import ExportQueue
from observability.bls.inflight import Call, InFlight, Watchdog
from observability.bls.metrics import BlsMetrics, Publisher
from observability.bls.settings import Settings
from observability.bls.spans import (
    CLIENT,
    SERVER,
    SpanRecord,
    SpanRef,
    context_with,
    current_parent,
    new_root,
    new_span_id,
    ratio_bound,
    submit_marker,
    triton_parent,
)
from observability.bls.tensors import snapshot

__all__ = ["CallScope", "Instrumenter", "ResponseStream", "child_model"]

_HUNG_LINES_PER_TICK = 20
_perf = time.perf_counter
_monotonic = time.monotonic
_get_ident = threading.get_ident
_rand64 = new_span_id
_rand = random.getrandbits
_LOW64 = (1 << 64) - 1


def _text(obj: Any, method: str) -> str:
    try:
        value = getattr(obj, method)()
    except Exception:
        return ""
    return value if isinstance(value, str) else ""


_MADE: dict[int, tuple[Any, str]] = {}
"""``id(request) -> (request, model)`` of the requests ``bls.child_request`` made and no call
has taken yet; bounded (``_MAX_MADE``), the oldest forgotten first."""
_MAX_MADE = 4096


def remember_model(infer_request: Any, model: str) -> None:
    """Note the model of a request we built: 2.51's ``InferenceRequest`` cannot tell it."""
    try:
        if len(_MADE) >= _MAX_MADE:
            _MADE.pop(next(iter(_MADE)), None)
        _MADE[id(infer_request)] = (infer_request, model)
    except RuntimeError:  # another thread changed the dict under the iterator: skip the note
        pass


def child_model(infer_request: Any, parent_id: str, child_id: str) -> str:
    """The child's model name. 2.51's ``InferenceRequest`` does not expose it, so it is what
    ``bls.child_request`` noted when it built the request, else the request-id convention
    ``<parent id>.<model>[.<n>]``; ``unknown`` when neither applies (pass ``model=`` to the
    call then)."""
    made = _MADE.pop(id(infer_request), None)
    if made is not None and made[0] is infer_request:
        return made[1]
    method = getattr(infer_request, "model_name", None)  # no exception raised when missing
    if method is not None:
        name = _text(infer_request, "model_name")
        if name:
            return name
    if parent_id and child_id.startswith(parent_id + "."):
        return child_id[len(parent_id) + 1 :].split(".", 1)[0] or "unknown"
    return "unknown"


class Instrumenter:
    """Everything one model instance records. Created by :func:`observability.bls.setup`."""

    def __init__(
        self,
        settings: Settings,
        queue: ExportQueue | None = None,
        pb_utils: Any = None,
    ) -> None:
        self.settings = settings
        self.queue = queue
        """Where finished spans go; None: no endpoint, so no span is made at all."""
        self._bound = ratio_bound(settings.sample_ratio)
        self.metrics = BlsMetrics(settings.model, settings.instance)
        self.publisher = Publisher(self.metrics, pb_utils if settings.metrics else None)
        self.inflight: InFlight[Call] = InFlight()
        self.watchdog = Watchdog(
            self.inflight, settings.deadline_s, self._report_hung, self._publish
        )
        self._requests: dict[int, tuple[Any, SpanRef, SpanRecord | None]] = {}
        self._loop: Any = None
        self._hung_children: set[str] = set()
        self._hung_lines = 0
        self._base_attrs: dict[str, Any] = {
            "triton.bls.parent.model": settings.model,
            "triton.bls.parent.instance": settings.instance,
        }
        self.metrics.set(
            "triton_obs_bls_thread_pool_capacity",
            self.metrics.own("python_backend"),
            float(settings.thread_pool_size),
        )
        self.watchdog.start()

    # -- spans ---------------------------------------------------------------------------
    def start_span(
        self, name: str, kind: int, parent: SpanRef | None, attributes: dict[str, Any]
    ) -> tuple[SpanRef, SpanRecord | None]:
        """A child of ``parent`` (a new trace when None): its ref (for its own children) and
        its record, None when sampled out or not exporting (``attributes`` are then unused)."""
        if parent is None:
            parent = new_root(self._bound)
        ref = SpanRef(parent.trace_id, _rand64(), parent.sampled, parent.trace_state)
        if not ref.sampled or self.queue is None:
            return ref, None
        record = SpanRecord(
            name,
            kind,
            ref.trace_id,
            ref.span_id,
            parent.span_id,
            {**self._base_attrs, **attributes},
            ref.trace_state,
        )
        return ref, record

    def finish(self, record: SpanRecord | None) -> None:
        """End ``record`` and hand it to the export thread."""
        if record is not None and self.queue is not None:
            self.queue.submit(record.end())

    # -- parents -------------------------------------------------------------------------
    def _parent(self, request: Any) -> SpanRef | None:
        current = current_parent()
        if current is not None:
            return current
        entry = self._requests.get(id(request))
        if entry is not None and entry[0] is request:
            return entry[1]
        return triton_parent(request)

    def begin_requests(self, requests: list) -> Any:
        """Open one span per request of an ``execute`` batch (see ``traced_execute``)."""
        token = None
        for request in requests:
            ref, record = self.start_span(
                f"{self.settings.model} execute",
                SERVER,
                triton_parent(request),
                {
                    "triton.model_name": self.settings.model,  # as Triton's own spans name it
                    "triton.request_id": _text(request, "request_id"),
                    "triton.batch_requests": len(requests),
                },
            )
            self._requests[id(request)] = (request, ref, record)
        if len(requests) == 1:
            token = otel_context.attach(context_with(self._requests[id(requests[0])][1]))
        return token

    def end_requests(self, requests: list, token: Any, responses: Any = None) -> None:
        if token is not None:
            otel_context.detach(token)
        if not isinstance(responses, list) or len(responses) != len(requests):
            responses = [None] * len(requests)
        for request, response in zip(requests, responses, strict=True):
            entry = self._requests.pop(id(request), None)
            if entry is None or entry[2] is None:
                continue
            entry[2].error = _error_message(response)
            self.finish(entry[2])

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
        parent = self._parent(request) if request is not None else current_parent()
        if parent is None:  # a new trace (spelled out: this is the hot path)
            trace_id = _rand(128) or 1
            sampled = (trace_id & _LOW64) < self._bound
            parent_span_id, trace_state = 0, ""
        else:
            trace_id, parent_span_id, sampled, trace_state = parent
        span_id = _rand(64) or 1
        call = Call(child, parent_id, child_id, _monotonic(), trace_id, span_id, None, task)
        if sampled and self.queue is not None:
            attrs = self._base_attrs.copy()
            attrs["triton.bls.child.model"] = child
            attrs["triton.bls.parent.request_id"] = parent_id
            attrs["triton.bls.child.request_id"] = child_id
            attrs["triton.bls.decoupled"] = decoupled
            attrs["triton.bls.inputs"] = snapshot(_safe(infer_request.inputs))
            call.span = SpanRecord(
                "bls " + child, CLIENT, trace_id, span_id, parent_span_id, attrs, trace_state
            )
        if task is None:
            call.thread_id = _get_ident()
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
        error: str | None
        if exc is not None:
            outcome = "cancelled" if isinstance(exc, asyncio.CancelledError) else "exception"
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = _error_message(response)
            outcome = "ok" if error is None else "error"
        m = self.metrics
        m.add_call(call.child, outcome)
        if wait_s is not None:
            m.add("triton_obs_bls_executor_wait_seconds_total", m.own(), wait_s)
            m.add("triton_obs_bls_executor_waits_total", m.own())
        span = call.span
        if span is None:
            return
        attrs = span.attributes
        attrs["triton.bls.outcome"] = outcome
        if wait_s is not None:
            attrs["triton.bls.executor_wait_s"] = wait_s
        if responses is not None:
            attrs["triton.bls.responses"] = responses
        elif response is not None and error is None:
            attrs["triton.bls.outputs"] = snapshot(_safe(response.output_tensors))
        if call.hung_at is not None:
            attrs["triton.bls.hung"] = True
            attrs["triton.bls.hung_after_s"] = call.hung_at - call.started
        if exc is not None and not isinstance(exc, asyncio.CancelledError):
            span.record_exception(exc)
        span.error = error
        self.finish(span)

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
        try:
            self.end(call, response)
        except Exception as exc:
            self._end_failed(call, exc)
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
            self._end_failed(call, exc)

    def _end_failed(self, call: Call, exc: Exception) -> None:
        self.inflight.remove(call)
        print(f"triton-obs bls: recording a call failed: {exc!r}", file=sys.stderr)

    # -- hung calls and metrics (the watchdog's thread) -----------------------------------
    def _report_hung(self, call: Call, age_s: float) -> None:
        m = self.metrics
        m.add("triton_obs_bls_hung_calls_total", m.edge(call.child))
        self._hung_children.add(call.child)
        if self.queue is not None:
            # Always exported, even when the call itself was sampled out: its ids are real.
            submit_marker(
                self.queue,
                "bls.call.hung",
                (call.trace_id, call.span_id),
                {
                    **self._base_attrs,
                    "triton.bls.child.model": call.child,
                    "triton.bls.parent.request_id": call.parent_request_id,
                    "triton.bls.child.request_id": call.child_request_id,
                    "triton.bls.age_s": age_s,
                    "triton.bls.deadline_s": self.settings.deadline_s,
                    "triton.bls.stack": call.stack(),
                    "triton.bls.call.trace_id": f"{call.trace_id:032x}",
                    "triton.bls.call.span_id": f"{call.span_id:016x}",
                },
                f"in flight for {age_s:.1f} s",
                call.span,
                ("bls.call.hung", {"triton.bls.age_s": age_s}),
            )
        if self._hung_lines < _HUNG_LINES_PER_TICK:
            self._hung_lines += 1
            print(
                f"triton-obs bls: HUNG BLS call {self.settings.model} -> {call.child} "
                f"instance={self.settings.instance} parent_request_id={call.parent_request_id!r} "
                f"child_request_id={call.child_request_id!r} age={age_s:.2f}s "
                f"deadline={self.settings.deadline_s:g}s trace_id={call.trace_id:032x}",
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
        if self.queue is not None:
            self.queue.shutdown(max(0.0, deadline - time.monotonic()))
            self.publisher.publish()  # the shutdown drops, if any
        self.publisher.close()

    def on_drop(self, reason: str, n: int) -> None:
        self.metrics.add("triton_obs_bls_dropped_spans_total", self.metrics.own(reason), float(n))


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
