"""Span records to OTLP/HTTP protobuf, on the export thread only.

Why our own small client instead of opentelemetry-exporter-otlp-proto-http: its encoder takes
SDK spans (which we no longer make) and its retries with backoff would hold a batch for up to
its timeout again and again while a collector is down; here one batch is one POST with a socket
timeout, and a failure is reported (the caller counts the drops) instead of retried.

Why the protobuf wire format is written by hand: building ``opentelemetry-proto`` messages cost
~35 µs per span here (the python API copies nested messages and dispatches per field), and that
CPU is taken from the same stub, under the same GIL, as the model's. The messages involved are
small and frozen (``ExportTraceServiceRequest`` v1), attributes that repeat from span to span
(model names, outcome, tensor descriptions) are encoded once, and the tests decode every byte
with ``opentelemetry-proto``'s own parser.
"""

from __future__ import annotations

import contextlib
import gzip as gzip_module
import http.client
import os
import struct
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from observability.bls.spans import SpanRecord
from observability.bls.tensors import TensorSnapshot, describe_snapshot

__all__ = ["OtlpHttpExporter", "encode", "env_headers"]

SCOPE = "observability.bls"
_ERROR = 2  # Status.StatusCode.STATUS_CODE_ERROR
_SAMPLED = 0x01
_RETRY_ON_REUSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


# Field keys ((number << 3) | wire type) of the OTLP messages written below; the test suite
# checks every byte against opentelemetry-proto's own parser.
_STRING, _BOOL, _INT, _DOUBLE, _ARRAY = b"\x0a", b"\x10", b"\x18", b"\x21", b"\x2a"
_MASK64 = (1 << 64) - 1
_pack_double = struct.Struct("<d").pack
_pack_fixed64 = struct.Struct("<Q").pack
_pack_fixed32 = struct.Struct("<I").pack
_SMALL = [bytes((n,)) for n in range(128)]
_CACHED_KEYS = frozenset(
    {
        "triton.bls.parent.model",
        "triton.bls.parent.instance",
        "triton.bls.child.model",
        "triton.bls.decoupled",
        "triton.bls.inputs",
        "triton.bls.outputs",
        "triton.bls.outcome",
        "triton.bls.hung",
        "triton.bls.callback",
        "triton.bls.task",
        "triton.batch_requests",
    }
)
"""Attributes with few distinct values: their encoded bytes are kept (request ids are not)."""
_CACHE_MAX = 4096


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(key: bytes, payload: bytes) -> bytes:
    """A length-delimited field: key, length, payload."""
    return key + _varint(len(payload)) + payload


def _any(value: Any) -> bytes:
    """The body of an ``AnyValue``."""
    if isinstance(value, bool):  # before int: bool is an int
        return _BOOL + (b"\x01" if value else b"\x00")
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return _INT + _varint(value & _MASK64)
    if isinstance(value, float):
        return _DOUBLE + _pack_double(value)
    if isinstance(value, str):
        return _field(_STRING, value.encode("utf-8", "replace"))
    if isinstance(value, TensorSnapshot):
        value = describe_snapshot(value)
    if isinstance(value, (list, tuple)):
        return _field(_ARRAY, b"".join(_field(b"\x0a", _any(v)) for v in value))
    return _field(_STRING, str(value).encode("utf-8", "replace"))


def _key_value(key: str, value: Any) -> bytes:
    """A ``KeyValue`` as a repeated field entry (field 1 of Resource, 9 of Span, 3 of Event
    all use the key ``0x0a``/``0x4a``/``0x1a``; the caller adds it)."""
    return _field(b"\x0a", key.encode()) + _field(b"\x12", _any(value))


class _Encoder:
    """Encodes batches; keeps the bytes of frequent attributes (one per export thread)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, Any], bytes] = {}

    def attributes(self, key: bytes, attrs: Mapping[str, Any]) -> list[bytes]:
        out = []
        cache = self._cache
        for k, v in attrs.items():
            if v is None:
                continue
            if k in _CACHED_KEYS:
                try:
                    kv = cache.get((k, v))
                except TypeError:  # unhashable: not cached
                    kv = _field(key, _key_value(k, v))
                else:
                    if kv is None:
                        if len(cache) >= _CACHE_MAX:
                            cache.clear()
                        kv = cache[(k, v)] = _field(key, _key_value(k, v))
            else:
                kv = _field(key, _key_value(k, v))
            out.append(kv)
        return out

    def span(self, r: SpanRecord) -> bytes:
        parts = [
            b"\x0a\x10" + r.trace_id.to_bytes(16, "big"),
            b"\x12\x08" + r.span_id.to_bytes(8, "big"),
        ]
        if r.trace_state:
            parts.append(_field(b"\x1a", r.trace_state.encode()))
        if r.parent_span_id:
            parts.append(b"\x22\x08" + r.parent_span_id.to_bytes(8, "big"))
        parts.append(_field(b"\x2a", r.name.encode("utf-8", "replace")))
        parts.append(b"\x30" + _varint(r.kind))
        parts.append(b"\x39" + _pack_fixed64(r.start_ns))
        parts.append(b"\x41" + _pack_fixed64(r.end_ns or r.start_ns))
        parts.extend(self.attributes(b"\x4a", r.attributes))
        for name, t, attrs in list(r.events):
            event = b"".join(
                [
                    b"\x09" + _pack_fixed64(t),
                    _field(b"\x12", name.encode("utf-8", "replace")),
                    *self.attributes(b"\x1a", attrs),
                ]
            )
            parts.append(_field(b"\x5a", event))
        if r.error is not None:
            status = _field(b"\x12", r.error.encode("utf-8", "replace")) + b"\x18" + _varint(_ERROR)
            parts.append(_field(b"\x7a", status))
        parts.append(b"\x85\x01" + _pack_fixed32(_SAMPLED))
        return b"".join(parts)

    def encode(self, records: Iterable[SpanRecord], resource: Mapping[str, Any]) -> bytes:
        """An ``ExportTraceServiceRequest`` body: one resource, one scope, the records' spans."""
        scope = _field(b"\x0a", _field(b"\x0a", SCOPE.encode()))
        spans = b"".join(_field(b"\x12", self.span(r)) for r in records)
        res = _field(b"\x0a", b"".join(self.attributes(b"\x0a", resource)))
        return _field(b"\x0a", res + _field(b"\x12", scope + spans))


def encode(records: Iterable[SpanRecord], resource: Mapping[str, Any]) -> bytes:
    """An ``ExportTraceServiceRequest`` body (a fresh encoder: no cache kept)."""
    return _Encoder().encode(records, resource)


def env_headers(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Extra request headers (a collector's API key) from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``
    or ``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value,key2=value2``, values URL-encoded, as the
    OpenTelemetry exporters read them; malformed entries are skipped."""
    env = os.environ if env is None else env
    raw = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS")
    headers: dict[str, str] = {}
    for item in (raw or "").split(","):
        key, sep, value = item.partition("=")
        key = urllib.parse.unquote(key).strip()
        if sep and key:
            headers[key] = urllib.parse.unquote(value).strip()
    return headers


class OtlpHttpExporter:
    """POSTs batches to an OTLP/HTTP traces URL over one kept-alive connection.

    Used from one thread (the export worker); :meth:`shutdown` may come from another and only
    closes the socket, which ends a stalled request at once.
    """

    def __init__(
        self,
        endpoint: str,
        timeout_s: float,
        resource: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        gzip: bool = False,
    ) -> None:
        url = urllib.parse.urlsplit(endpoint)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {endpoint!r}")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port
        self._path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        self._timeout_s = timeout_s
        self._resource = dict(resource)
        self._headers = {**(headers or {}), "Content-Type": "application/x-protobuf"}
        self._gzip = gzip
        if gzip:
            self._headers["Content-Encoding"] = "gzip"
        self._conn: http.client.HTTPConnection | None = None
        self._encoder = _Encoder()
        self._pid = os.getpid()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        if self._pid != os.getpid():  # a forked child: never share the parent's socket
            self._conn, self._pid = None, os.getpid()
        if self._conn is not None:
            return self._conn, True
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        self._conn = cls(self._host, self._port, timeout=self._timeout_s)
        return self._conn, False

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def export(self, records: Sequence[SpanRecord]) -> bool:
        """True when the collector accepted the batch (2xx); never raises for network errors."""
        body = self._encoder.encode(records, self._resource)
        if self._gzip:
            body = gzip_module.compress(body, compresslevel=1)
        for _ in range(2):
            conn, reused = self._connection()
            try:
                conn.request("POST", self._path, body, self._headers)
                response = conn.getresponse()
                response.read()
                if response.will_close:
                    self._close()
                return 200 <= response.status < 300
            except _RETRY_ON_REUSED:
                self._close()
                if not reused:  # a fresh connection that fails is the collector's answer
                    return False
            except (OSError, http.client.HTTPException, AttributeError):
                self._close()  # AttributeError: shutdown closed the socket under us
                return False
        return False

    def shutdown(self) -> None:
        self._close()
