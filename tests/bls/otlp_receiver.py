"""A tiny real OTLP/HTTP (protobuf) trace receiver on 127.0.0.1 for tests.

Why not the project's collector: tests of the in-model library must not depend on it; this
decodes ``ExportTraceServiceRequest`` bodies with ``opentelemetry-proto`` and keeps flat spans.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OtlpReceiver", "ReceivedSpan"]


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    received_at: float = field(compare=False, default=0.0)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class OtlpReceiver:
    """``with OtlpReceiver() as rx: rx.endpoint`` -> ``http://127.0.0.1:PORT/v1/traces``."""

    def __init__(self, stall_s: float = 0.0) -> None:
        self.encodings: list[str] = []
        """The Content-Encoding of each request received."""
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.stall_s = stall_s
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.encodings.append(self.headers.get("Content-Encoding", ""))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if receiver.stall_s:
                    time.sleep(receiver.stall_s)
                receiver._ingest(body)
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the exporter gave up (stalled tests)
                    self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def _ingest(self, body: bytes) -> None:
        req = ExportTraceServiceRequest.FromString(body)
        now = time.monotonic()
        got = []
        for rs in req.resource_spans:
            resource = _attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        ReceivedSpan(
                            s.name,
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.start_time_unix_nano,
                            s.end_time_unix_nano,
                            _attrs(s.attributes),
                            tuple((e.name, _attrs(e.attributes)) for e in s.events),
                            s.status.code,
                            s.status.message,
                            resource,
                            now,
                        )
                    )
        with self._lock:
            self.requests += 1
            self.spans.extend(got)

    def wait_for(
        self, pred: Callable[[ReceivedSpan], bool], count: int = 1, timeout_s: float = 10.0
    ) -> list[ReceivedSpan]:
        """Spans matching ``pred`` once at least ``count`` arrived or the timeout passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                found = [s for s in self.spans if pred(s)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
