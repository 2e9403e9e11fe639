"""Decoupled response streams: each one tracked, and reported while it is stalled.

Why: Triton releases a decoupled request as soon as ``execute`` returns (``EXECUTING to
RELEASED`` comes before the first response), so a token stream that stops before its final
response — the LLM streaming hang — leaves the request state machine silent, and Triton's
trace entry for it is only written when the final response is. Only the model knows that a
stream is still open and how long it has been quiet.

``sender = bls.response_sender(request)`` replaces ``request.get_response_sender()``. The
wrapper forwards every call unchanged (exceptions of the real sender reach the model as
before) and records, after each ``send``: responses sent, the time of the last one and the
final flag. A watchdog thread (the library's :class:`~observability.bls.inflight.Watchdog`,
over the registry of open streams) reports a stream that sent nothing for ``stream_stall_s``
(default: ``deadline_s``) once per stall, while it is stalled:

* a stderr line in Triton's log: ``triton-obs bls: STALLED stream model=<m> instance=<i>
  request_id='<id>' responses=<n> idle=<s>s stall=<d>s age=<s>s trace_id=<t>``;
* a zero-length marker span ``bls.stream.stalled`` exported at once, and a ``stream.stalled``
  event on the stream's own span ``stream <model>`` (exported when the stream ends);
* ``triton_obs_bls_streams_stalled{model,instance}`` (now) and
  ``triton_obs_bls_streams_stalled_total`` (ever); ``triton_obs_bls_streams_open`` and
  ``triton_obs_bls_stream_responses_total`` beside them.

A stream that sends again after a stall is "resumed" (a ``stream.resumed`` event) and can be
reported again if it stalls again. Telemetry never breaks or blocks the model: every
recording step is guarded, and without :func:`observability.bls.setup` the real sender is
returned untouched.
"""

from __future__ import annotations

import sys
import time
import weakref
from dataclasses import dataclass
from typing import Any

from observability.bls.inflight import InFlight, Watchdog
from observability.bls.spans import SERVER, SpanRecord, submit_marker

__all__ = ["FINAL_FLAG", "STALLED_MARKER", "Stream", "StreamSender", "Streams"]

FINAL_FLAG = 1
"""``TRITONSERVER_RESPONSE_COMPLETE_FINAL`` (``pb_utils`` has it; the value is Triton's ABI)."""
STALLED_MARKER = "bls.stream.stalled"
MAX_TRACKED = 4096
"""Open streams tracked per instance; past it new streams are passed through untracked (a
model that never sends the final flag would otherwise grow the registry without end)."""
_STALLED_LINES_PER_TICK = 20
_monotonic = time.monotonic


@dataclass(eq=False, slots=True)
class Stream:
    """One decoupled request's response stream, as plain values.

    ``started`` is the time of the last activity (the open or the last send): the watchdog's
    clock, so "older than the deadline" means "quiet for longer than the stall deadline"."""

    request_id: str
    opened: float
    started: float
    responses: int = 0
    final: bool = False
    hung_at: float | None = None
    """When the watchdog reported the current stall; None while the stream flows."""
    stalls: int = 0
    max_gap_s: float = 0.0
    trace_id: int = 0
    span_id: int = 0
    span: SpanRecord | None = None
    key: int = 0


class StreamSender:
    """``request.get_response_sender()``'s object, forwarding everything, recording sends."""

    __slots__ = ("__weakref__", "_inner", "_stream", "_streams")

    def __init__(self, inner: Any, streams: Streams, stream: Stream) -> None:
        self._inner = inner
        self._streams = streams
        self._stream = stream

    def send(self, response: Any = None, flags: int = 0) -> Any:
        try:
            if response is None:
                return self._inner.send(flags=flags)
            return self._inner.send(response, flags=flags)
        finally:
            self._streams.sent(self._stream, response, flags)

    def is_cancelled(self) -> bool:
        return bool(self._inner.is_cancelled())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Streams:
    """The open streams of one instrumented instance and the watchdog that reports stalls."""

    def __init__(self, inst: Any, stall_s: float) -> None:
        self._inst_ref = weakref.ref(inst)
        self.stall_s = stall_s
        self.open: InFlight[Stream] = InFlight()
        self.watchdog = Watchdog(self.open, stall_s, self._report_stalled, self.refresh_gauges)
        self._stalled_lines = 0
        self._started = False

    # -- the model's side (its threads) --------------------------------------------------
    def wrap(self, request: Any, inner: Any) -> Any:
        """The tracked sender, or ``inner`` itself when tracking is not possible."""
        inst = self._inst_ref()
        if inst is None or len(self.open) >= MAX_TRACKED:
            return inner
        now = _monotonic()
        stream = Stream(_text(request, "request_id"), now, now)
        ref, record = inst.start_span(
            f"stream {inst.settings.model}",
            SERVER,
            inst._parent(request),
            {"triton.request_id": stream.request_id, "triton.stream.stall_s": self.stall_s},
        )
        stream.trace_id, stream.span_id, stream.span = ref.trace_id, ref.span_id, record
        self.open.add(stream)
        if not self._started:
            self._started = True
            self.watchdog.start()
        return StreamSender(inner, self, stream)

    def sent(self, stream: Stream, response: Any, flags: int) -> None:
        """Record one ``send`` (called after it, whether it raised or not); never raises."""
        try:
            now = _monotonic()
            gap = now - stream.started
            stream.started = now
            if gap > stream.max_gap_s:
                stream.max_gap_s = gap
            inst = self._inst_ref()
            if response is not None:
                stream.responses += 1
                if inst is not None:
                    m = inst.metrics
                    m.add("triton_obs_bls_stream_responses_total", m.own())
            if stream.hung_at is not None:
                stream.hung_at = None
                if stream.span is not None:
                    stream.span.add_event("stream.resumed", {"triton.stream.gap_s": gap})
            if flags & FINAL_FLAG and not stream.final:
                stream.final = True
                self.open.remove(stream)
                self._finish(inst, stream)
        except Exception as exc:
            print(f"triton-obs bls: recording a stream send failed: {exc!r}", file=sys.stderr)

    def _finish(self, inst: Any, stream: Stream) -> None:
        span = stream.span
        if span is None or inst is None:
            return
        attrs = span.attributes
        attrs["triton.stream.responses"] = stream.responses
        attrs["triton.stream.final"] = stream.final
        attrs["triton.stream.max_gap_s"] = stream.max_gap_s
        attrs["triton.stream.stalls"] = stream.stalls
        inst.finish(span)

    # -- the watchdog's side -------------------------------------------------------------
    def _report_stalled(self, stream: Stream, idle_s: float) -> None:
        inst = self._inst_ref()
        if inst is None:
            return
        stream.stalls += 1
        m = inst.metrics
        m.add("triton_obs_bls_streams_stalled_total", m.own())
        age_s = _monotonic() - stream.opened
        model, instance = inst.settings.model, inst.settings.instance
        if inst.queue is not None:
            submit_marker(
                inst.queue,
                STALLED_MARKER,
                (stream.trace_id, stream.span_id),
                {
                    "triton.bls.parent.model": model,
                    "triton.bls.parent.instance": instance,
                    "triton.request_id": stream.request_id,
                    "triton.stream.responses": stream.responses,
                    "triton.stream.idle_s": idle_s,
                    "triton.stream.age_s": age_s,
                    "triton.stream.stall_s": self.stall_s,
                    "triton.stream.trace_id": f"{stream.trace_id:032x}",
                    "triton.stream.span_id": f"{stream.span_id:016x}",
                },
                f"no response for {idle_s:.1f} s",
                stream.span,
                ("stream.stalled", {"triton.stream.idle_s": idle_s}),
            )
        if self._stalled_lines < _STALLED_LINES_PER_TICK:
            self._stalled_lines += 1
            print(
                f"triton-obs bls: STALLED stream model={model} instance={instance} "
                f"request_id={stream.request_id!r} responses={stream.responses} "
                f"idle={idle_s:.2f}s stall={self.stall_s:g}s age={age_s:.2f}s "
                f"trace_id={stream.trace_id:032x}",
                file=sys.stderr,
                flush=True,
            )

    def refresh_gauges(self) -> None:
        """Open and stalled streams now (published by the instrumenter's own watchdog)."""
        inst = self._inst_ref()
        if inst is None:
            return
        self._stalled_lines = 0
        streams = self.open.calls()
        m = inst.metrics
        m.set("triton_obs_bls_streams_open", m.own(), float(len(streams)))
        stalled = sum(1 for s in streams if s.hung_at is not None)
        m.set("triton_obs_bls_streams_stalled", m.own(), float(stalled))

    def stop(self, timeout_s: float = 1.0) -> None:
        self.watchdog.stop(timeout_s)


_TRACKERS: weakref.WeakKeyDictionary[Any, Streams] = weakref.WeakKeyDictionary()


def tracker(inst: Any) -> Streams:
    """The stream registry of ``inst``, made on first use (one per instrumented instance)."""
    streams = _TRACKERS.get(inst)
    if streams is None:
        settings = inst.settings
        stall_s = getattr(settings, "stream_stall_s", None) or settings.deadline_s
        streams = _TRACKERS[inst] = Streams(inst, stall_s)
        streams.refresh_gauges()
    return streams


def response_sender(inst: Any, request: Any) -> Any:
    """``request.get_response_sender()``, tracked by ``inst`` (never raises more than it)."""
    inner = request.get_response_sender()
    if inst is None:
        return inner
    try:
        return tracker(inst).wrap(request, inner)
    except Exception as exc:  # telemetry must never break the model
        print(f"triton-obs bls: tracking a stream failed: {exc!r}", file=sys.stderr)
        return inner


def stop(inst: Any, timeout_s: float = 1.0) -> None:
    """Stop ``inst``'s stream watchdog, if it has one (``bls.shutdown``)."""
    streams = _TRACKERS.pop(inst, None)
    if streams is not None:
        streams.stop(timeout_s)


def _text(obj: Any, method: str) -> str:
    try:
        value = getattr(obj, method)()
    except Exception:
        return ""
    return value if isinstance(value, str) else ""
