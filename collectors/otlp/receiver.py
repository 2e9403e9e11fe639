"""An OTLP/HTTP receiver for Triton's opentelemetry trace mode and our BLS instrumentation.

Why so defensive: it listens on a socket that anything on the host can reach, and it must
never take the observed server's telemetry down with it. Bound to 127.0.0.1 unless a host
is given (then a warning is logged). Each request is answered with a status, never an
exception: 404 wrong path, 405 wrong method, 411 no length, 413 over ``max_body_bytes``
(also after gzip), 415 unknown content type or encoding, 400 a body that does not decode.
Accepted spans go to a bounded queue that ``collect()`` drains (when full, the new spans
are dropped and counted, and the answer reports them as ``rejectedSpans``) and to an
optional callback whose exceptions are counted. ``/v1/metrics`` and ``/v1/logs`` are
validated and acknowledged, nothing more.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from collectors.base import Batch, Collector, Health
from collectors.otlp.decode import OtlpDecodeError, otlp_json_from_proto, spans_from_otlp_json
from observability.events import OtlpSpan
from observability.netaddr import is_loopback

__all__ = ["DEFAULT_MAX_BODY_BYTES", "OtlpReceiver", "ReceiverCounters"]

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
_PATHS = {"/v1/traces": "traces", "/v1/metrics": "metrics", "/v1/logs": "logs"}
_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
SHUTDOWN_POLL_S = 0.05
"""How often the serving thread looks for ``stop()``: socketserver's default (0.5 s) made
every stop wait half a second."""


@dataclass
class ReceiverCounters:
    requests: int = 0
    accepted: int = 0
    rejected: int = 0
    """Requests answered with a 4xx status."""
    spans: int = 0
    spans_dropped: int = 0
    callback_errors: int = 0
    metrics_requests: int = 0
    logs_requests: int = 0


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
        if len(out) > limit:
            raise _BadRequest(413, f"body larger than {limit} bytes once decompressed")
        if not inflater.eof:
            raise _BadRequest(400, "gzip body is truncated")
    except zlib.error as err:
        raise _BadRequest(400, f"bad gzip body: {err}") from None
    return out


class OtlpReceiver(Collector):
    """``with OtlpReceiver() as rx: ... rx.drain()``; ``rx.url`` is the base URL."""

    signal = "otlp"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        queue_size: int = 100_000,
        on_spans: Callable[[list[OtlpSpan]], None] | None = None,
        keep_dir: str | Path | None = None,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        read_timeout_s: float = 10.0,
    ) -> None:
        if not is_loopback(host):
            log.warning("OTLP receiver binding %s: reachable from beyond this host", host)
        self.max_body_bytes = max_body_bytes
        self.counters = ReceiverCounters()
        self.keep_dir = Path(keep_dir) if keep_dir is not None else None
        self._queue: queue.Queue[OtlpSpan] = queue.Queue(maxsize=queue_size)
        self._on_spans = on_spans
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        # Bound by start(): a receiver that is built and never started holds no port.
        handler = _handler(self, read_timeout_s)
        self._server = ThreadingHTTPServer((host, port), handler, bind_and_activate=False)
        self._server.daemon_threads = True
        self._bound = False
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def start(self) -> OtlpReceiver:
        """Bind and serve (``OSError`` when the port is taken); idempotent."""
        if not self._bound:
            self._server.server_bind()
            self._server.server_activate()
            self._bound = True
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": SHUTDOWN_POLL_S},
                name="otlp-receiver",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the collector side ------------------------------------------------------------
    def collect(self) -> list[Batch]:
        spans = self.drain()
        return [Batch("", spans)] if spans else []

    def health(self) -> Health:
        c = self.counters
        skipped = {
            reason: n
            for reason, n in (
                ("dropped_span", c.spans_dropped),
                ("rejected_request", c.rejected),
                ("callback_error", c.callback_errors),
            )
            if n
        }
        return Health(self._thread is not None, "", c.spans, skipped)

    def drain(self) -> list[OtlpSpan]:
        """Every span received since the last call, in arrival order."""
        out: list[OtlpSpan] = []
        with contextlib.suppress(queue.Empty):
            while True:
                out.append(self._queue.get_nowait())
        return out

    # -- request handling (called from handler threads) ---------------------------------
    def _count(self, **deltas: int) -> None:
        with self._lock:
            for key, delta in deltas.items():
                setattr(self.counters, key, getattr(self.counters, key) + delta)

    def _accept_traces(self, obj: dict[str, Any], spans: list[OtlpSpan]) -> int:
        """Queue and hand over the spans; returns how many were dropped."""
        dropped = 0
        for span in spans:
            try:
                self._queue.put_nowait(span)
            except queue.Full:
                dropped += 1
        self._count(spans=len(spans) - dropped, spans_dropped=dropped)
        if self._on_spans is not None and spans:
            try:
                self._on_spans(spans)
            except Exception:
                self._count(callback_errors=1)
                log.exception("OTLP span callback failed")
        if self.keep_dir is not None:
            self._keep(obj)
        return dropped

    def _keep(self, obj: dict[str, Any]) -> None:
        assert self.keep_dir is not None
        try:
            self.keep_dir.mkdir(parents=True, exist_ok=True)
            with self._lock:
                ms = self._clock_ms()
                while (self.keep_dir / f"{ms}.json").exists():
                    ms += 1
                target = self.keep_dir / f"{ms}.json"
                tmp = target.with_suffix(".json.tmp")
                tmp.write_text(json.dumps(obj, separators=(",", ":")))
                tmp.replace(target)
        except OSError:
            log.exception("could not keep an OTLP request in %s", self.keep_dir)

    def handle(self, path: str, content_type: str, encoding: str, body: bytes) -> tuple[int, bytes]:
        """Decode one POST body; ``(status, response body)``. Pure of sockets, for tests."""
        kind = _PATHS.get(path.split("?", 1)[0])
        if kind is None:
            raise _BadRequest(404, f"unknown path {path[:80]!r}")
        media = content_type.split(";", 1)[0].strip().lower()
        if media not in (_PROTOBUF, _JSON):
            raise _BadRequest(415, f"unsupported content type {content_type[:80]!r}")
        enc = encoding.strip().lower()
        if enc == "gzip":
            body = _gunzip(body, self.max_body_bytes)
        elif enc not in ("", "identity"):
            raise _BadRequest(415, f"unsupported content encoding {encoding[:40]!r}")
        try:
            if media == _PROTOBUF:
                obj = otlp_json_from_proto(body, kind)
            else:
                obj = json.loads(body)
                if not isinstance(obj, dict):
                    raise OtlpDecodeError("the request must be a JSON object")
            spans = spans_from_otlp_json(obj) if kind == "traces" else []
        except (OtlpDecodeError, ValueError, RecursionError) as err:
            raise _BadRequest(400, f"malformed OTLP {kind} request: {err}"[:300]) from None
        if kind != "traces":
            self._count(**{f"{kind}_requests": 1})
            return 200, (b"" if media == _PROTOBUF else b"{}")
        dropped = self._accept_traces(obj, spans)
        return 200, _trace_response(media, dropped)


def _trace_response(media: str, dropped: int) -> bytes:
    if not dropped:
        return b"" if media == _PROTOBUF else b"{}"
    message = f"receiver queue full: {dropped} spans dropped"
    if media == _JSON:
        partial = {"rejectedSpans": str(dropped), "errorMessage": message}
        return json.dumps({"partialSuccess": partial}).encode()
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = dropped
    response.partial_success.error_message = message
    return response.SerializeToString()


def _handler(receiver: OtlpReceiver, read_timeout_s: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = read_timeout_s
        server_version = "triton-obs-otlp"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("otlp %s " + format, self.client_address[0], *args)

        def _answer(self, status: int, body: bytes, media: str, extra: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(body)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _error(self, status: int, message: str, close: bool = False) -> None:
            receiver._count(requests=1, rejected=1)
            extra = {"Allow": "POST"} if status == 405 else {}
            if close:
                self.close_connection = True
                extra["Connection"] = "close"
            body = json.dumps({"code": status, "message": message}).encode()
            self._answer(status, body, _JSON, extra)

        def do_POST(self) -> None:
            try:
                self._post()
            except (ConnectionError, TimeoutError):
                self.close_connection = True
            except Exception:  # a bug here must cost one request, not the server
                log.exception("OTLP receiver failed on a request")
                with contextlib.suppress(Exception):
                    self._error(500, "internal error", close=True)

        def _post(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in _PATHS:
                self._error(404, f"unknown path {path[:80]!r}", close=True)
                return
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                self._error(411, "chunked bodies are not accepted; send Content-Length", True)
                return
            raw_length = self.headers.get("Content-Length")
            try:
                length = int(raw_length) if raw_length is not None else -1
            except ValueError:
                length = -1
            if length < 0:
                self._error(411, f"Content-Length missing or bad: {raw_length!r:.40}", True)
                return
            if length > receiver.max_body_bytes:
                self._error(413, f"body of {length} bytes over {receiver.max_body_bytes}", True)
                return
            body = self.rfile.read(length)
            if len(body) < length:
                self.close_connection = True
                return
            try:
                status, answer = receiver.handle(
                    self.path,
                    self.headers.get("Content-Type", ""),
                    self.headers.get("Content-Encoding", ""),
                    body,
                )
            except _BadRequest as bad:
                self._error(bad.status, bad.message)
                return
            receiver._count(requests=1, accepted=1)
            media = self.headers.get("Content-Type", _JSON).split(";", 1)[0].strip().lower()
            self._answer(status, answer, media, {})

        def _not_post(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in _PATHS:
                self._error(405, f"{self.command} not allowed; OTLP/HTTP uses POST", True)
            else:
                self._error(404, f"unknown path {path[:80]!r}", True)

        do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_post

    return Handler
