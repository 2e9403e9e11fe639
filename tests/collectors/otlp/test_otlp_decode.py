"""Decoders over the OTLP/JSON posts Triton 2.51 really sent, protobuf round trips, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.otlp import (
    OtlpDecodeError,
    otlp_json_from_proto,
    spans_from_otlp_json,
    spans_from_otlp_proto,
)
from observability.events import OtlpSpan, OtlpSpanEvent

FIX = Path(__file__).parents[2] / "fixtures" / "otlp" / "triton_2.51_otel"


def triton_posts() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(FIX.glob("post_??.json"))]


def test_golden_triton_otel_mode_posts() -> None:
    spans = [s for post in triton_posts() for s in spans_from_otlp_json(post)]
    assert len(spans) == 40
    assert {s.service for s in spans} == {"triton-lab"}
    assert spans[1] == OtlpSpan(
        trace_id="04ea4d822301182f8cd25f874dd42dba",
        span_id="646174fa121094b3",
        parent_span_id="8fa7e6308ee3d85c",
        name="preprocess",
        service="triton-lab",
        start_ns=1795319618226630467,
        end_ns=1795319618276528465,
        status="UNSET",
        attributes=(
            ("triton.model_name", "preprocess"),
            ("triton.model_version", "1"),
            ("triton.trace_id", "2"),
            ("triton.trace_parent_id", "1"),
            ("triton.request_id", "or0.preprocess"),
        ),
        events=(
            OtlpSpanEvent("REQUEST_START", 1795319618226630467),
            OtlpSpanEvent("QUEUE_START", 1795319618226736178),
            OtlpSpanEvent("REQUEST_END", 1795319618276528465),
        ),
    )
    # BLS children share the root's trace id in opentelemetry mode.
    roots = [s for s in spans if not s.parent_span_id]
    assert roots and all(r.name == "InferRequest" for r in roots)
    by_id = {s.span_id: s for s in spans}
    child = next(s for s in spans if s.attribute("triton.request_id") == "or0.detector")
    parent = by_id[child.parent_span_id]
    assert parent.attribute("triton.model_name") == "router"
    assert by_id[parent.parent_span_id].name == "InferRequest"


def test_protobuf_round_trip_gives_the_same_spans() -> None:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    for post in triton_posts():
        message = ParseDict(_hex_to_b64(post), ExportTraceServiceRequest())
        data = message.SerializeToString()
        assert spans_from_otlp_proto(data) == spans_from_otlp_json(post)
        assert spans_from_otlp_json(otlp_json_from_proto(data)) == spans_from_otlp_json(post)


def _hex_to_b64(node):  # type: ignore[no-untyped-def]
    import base64

    if isinstance(node, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in ("traceId", "spanId", "parentSpanId")
            else _hex_to_b64(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_to_b64(v) for v in node]
    return node


def test_attribute_value_kinds_become_strings() -> None:
    value_kinds = {
        "s": {"stringValue": "x"},
        "b": {"boolValue": True},
        "i": {"intValue": "-3"},
        "d": {"doubleValue": 0.5},
        "a": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "z"}]}},
        "k": {"kvlistValue": {"values": [{"key": "q", "value": {"boolValue": False}}]}},
        "y": {"bytesValue": "AQI="},
        "e": {},
        "sb": {"boolValue": False, "stringValue": "s"},  # a string value wins, as in _plain
        "bi": {"boolValue": 1},  # not a bool: _plain's way, "1"
    }
    span = {
        "traceId": "0" * 31 + "1",
        "spanId": "A" * 16,
        "name": "n",
        "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
        "attributes": [{"key": k, "value": v} for k, v in value_kinds.items()],
    }
    (s,) = spans_from_otlp_json({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    assert dict(s.attributes) == {
        "s": "x", "b": "true", "i": "-3", "d": "0.5", "a": '[1,"z"]', "k": '{"q":false}',
        "y": "0102", "e": "", "sb": "s", "bi": "1",
    }  # fmt: skip
    assert (s.span_id, s.parent_span_id, s.status, s.status_message) == (
        "a" * 16,
        "",
        "ERROR",
        "boom",
    )
    assert (s.service, s.start_ns, s.end_ns) == ("", 0, 0)
    assert spans_from_otlp_json({}) == []


def _one(span: dict) -> dict:
    base = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "n"}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{**base, **span}]}]}]}


INVALID = [
    ([], "expected an object"),
    ({"resourceSpans": {}}, "resourceSpans: expected a list"),
    ({"resourceSpans": [1]}, r"resourceSpans\[0\]"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]}, "spans: expected a list"),
    (_one({"traceId": "xyz"}), "traceId: expected 32 hex"),
    (_one({"traceId": "0" * 32}), "all-zero"),
    (_one({"spanId": "AQIDBAUGBwg="}), "spanId: expected 16 hex"),  # base64, not OTLP/JSON
    (_one({"parentSpanId": "12"}), "parentSpanId"),
    (_one({"startTimeUnixNano": "-1"}), "startTimeUnixNano"),
    (_one({"endTimeUnixNano": 1.5}), "endTimeUnixNano"),
    (_one({"status": {"code": 7}}), "unknown status code"),
    (_one({"name": 3}), "name: expected a string"),
    (_one({"attributes": [{"value": {}}]}), "without a string key"),
    (_one({"attributes": [{"key": "k", "value": {"intValue": "x"}}]}), "intValue"),
    (_one({"attributes": [{"key": "k", "value": {"bytesValue": "%%"}}]}), "bytesValue"),
    (_one({"events": [{"timeUnixNano": "x"}]}), r"events\[0\].timeUnixNano"),
    # Every key is checked before any value: the error told is the later bad key's.
    (
        _one({"attributes": [{"key": "k", "value": {"intValue": "x"}}, {"key": 3}]}),
        r"attributes\[1\]: attribute without a string key",
    ),
    (_one({"attributes": [{"key": "k", "value": {"stringValue": None, "boolValue": True}}]}),
     r"attributes 'k': stringValue None is not a string"),
    (_one({"status": {"code": "OK"}}), r"spans\[0\].status: unknown status code"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "message"), INVALID)
def test_invalid_json_requests(obj: object, message: str) -> None:
    with pytest.raises(OtlpDecodeError, match=message) as info:
        spans_from_otlp_json(obj)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("data", [b"\xff\xff\xff", b"\x0a\x05ab", b"{json}"])
def test_invalid_protobuf(data: bytes) -> None:
    with pytest.raises(OtlpDecodeError, match="not a protobuf"):
        spans_from_otlp_proto(data)
