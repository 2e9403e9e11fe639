"""Our hand-written OTLP protobuf, byte for byte what opentelemetry-proto's parser reads back."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from observability.bls.otlp import SCOPE, _Encoder, encode, env_headers
from observability.bls.spans import CLIENT, SERVER, SpanRecord
from observability.bls.tensors import snapshot
from tests.bls.fakes import FakeTensor

RESOURCE = {"service.name": "router", "service.instance.id": "router_0_0/42"}


def _reference_value(target: AnyValue, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int) and -(2**63) <= value < 2**63:
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, list):
        for item in value:
            _reference_value(target.array_value.values.add(), item)
    else:
        target.string_value = str(value)


def _reference_attrs(target: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        kv = target.add()
        kv.key = key
        _reference_value(kv.value, value)


def _records() -> list[SpanRecord]:
    call = SpanRecord(
        "bls détecteur",
        CLIENT,
        0x0AF7651916CD43DD8448EB211C80319C,
        0xB7AD6B7169203331,
        0x00F067AA0BA902B7,
        {
            "triton.bls.parent.model": "router",
            "triton.bls.decoupled": False,
            "triton.bls.hung": True,
            "triton.bls.responses": 3,
            "negative": -5,
            "huge": 2**70,
            "triton.bls.executor_wait_s": 0.25,
            "triton.bls.inputs": snapshot([FakeTensor("FEATURES", (1, 64))]),
            "list": ["a", "ü"],
            "triton.bls.outcome": "error",
        },
        "vendor=abc",
    ).end()
    call.add_event("bls.call.hung", {"triton.bls.age_s": 1.5})
    call.record_exception(KeyError("LOGITS"))
    call.error = "boom"
    root = SpanRecord("router execute", SERVER, 1, 2, 0, {"triton.request_id": "r1"})
    return [call, root]  # root never ended: end = start


def _expected(records: list[SpanRecord]) -> ExportTraceServiceRequest:
    want = ExportTraceServiceRequest()
    rs = want.resource_spans.add()
    _reference_attrs(rs.resource.attributes, RESOURCE)
    ss = rs.scope_spans.add()
    ss.scope.name = SCOPE
    for r in records:
        s = ss.spans.add()
        s.trace_id = r.trace_id.to_bytes(16, "big")
        s.span_id = r.span_id.to_bytes(8, "big")
        if r.parent_span_id:
            s.parent_span_id = r.parent_span_id.to_bytes(8, "big")
        s.trace_state = r.trace_state
        s.flags = 1
        s.name = r.name
        s.kind = r.kind  # type: ignore[assignment]
        s.start_time_unix_nano = r.start_ns
        s.end_time_unix_nano = r.end_ns or r.start_ns
        attrs = dict(r.attributes)
        if "triton.bls.inputs" in attrs:
            attrs["triton.bls.inputs"] = ["FEATURES FP32 [1,64]"]
        _reference_attrs(s.attributes, attrs)
        for name, t, event_attrs in r.events:
            e = s.events.add()
            e.time_unix_nano, e.name = t, name
            _reference_attrs(e.attributes, event_attrs)
        if r.error is not None:
            s.status.code = Status.STATUS_CODE_ERROR
            s.status.message = r.error
    return want


def test_encoding_matches_opentelemetry_proto() -> None:
    records = _records()
    got = ExportTraceServiceRequest.FromString(encode(records, RESOURCE))
    assert got == _expected(records)
    span = got.resource_spans[0].scope_spans[0].spans[0]
    assert span.kind == Span.SPAN_KIND_CLIENT
    assert span.events[1].name == "exception"
    assert "KeyError" in span.events[1].attributes[0].value.string_value


def test_cached_attributes_encode_the_same_every_time() -> None:
    encoder = _Encoder()
    records = _records()
    first = encoder.encode(records, RESOURCE)
    assert encoder.encode(records, RESOURCE) == first  # now from the cache
    assert ExportTraceServiceRequest.FromString(first) == _expected(records)


def test_headers_from_the_opentelemetry_environment() -> None:
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x-tenant=t1,broken,=novalue"}
    assert env_headers(env) == {"api-key": "a b", "x-tenant": "t1"}
    env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = "only=traces"
    assert env_headers(env) == {"only": "traces"}
    assert env_headers({}) == {}
