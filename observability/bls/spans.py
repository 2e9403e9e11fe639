"""Span records made on the model's thread: ids, the sampling decision, W3C parents — no SDK.

Why not the opentelemetry SDK's ``start_span``: on a busy stub it cost ~100 µs per span (sampler
objects, attribute validation, locks, context objects), more than some children's inference.
Here a span is a slots record with integer ids and ``time.time_ns()`` stamps, and a sampled-out
call makes no record at all; conversion to OTLP protobuf happens on the export thread
(:mod:`observability.bls.otlp`), never on the model's.

What stays OpenTelemetry: the ids and the sampling rule. A parent's sampled flag is followed
(``ParentBased``), a root is sampled when the low 64 bits of its trace id fall under
``ratio * 2**64`` (``TraceIdRatioBased``), so a trace is kept or dropped the same way by every
OpenTelemetry service that shares the ratio. Parents come from Triton's W3C ``traceparent``
(``request.trace().get_context()``) or the opentelemetry API's current span, and our request
and task spans are put in the opentelemetry context, so user spans nest under them too.
"""

from __future__ import annotations

import json
import random
import re
import time
import traceback
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

__all__ = [
    "CLIENT",
    "INTERNAL",
    "SERVER",
    "SpanRecord",
    "SpanRef",
    "context_with",
    "current_parent",
    "new_root",
    "new_span_id",
    "parse_traceparent",
    "ratio_bound",
    "triton_parent",
]

INTERNAL, SERVER, CLIENT = 1, 2, 3
"""OTLP ``Span.SpanKind`` numbers."""

_LOW64 = (1 << 64) - 1
_rand = random.getrandbits  # the module's generator is reseeded in a forked child
_time_ns = time.time_ns
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


class SpanRef(NamedTuple):
    """What a child needs of its parent: ids, whether the trace is sampled, its tracestate."""

    trace_id: int
    span_id: int
    sampled: bool
    trace_state: str = ""


class SpanRecord:
    """One finished-or-running span, as plain values. Only its owner thread mutates it, except
    ``events`` (the watchdog appends a hung event; ``list.append`` is atomic)."""

    __slots__ = (
        "attributes",
        "end_ns",
        "error",
        "events",
        "kind",
        "name",
        "parent_span_id",
        "span_id",
        "start_ns",
        "trace_id",
        "trace_state",
    )

    def __init__(
        self,
        name: str,
        kind: int,
        trace_id: int,
        span_id: int,
        parent_span_id: int,
        attributes: dict[str, Any],
        trace_state: str = "",
    ) -> None:
        self.name = name
        self.kind = kind
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.attributes = attributes
        self.trace_state = trace_state
        self.start_ns = _time_ns()
        self.end_ns = 0
        self.events: list[tuple[str, int, dict[str, Any]]] = []
        self.error: str | None = None
        """The status message when the span's status is ERROR; None: unset."""

    def ref(self) -> SpanRef:
        return SpanRef(self.trace_id, self.span_id, True, self.trace_state)

    def add_event(self, name: str, attributes: dict[str, Any]) -> None:
        self.events.append((name, _time_ns(), attributes))

    def record_exception(self, exc: BaseException) -> None:
        """An ``exception`` event as the opentelemetry SDK writes it (formatted now: keeping the
        exception would keep its frames, and the tensors in them, alive until export)."""
        self.add_event(
            "exception",
            {
                "exception.type": type(exc).__name__,
                "exception.message": str(exc),
                "exception.stacktrace": "".join(
                    traceback.format_exception(type(exc), exc, exc.__traceback__)
                ),
                "exception.escaped": "False",
            },
        )

    def end(self) -> SpanRecord:
        self.end_ns = _time_ns()
        return self


def new_span_id() -> int:
    return _rand(64) or 1


def submit_marker(
    queue: Any,
    name: str,
    parent: tuple[int, int],
    attributes: dict[str, Any],
    error: str,
    on: SpanRecord | None,
    event: tuple[str, dict[str, Any]],
) -> None:
    """Export a zero-length span that says a call or stream went wrong while it is still
    open (its own span is exported only when it ends, which a hung call never does), under
    ``parent`` (trace id, span id); the open span ``on``, if sampled, gets ``event`` too."""
    marker = SpanRecord(name, INTERNAL, parent[0], new_span_id(), parent[1], attributes)
    marker.error = error
    marker.end_ns = marker.start_ns
    if on is not None:
        on.add_event(*event)
    queue.submit(marker)
    queue.export_soon()


def ratio_bound(ratio: float) -> int:
    """Root spans whose trace id's low 64 bits are below this are sampled (OpenTelemetry's
    ``TraceIdRatioBased``): 0 samples nothing, ``2**64`` everything."""
    return round(ratio * (_LOW64 + 1))


def new_root(bound: int) -> SpanRef:
    trace_id = _rand(128) or 1
    return SpanRef(trace_id, 0, (trace_id & _LOW64) < bound)


def parse_traceparent(value: str, trace_state: str = "") -> SpanRef | None:
    """A W3C ``traceparent`` header as a :class:`SpanRef`; None when it is not a valid one."""
    found = _TRACEPARENT.fullmatch(value.strip())
    if found is None:
        return None
    version, trace, span, flags, rest = found.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    trace_id, span_id = int(trace, 16), int(span, 16)
    if not trace_id or not span_id:
        return None
    return SpanRef(trace_id, span_id, bool(int(flags, 16) & 1), trace_state)


def triton_parent(request: Any) -> SpanRef | None:
    """Triton's span for ``request`` (opentelemetry trace mode); None in triton trace mode."""
    try:
        trace = request.trace()
        raw = trace.get_context() if trace is not None else None
    except Exception:
        return None
    if not raw or not isinstance(raw, str):
        return None
    if raw.lstrip().startswith("{"):
        try:
            carrier = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(carrier, dict) or not isinstance(carrier.get("traceparent"), str):
            return None
        state = carrier.get("tracestate")
        return parse_traceparent(carrier["traceparent"], state if isinstance(state, str) else "")
    return parse_traceparent(raw)


def current_parent() -> SpanRef | None:
    """The opentelemetry API's current span (ours from ``traced_execute``/``task``, or the
    user's own), None when there is none."""
    if not otel_context.get_current():  # the common case, and a cheap one
        return None
    ctx = otel_trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    state = ctx.trace_state.to_header() if ctx.trace_state else ""
    return SpanRef(ctx.trace_id, ctx.span_id, ctx.trace_flags.sampled, state)


def context_with(ref: SpanRef) -> otel_context.Context:
    """The current opentelemetry context with ``ref`` as its span (for ``attach``)."""
    flags = TraceFlags(TraceFlags.SAMPLED if ref.sampled else TraceFlags.DEFAULT)
    state = TraceState.from_header([ref.trace_state]) if ref.trace_state else None
    span = NonRecordingSpan(SpanContext(ref.trace_id, ref.span_id, False, flags, state))
    return otel_trace.set_span_in_context(span)
