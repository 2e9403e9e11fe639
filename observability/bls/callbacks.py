"""Callbacks and tasks around BLS calls: a span each, and their exceptions with tracebacks.

Why: an exception in an asyncio done-callback or a never-awaited task does not fail the request;
asyncio prints it to stderr (into Triton's log, without a prefix) and the awaited result never
arrives. The wrappers record the exception on a span and count it, then re-raise, so asyncio
behaves exactly as before (the same "Exception in callback" / "Task exception was never
retrieved" lines). The loop's exception handler catches what nobody wrapped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from opentelemetry import context as otel_context

from observability.bls.calls import _TASK_CALLS, Instrumenter
from observability.bls.spans import INTERNAL, SpanRecord, SpanRef, context_with, current_parent

__all__ = ["install_exception_handler", "wrap_callback", "wrap_task"]

T = TypeVar("T")
_MARK = "__triton_obs_reported__"


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _record(inst: Instrumenter, span: SpanRecord | None, exc: BaseException, kind: str) -> None:
    inst.metrics.add("triton_obs_bls_callback_errors_total", inst.metrics.own(kind))
    if span is not None:
        span.record_exception(exc)
        span.error = f"{type(exc).__name__}: {exc}"
    with contextlib.suppress(Exception):
        setattr(exc, _MARK, True)


def wrap_callback(inst: Instrumenter, fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` with a span per invocation, parented on the BLS call whose task it is called with
    (``ensure_future(bls.async_exec(...)).add_done_callback(bls.callback(fn))``), else on the
    span current when it was wrapped."""
    wrapped_in = current_parent()
    label = _name(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        parent = wrapped_in
        if args and isinstance(args[0], asyncio.Future):
            call = _TASK_CALLS.get(args[0])
            if call is not None:
                parent = SpanRef(call.trace_id, call.span_id, call.span is not None)
        _, span = inst.start_span(
            f"bls.callback {label}", INTERNAL, parent, {"triton.bls.callback": label}
        )
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            _record(inst, span, exc, "callback")
            raise
        finally:
            inst.finish(span)

    return wrapper


def wrap_task(inst: Instrumenter, coro: Coroutine[Any, Any, T], name: str | None = None) -> Any:
    """``asyncio.ensure_future(coro)`` under a span; BLS calls inside it become its children."""
    label = name or _name(coro)

    async def run() -> T:
        ref, span = inst.start_span(
            f"bls.task {label}", INTERNAL, current_parent(), {"triton.bls.task": label}
        )
        token = otel_context.attach(context_with(ref))
        try:
            return await coro
        except asyncio.CancelledError:
            if span is not None:
                span.attributes["triton.bls.outcome"] = "cancelled"
            raise
        except BaseException as exc:
            _record(inst, span, exc, "task")
            raise
        finally:
            otel_context.detach(token)
            inst.finish(span)

    return asyncio.ensure_future(run())


def install_exception_handler(inst: Instrumenter, loop: asyncio.AbstractEventLoop) -> None:
    """Record exceptions asyncio reports that no wrapper saw, then let asyncio print them."""
    previous = loop.get_exception_handler()

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and not getattr(exc, _MARK, False):
            _, span = inst.start_span(
                "bls.asyncio.error",
                INTERNAL,
                current_parent(),
                {"triton.bls.asyncio.message": str(context.get("message", ""))[:500]},
            )
            _record(inst, span, exc, "asyncio")
            inst.finish(span)
        if previous is not None:
            previous(lp, context)
        else:
            lp.default_exception_handler(context)

    loop.set_exception_handler(handler)
