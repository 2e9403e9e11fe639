"""Trace every BLS call and callback from inside a python-backend model.

Three lines in an existing ``model.py``::

    from observability import bls                            # 1
    def initialize(self, args): bls.setup(args)              # 2
    response = await bls.async_exec(request, infer_request)  # 3 (was infer_request.async_exec())

Optional: ``@bls.traced_execute`` on ``execute`` (a span per request, the root of its BLS
calls), ``bls.callback(fn)`` and ``bls.task(coro)`` for callbacks and fire-and-forget tasks,
``bls.shutdown()`` in ``finalize``.

Why module-level functions: one stub process runs one model instance, so one instrumenter per
process is exact, and a model that never calls :func:`setup` (or a stub where it failed) gets a
plain pass-through that costs one global lookup — telemetry must never break the model.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

from observability.bls import calls as _calls
from observability.bls import streams as _streams
from observability.bls.calls import CallScope, Instrumenter
from observability.bls.metrics import CATALOGUE, MetricSpec
from observability.bls.settings import Settings, resolve

__all__ = [
    "CATALOGUE",
    "CallScope",
    "Instrumenter",
    "MetricSpec",
    "Settings",
    "active",
    "async_exec",
    "call",
    "callback",
    "child_request",
    "exec",
    "response_sender",
    "setup",
    "shutdown",
    "stream_exec",
    "task",
    "traced_execute",
]

T = TypeVar("T")
_active: Instrumenter | None = None


def active() -> Instrumenter | None:
    """The instrumenter of this stub, or None when not set up (everything is a pass-through)."""
    return _active


def setup(
    args: Mapping[str, Any] | None = None,
    *,
    pb_utils: Any = None,
    **settings: Any,
) -> Instrumenter | None:
    """Set up tracing for this model instance; call it in ``initialize(self, args)``.

    ``settings`` are :class:`Settings` fields (``deadline_s=5``, ``endpoint="http://..."``);
    each beats its ``TRITON_OBS_<NAME>`` environment variable, which beats the default. A bad
    argument raises; a bad environment value warns and is ignored. Returns None when disabled.
    ``pb_utils`` defaults to ``triton_python_backend_utils`` when importable (metrics).
    """
    global _active
    resolved = resolve(args, **settings)
    shutdown()
    if not resolved.enabled:
        return None
    if pb_utils is None:
        try:
            import triton_python_backend_utils as _pb_utils
        except ImportError:
            pass
        else:
            pb_utils = _pb_utils
    from observability.bls.export import build_exporter

    holder: list[Instrumenter] = []

    def on_drop(reason: str, n: int) -> None:
        if holder:
            holder[0].on_drop(reason, n)

    queue = build_exporter(resolved, on_drop)
    inst = Instrumenter(resolved, queue, pb_utils)
    holder.append(inst)
    _active = inst
    return inst


def shutdown(timeout_s: float | None = None) -> None:
    """Flush and stop (≤ 5 s); call it in ``finalize``. Safe to call when not set up."""
    global _active
    inst, _active = _active, None
    if inst is not None:
        try:
            _streams.stop(inst)
            inst.shutdown(timeout_s)
        except Exception as exc:
            print(f"triton-obs bls: shutdown: {exc!r}", file=sys.stderr, flush=True)


atexit.register(shutdown, 2.0)


def async_exec(
    request: Any, infer_request: Any, decoupled: bool = False, model: str | None = None
) -> Awaitable[Any]:
    """``await bls.async_exec(request, infer_request)``: ``infer_request.async_exec()``, traced.

    ``request`` is the parent request being executed (its id, its trace); with
    ``decoupled=True`` the awaited value is an iterator of responses, and the call ends when
    the iterator is exhausted. ``model`` names the child model for spans and metric labels;
    2.51's ``InferenceRequest`` does not expose it, so it is otherwise read from a child
    request id of the form ``<parent id>.<model>[...]`` (what :func:`child_request` makes).
    """
    inst = _active
    if inst is None:
        return infer_request.async_exec(decoupled=decoupled)
    return inst.async_exec(request, infer_request, decoupled, model)


def exec(
    request: Any, infer_request: Any, decoupled: bool = False, model: str | None = None
) -> Any:
    """``bls.exec(request, infer_request)``: the blocking ``infer_request.exec()``, traced."""
    inst = _active
    if inst is None:
        return infer_request.exec(decoupled=decoupled)
    return inst.exec(request, infer_request, decoupled, model)


def stream_exec(request: Any, infer_request: Any, model: str | None = None) -> Iterator[Any]:
    """A decoupled child's responses (``exec(decoupled=True)``); the span ends with the stream."""
    return exec(request, infer_request, True, model)


def response_sender(request: Any) -> Any:
    """``bls.response_sender(request)`` instead of ``request.get_response_sender()`` in a
    decoupled model: the same sender, and the stream is tracked (responses, the final flag)
    and reported while it sends nothing for ``stream_stall_s`` (see ``bls/streams.py``)."""
    return _streams.response_sender(_active, request)


def call(request: Any, infer_request: Any, model: str | None = None) -> CallScope:
    """Trace the user's own call: ``with bls.call(request, r) as c: c.response = r.exec()``.

    Also ``async with``. Assign the response so its outcome and output shapes are recorded.
    """
    return CallScope(_active, request, infer_request, model)


def callback(fn: Callable[..., T]) -> Callable[..., T]:
    """``future.add_done_callback(bls.callback(fn))``: a span per call, exceptions recorded."""
    inst = _active
    if inst is None:
        return fn
    from observability.bls.callbacks import wrap_callback

    return wrap_callback(inst, fn)


def task(coro: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Future[T]:
    """``bls.task(coro)`` instead of ``asyncio.ensure_future(coro)``: a span, errors recorded
    when they happen (not only when asyncio notices the task was never awaited)."""
    inst = _active
    if inst is None:
        return asyncio.ensure_future(coro)
    from observability.bls.callbacks import wrap_task

    return wrap_task(inst, coro, name)


def traced_execute(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``execute``: a span per request (the parent of its BLS calls), ended on return.

    Sync or ``async def``; a pass-through while not set up (decorators run before
    ``initialize``, so the check is made per call).
    """
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(model: Any, requests: list, *args: Any, **kwargs: Any) -> Any:
            inst = _active
            if inst is None:
                return await fn(model, requests, *args, **kwargs)
            token = inst.begin_requests(requests)
            responses = None
            try:
                responses = await fn(model, requests, *args, **kwargs)
                return responses
            finally:
                inst.end_requests(requests, token, responses)

        return run_async

    @functools.wraps(fn)
    def run(model: Any, requests: list, *args: Any, **kwargs: Any) -> Any:
        inst = _active
        if inst is None:
            return fn(model, requests, *args, **kwargs)
        token = inst.begin_requests(requests)
        responses = None
        try:
            responses = fn(model, requests, *args, **kwargs)
            return responses
        finally:
            inst.end_requests(requests, token, responses)

    return run


def child_request(
    request: Any,
    model_name: str,
    inputs: list,
    requested_output_names: list[str],
    suffix: str | None = None,
    **kwargs: Any,
) -> Any:
    """A ``pb_utils.InferenceRequest`` whose id is ``<parent id>.<suffix or model>`` (empty when
    the parent has none) and whose trace is the parent's, so Triton's log and trace file join
    with our spans. Extra keyword arguments go to ``InferenceRequest``."""
    import triton_python_backend_utils as pb_utils

    parent_id = request.request_id()
    kwargs.setdefault("request_id", f"{parent_id}.{suffix or model_name}" if parent_id else "")
    kwargs.setdefault("trace", request.trace())
    child = pb_utils.InferenceRequest(
        model_name=model_name,
        inputs=inputs,
        requested_output_names=requested_output_names,
        **kwargs,
    )
    if _active is not None:
        _calls.remember_model(child, model_name)
    return child
