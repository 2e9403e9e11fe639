"""Decode OTLP trace export requests (JSON or protobuf) into ``OtlpSpan`` records.

Why one path: a protobuf body is first turned into OTLP JSON (hex ids, camelCase keys,
int64 as strings, enums as integers — the OTLP/JSON encoding), then the JSON decoder
makes the spans. So both encodings give identical spans, and the JSON of any accepted
request can be kept in a bundle (``otlp/<unix_ms>.json``) whatever came over the wire.
Triton 2.51's own exporter (opentelemetry-cpp 1.13) posts ``application/json``.

Attribute values become strings (``OtlpSpan`` keeps strings): ints as decimal, bools as
``true``/``false``, doubles by ``repr``, arrays and maps as compact JSON, bytes as hex.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, cast

from collectors.compiled import extension
from observability.events import OtlpSpan, OtlpSpanEvent

__all__ = [
    "OtlpDecodeError",
    "otlp_json_from_proto",
    "spans_from_otlp_json",
    "spans_from_otlp_proto",
]

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_STATUS_NAMES = {"STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR"}
_HEX = frozenset("0123456789abcdefABCDEF")
_MAX_NANOS = 2**63 - 1
"""Year 2262: a time past it is no real span's, and no store's INTEGER holds it."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_COMPACT = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode
"""``json.dumps`` with these arguments, made once: dumps made an encoder a call."""


def _text(value: str) -> str:
    """JSON's ``\\ud800`` escapes decode to lone surrogates, which the store cannot encode
    as UTF-8: each becomes U+FFFD, as an undecodable byte would."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


class OtlpDecodeError(ValueError):
    """A body that is not a valid OTLP trace export; the message names the bad part."""


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise OtlpDecodeError(f"{where}: expected an object, got {json.dumps(value)[:60]}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpDecodeError(f"{where}: expected a list, got {json.dumps(value)[:60]}")
    return value


def _hex_id(value: Any, length: int, where: str, at: str, allow_empty: bool) -> str:
    """``where`` and ``at`` are joined only for an error: a span's every field named its
    place up front, an f-string each, a sixth of decoding a span."""
    if value in (None, "") and allow_empty:
        return ""
    if not isinstance(value, str) or len(value) != length or not _HEX.issuperset(value):
        raise OtlpDecodeError(f"{where}{at}: expected {length} hex digits, got {value!r:.60}")
    if not value.strip("0"):
        if allow_empty:
            return ""
        raise OtlpDecodeError(f"{where}{at}: an all-zero id is invalid")
    return value.lower()


def _nanos(value: Any, where: str, at: str = "") -> int:
    if isinstance(value, bool):
        raise OtlpDecodeError(f"{where}{at}: expected nanoseconds, got {value!r}")
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value) if len(value) <= 20 else _MAX_NANOS + 1  # int() stops at 4300
    if isinstance(value, int) and 0 <= value <= _MAX_NANOS:
        return value
    if isinstance(value, int) and value > _MAX_NANOS:
        raise OtlpDecodeError(f"{where}{at}: nanoseconds past 2**63-1 (the year 2262)")
    if value is None:
        return 0
    raise OtlpDecodeError(f"{where}{at}: expected nanoseconds, got {value!r:.60}")


def _plain(value: Mapping[str, Any], where: str) -> Any:
    """An AnyValue as a plain JSON value (used inside arrays and maps)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        return _int(value["intValue"], where)
    if "doubleValue" in value:
        return value["doubleValue"]
    if "bytesValue" in value:
        return _bytes_hex(value["bytesValue"], where)
    if "arrayValue" in value:
        items = _list(_obj(value["arrayValue"], where).get("values"), where)
        return [_plain(_obj(v, where), where) for v in items]
    if "kvlistValue" in value:
        items = _list(_obj(value["kvlistValue"], where).get("values"), where)
        return {k: _plain(_obj(v, where), where) for k, v in _attributes(items, where)}
    return None


def _int(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise OtlpDecodeError(f"{where}: intValue {value!r:.60} is not an integer")


def _bytes_hex(value: Any, where: str) -> str:
    try:
        return base64.b64decode(value, validate=True).hex()
    except (ValueError, TypeError):
        raise OtlpDecodeError(f"{where}: bytesValue {value!r:.60} is not base64") from None


def _string(value: Any, where: str) -> str:
    v = _obj(value, where)
    if "stringValue" in v:
        s = v["stringValue"]
        if not isinstance(s, str):
            raise OtlpDecodeError(f"{where}: stringValue {s!r:.60} is not a string")
        return _text(s)
    plain = _plain(v, where)
    if plain is None:
        return ""
    if isinstance(plain, bool):
        return "true" if plain else "false"
    if isinstance(plain, float):
        return repr(plain)
    if isinstance(plain, (list, dict)):
        return _COMPACT(plain)
    return _text(str(plain))


def _attributes(items: list[Any], where: str) -> list[tuple[str, Any]]:
    out = []
    for i, item in enumerate(items):
        kv = _obj(item, f"{where}[{i}]")
        key = kv.get("key")
        if not isinstance(key, str):
            raise OtlpDecodeError(f"{where}[{i}]: attribute without a string key")
        out.append((key, kv.get("value")))
    return out


def _string_attributes(value: Any, where: str, at: str = "") -> tuple[tuple[str, str], ...]:
    """Attributes as (key, string) pairs; every key is checked before any value, so the error
    told is the first bad key's. (A scope's usual spans are made by ``_otlpspans.c``.)"""
    items = _attributes(_list(value, where + at), where + at)
    return tuple((_text(k), _string(v, f"{where}{at} {k!r}")) for k, v in items)


def _status(value: Any, where: str, at: str = "") -> tuple[str, str]:
    if value is None:  # most spans: no status set
        return "UNSET", ""
    where += at
    st = _obj(value, where)
    code = st.get("code", 0)
    if isinstance(code, str) and code in _STATUS_NAMES:
        name = _STATUS_NAMES[code]
    elif isinstance(code, int) and not isinstance(code, bool) and code in _STATUS:
        name = _STATUS[code]
    else:
        raise OtlpDecodeError(f"{where}: unknown status code {code!r:.40}")
    message = st.get("message", "")
    return name, _text(message if isinstance(message, str) else str(message))


def _span(raw: Any, service: str, where: str) -> OtlpSpan:
    s = _obj(raw, where)
    status, message = _status(s.get("status"), where, ".status")
    events = []
    raw_events = s.get("events")
    for i, ev in enumerate(() if raw_events is None else _list(raw_events, f"{where}.events")):
        e = _obj(ev, f"{where}.events[{i}]")
        events.append(
            OtlpSpanEvent(
                name=_text(str(e.get("name", ""))),
                at_ns=_nanos(e.get("timeUnixNano"), f"{where}.events[{i}].timeUnixNano"),
                attributes=_string_attributes(e.get("attributes"), f"{where}.events[{i}]"),
            )
        )
    name = s.get("name", "")
    if not isinstance(name, str):
        raise OtlpDecodeError(f"{where}.name: expected a string, got {name!r:.60}")
    return OtlpSpan(
        trace_id=_hex_id(s.get("traceId"), 32, where, ".traceId", allow_empty=False),
        span_id=_hex_id(s.get("spanId"), 16, where, ".spanId", allow_empty=False),
        parent_span_id=_hex_id(s.get("parentSpanId"), 16, where, ".parentSpanId", True),
        name=_text(name),
        service=service,
        start_ns=_nanos(s.get("startTimeUnixNano"), where, ".startTimeUnixNano"),
        end_ns=_nanos(s.get("endTimeUnixNano"), where, ".endTimeUnixNano"),
        status=status,
        status_message=message,
        attributes=_string_attributes(s.get("attributes"), where, ".attributes"),
        events=tuple(events),
    )


def spans_from_otlp_json(obj: Any) -> list[OtlpSpan]:
    """Every span of an ``ExportTraceServiceRequest`` in OTLP/JSON; raises ``OtlpDecodeError``."""
    root = _obj(obj, "request")
    spans: list[OtlpSpan] = []
    for r, rs in enumerate(_list(root.get("resourceSpans"), "resourceSpans")):
        where_r = f"resourceSpans[{r}]"
        rs = _obj(rs, where_r)
        res = _obj(rs.get("resource"), f"{where_r}.resource")
        attrs = _string_attributes(res.get("attributes"), f"{where_r}.resource.attributes")
        service = next((v for k, v in attrs if k == "service.name"), "")
        for s, ss in enumerate(_list(rs.get("scopeSpans"), f"{where_r}.scopeSpans")):
            where_s = f"{where_r}.scopeSpans[{s}]"
            raw_spans = _list(_obj(ss, where_s).get("spans"), f"{where_s}.spans")
            made = None if _SPANS is None else _SPANS(raw_spans, service, OtlpSpan, OtlpSpanEvent)
            if made is not None:
                spans += made
                continue
            for i, raw in enumerate(raw_spans):
                spans.append(_span(raw, service, f"{where_s}.spans[{i}]"))
    return spans


_Spans = Callable[[list[Any], str, type, type], "list[OtlpSpan] | None"]


_compiled = extension("otlp._otlpspans")
_SPANS = None if _compiled is None else cast(_Spans, _compiled.spans)
"""``_otlpspans.spans``: a scope's spans made as :func:`_span` makes them, or None for a list
it does not read (anything unusual: :func:`_span` reads it and words its errors). None when
not built, or with ``TRITON_OBS_PURE_PARSER=1``."""


def _fix_ids(node: Any) -> None:
    """protobuf's JSON printer writes ``bytes`` as base64; OTLP/JSON wants hex ids."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _fix_ids(value)
    elif isinstance(node, list):
        for item in node:
            _fix_ids(item)


def otlp_json_from_proto(data: bytes, kind: str = "traces") -> dict[str, Any]:
    """A protobuf export request (``traces``, ``metrics`` or ``logs``) as OTLP/JSON."""
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError

    message = _request_type(kind)()
    try:
        message.ParseFromString(data)
    except (DecodeError, ValueError, RecursionError) as err:
        raise OtlpDecodeError(f"not a protobuf {type(message).__name__}: {err}") from None
    obj: dict[str, Any] = MessageToDict(message, use_integers_for_enums=True)
    _fix_ids(obj)
    return obj


def _request_type(kind: str) -> Any:
    if kind == "traces":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        return ExportTraceServiceRequest
    if kind == "metrics":
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
        )

        return ExportMetricsServiceRequest
    if kind == "logs":
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )

        return ExportLogsServiceRequest
    raise ValueError(f"unknown OTLP signal {kind!r}")


def spans_from_otlp_proto(data: bytes) -> list[OtlpSpan]:
    """Every span of a protobuf ``ExportTraceServiceRequest``; raises ``OtlpDecodeError``."""
    return spans_from_otlp_json(otlp_json_from_proto(data))
