"""Fuzz the OTLP decoders and the real receiver over HTTP, with the store behind it.

Bodies: random bytes; valid ``ExportTraceServiceRequest`` serializations (random spans,
ids of any length, every attribute kind, unknown enum values, timestamps up to 2**64-1)
with bytes flipped, inserted, cut or repeated; Triton's recorded JSON posts with random
fields replaced; any JSON value. Each goes out as protobuf or JSON, plain or gzip (also a
cut gzip stream, bytes that are not gzip and a gzip bomb), to a real ``OtlpReceiver`` on
127.0.0.1 through ``urllib``. For each:

* the answer is a 2xx, or a 4xx whose JSON body says why; never a 5xx, never a dropped
  connection, and the same status that ``OtlpReceiver.handle`` gives in process;
* a valid span posted just before the garbage is still what ``drain()`` returns first,
  and the garbage adds exactly the spans the decoder finds in it (none when rejected);
* the collected spans go into a ``Store``; rows stored before a garbage batch, which may
  reuse their ids on purpose, are unchanged after it;
* decoded spans are storable (64-bit times, UTF-8 texts), and the OTLP/JSON kept of a
  protobuf request (the bundle's ``otlp/*.json``) decodes to the same spans.

Run longer: ``TRITON_OBS_FUZZ_EXAMPLES=20000 pytest -q tests/fuzz/test_fuzz_otlp.py --timeout=0``
(``TRITON_OBS_FUZZ_KEEP=1`` keeps the input of a failure under ``regressions/otlp/``).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from collectors.otlp.decode import (
    OtlpDecodeError,
    otlp_json_from_proto,
    spans_from_otlp_json,
    spans_from_otlp_proto,
)
from collectors.otlp.receiver import OtlpReceiver, _BadRequest
from observability.events import OtlpSpan
from observability.store import Store, StoreError
from tests.fuzz._support import (
    FIXTURES,
    JSON,
    assert_storable,
    fuzz_settings,
    keep_on_failure,
    mutated_json,
    regression_files,
)

_LIMIT = 64 * 1024
_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
_POSTS = [
    json.loads(p.read_bytes())
    for p in sorted((FIXTURES / "otlp").glob("*/post_*.json"))
    if not p.name.endswith(".headers.json")
]
_KEYS = ["resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "parentSpanId", "name"]
_KEYS += ["startTimeUnixNano", "endTimeUnixNano", "status", "code", "message", "events"]
_KEYS += ["timeUnixNano", "attributes", "key", "value", "stringValue", "intValue", "arrayValue"]
_KEYS += ["kvlistValue", "values", "bytesValue", "doubleValue", "boolValue", "resource"]
_RECORDED_SPAN = ("04ea4d822301182f8cd25f874dd42dba", "c7c824caf054e7ac")
"""A span of post_00.json: the good span takes its ids now and then, so that a mutated
post reuses them and the store has to keep the row it already holds."""
_TRACE = "5b8efff798038103d269b633813fc60c"


# --------------------------------------------------------------------------- strategies

_ANY_VALUE = st.deferred(
    lambda: st.one_of(
        st.builds(lambda s: AnyValue(string_value=s), st.text(max_size=8)),
        st.builds(lambda b: AnyValue(bool_value=b), st.booleans()),
        st.builds(lambda i: AnyValue(int_value=i), st.integers(-(2**63), 2**63 - 1)),
        st.builds(lambda d: AnyValue(double_value=d), st.floats()),
        st.builds(lambda b: AnyValue(bytes_value=b), st.binary(max_size=8)),
        st.just(AnyValue()),
    )
)
_KV = st.builds(lambda k, v: KeyValue(key=k, value=v), st.text(max_size=6), _ANY_VALUE)


@st.composite
def _proto_request(draw: st.DrawFn) -> bytes:
    """A valid export request: random spans, ids of any length, enums out of range."""
    request = ExportTraceServiceRequest()
    for _ in range(draw(st.integers(0, 2))):
        rs = request.resource_spans.add()
        rs.resource.attributes.extend(draw(st.lists(_KV, max_size=2)))
        if draw(st.booleans()):
            rs.resource.attributes.add(key="service.name").value.string_value = draw(
                st.text(max_size=8)
            )
        for _ in range(draw(st.integers(0, 2))):
            ss = rs.scope_spans.add()
            for _ in range(draw(st.integers(0, 3))):
                span: Span = ss.spans.add()
                span.trace_id = draw(st.one_of(st.binary(min_size=16, max_size=16), st.binary()))
                span.span_id = draw(st.one_of(st.binary(min_size=8, max_size=8), st.binary()))
                span.parent_span_id = draw(st.sampled_from([b"", b"\x01" * 8, b"\x00" * 8]))
                span.name = draw(st.text(max_size=10))
                span.start_time_unix_nano = draw(st.integers(0, 2**64 - 1))
                span.end_time_unix_nano = draw(st.integers(0, 2**64 - 1))
                span.attributes.extend(draw(st.lists(_KV, max_size=3)))
                span.status.code = draw(st.sampled_from([0, 1, 2, 7]))  # type: ignore[assignment]
                span.status.message = draw(st.text(max_size=5))
                for _ in range(draw(st.integers(0, 2))):
                    event = span.events.add(name=draw(st.text(max_size=5)))
                    event.time_unix_nano = draw(st.integers(0, 2**64 - 1))
                    event.attributes.extend(draw(st.lists(_KV, max_size=2)))
    return request.SerializeToString()


@st.composite
def _mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
        elif kind == 1:
            data = data[:at] + data[at + draw(st.integers(1, 8)) :]
        elif kind == 2:
            data = data[:at]
        else:
            data = data[:at] + data[at : at + 16] * draw(st.integers(2, 4)) + data[at + 16 :]
    return data


_PROTO_BODIES = st.one_of(
    _proto_request(),
    _proto_request().flatmap(_mutated_bytes),
    st.binary(max_size=300),
)
_JSON_BODIES = st.one_of(
    st.sampled_from(_POSTS).flatmap(lambda p: mutated_json(p, _KEYS)).map(json.dumps),
    JSON.map(json.dumps),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
).map(lambda text: text.encode("utf-8", "surrogatepass"))
_CONTENT = st.one_of(
    st.tuples(st.sampled_from([_PROTOBUF, _PROTOBUF + "; proto=x"]), _PROTO_BODIES),
    st.tuples(st.sampled_from([_JSON, "Application/JSON; charset=utf-8"]), _JSON_BODIES),
    st.tuples(st.sampled_from(["", "text/plain", "application/xml"]), st.binary(max_size=20)),
)
_ENCODINGS = st.sampled_from(["", "identity", "gzip", "gzip-cut", "gzip-junk", "br"])


def _encode(body: bytes, encoding: str) -> tuple[bytes, str]:
    if encoding == "gzip":
        return gzip.compress(body, mtime=0), "gzip"
    if encoding == "gzip-cut":
        return gzip.compress(body, mtime=0)[:-5], "gzip"
    if encoding == "gzip-junk":
        return body, "gzip"
    return body, encoding


# ------------------------------------------------------------------------------ plumbing


def _post(url: str, body: bytes, ctype: str, encoding: str = "") -> tuple[int, bytes]:
    """POST over a real socket; a 4xx/5xx answer is a status, a dropped connection fails."""
    headers = {"Content-Type": ctype}
    if encoding:
        headers["Content-Encoding"] = encoding
    request = urllib.request.Request(url + "/v1/traces", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read()


class _Rig:
    """One receiver and one store for a whole module: the point is that they live on."""

    def __init__(self, folder: Path) -> None:
        self.receiver = OtlpReceiver(max_body_bytes=_LIMIT).start()
        self.local = OtlpReceiver(max_body_bytes=_LIMIT)  # never started: handle() only
        self.store = Store(folder / "otlp.db")

    def expected(self, body: bytes, ctype: str, encoding: str) -> tuple[int, list[OtlpSpan]]:
        """What the same request gives in process: the status and the spans it queues."""
        if len(body) > _LIMIT:
            return 413, []  # refused on its Content-Length, before handle()
        try:
            status, _ = self.local.handle("/v1/traces", ctype, encoding, body)
        except _BadRequest as bad:
            return bad.status, []
        return status, self.local.drain()

    def rows(self, spans: list[OtlpSpan]) -> list[OtlpSpan | None]:
        stored = {(s.trace_id, s.span_id): s for s in self.store.otlp_spans()}
        return [stored.get((s.trace_id, s.span_id)) for s in spans]

    def close(self) -> None:
        self.receiver.stop()
        self.local.stop()
        self.store.close()


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Rig]:
    r = _Rig(tmp_path_factory.mktemp("otlp"))
    yield r
    r.close()


def _good_request(trace_id: str, span_id: str) -> bytes:
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "InferRequest",
        "startTimeUnixNano": "1795319618226919571",
        "endTimeUnixNano": "1795319618276424194",
        "attributes": [{"key": "triton.model_name", "value": {"stringValue": "router"}}],
    }
    scope = {"scopeSpans": [{"spans": [span]}]}
    return json.dumps({"resourceSpans": [scope]}).encode()


def check_exchange(
    rig: _Rig, body: bytes, ctype: str, encoding: str, ids: tuple[str, str] | None = None
) -> None:
    """One good span, then the garbage: every property of the receiver and the store."""
    url = rig.receiver.url
    rig.receiver.drain()
    good = _good_request(*(ids or (secrets.token_hex(16), secrets.token_hex(8))))
    assert _post(url, good, _JSON) == (200, b"{}")
    good_spans = spans_from_otlp_json(json.loads(good))

    status, answer = _post(url, body, ctype, encoding)
    want_status, want_spans = rig.expected(body, ctype, encoding)
    assert status == want_status
    if 200 <= status < 300:
        assert ctype.split(";")[0].strip().lower() in (_JSON, _PROTOBUF)
    else:
        assert 400 <= status < 500, (status, answer)
        reason = json.loads(answer)
        assert reason["code"] == status and isinstance(reason["message"], str)
        assert reason["message"], "a rejection must say why"
        assert want_spans == []

    got = rig.receiver.drain()
    assert got[: len(good_spans)] == good_spans, "spans received before the garbage changed"
    assert got[len(good_spans) :] == want_spans
    for span in got:
        assert_storable(span)

    rig.store.write(good_spans)
    before = rig.rows(good_spans)
    assert None not in before
    # It may reuse the good span's ids (_RECORDED_SPAN); a clear refusal (StoreError)
    # must leave what was stored alone as well: checked next.
    with contextlib.suppress(StoreError):
        rig.store.write(want_spans)
    assert rig.rows(good_spans) == before
    assert _post(url, good, _JSON) == (200, b"{}"), "the receiver stopped serving"
    rig.receiver.drain()


# ---------------------------------------------------------------------------- properties


def _one_span(**fields: str) -> bytes:
    span = {"traceId": _TRACE, "spanId": "0102030405060708", **fields}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


_SURROGATE_NAME = _one_span(name="\ud800")
_NS_PAST_INT64 = _one_span(startTimeUnixNano="9" * 20)
_NS_OF_5000_DIGITS = _one_span(startTimeUnixNano="1" * 5000)


@fuzz_settings(120)
@given(_CONTENT, _ENCODINGS, st.sampled_from([None, _RECORDED_SPAN]))
@example((_JSON, b'{"resourceSpans":[null]}'), "", None)
@example((_JSON, _SURROGATE_NAME), "", None)
@example((_JSON, _NS_PAST_INT64), "", None)
@example((_JSON, _NS_OF_5000_DIGITS), "", None)
@example((_JSON, json.dumps(_POSTS[0]).encode()), "gzip", _RECORDED_SPAN)
@example((_JSON, gzip.compress(b"\x00" * (_LIMIT * 4), mtime=0)), "gzip-junk", None)  # a gzip bomb
@example((_JSON, b"[" * (_LIMIT - 1)), "", None)
@example((_JSON, b"[" * (_LIMIT + 1)), "", None)
def test_receiver_over_http(
    rig: _Rig, content: tuple[str, bytes], encoding: str, ids: tuple[str, str] | None
) -> None:
    ctype, raw = content
    body, header = _encode(raw, encoding)
    with keep_on_failure("otlp", "http", raw, "json" if "json" in ctype.lower() else "pb"):
        check_exchange(rig, body, ctype, header, ids)


@fuzz_settings(300)
@given(_PROTO_BODIES)
def test_protobuf_decoder(data: bytes) -> None:
    """Only OtlpDecodeError; accepted spans are storable and survive the JSON round trip."""
    with keep_on_failure("otlp", "proto", data, "pb"):
        try:
            obj = otlp_json_from_proto(data)
            spans = spans_from_otlp_json(obj)
        except OtlpDecodeError as err:
            assert str(err)
            return
        assert spans == spans_from_otlp_proto(data)
        kept = json.loads(json.dumps(obj, separators=(",", ":")))  # what a bundle keeps
        assert spans_from_otlp_json(kept) == spans
        for span in spans:
            _check_span(span)


def check_json_decoder(body: bytes) -> None:
    """Only OtlpDecodeError from the decoder, whatever JSON it gets; storable spans."""
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return  # the receiver's own 400; not the decoder's input
    try:
        spans = spans_from_otlp_json(obj)
    except OtlpDecodeError as err:
        assert str(err)
        return
    for span in spans:
        _check_span(span)


@fuzz_settings(300)
@given(_JSON_BODIES)
@example(b'{"resourceSpans":[null]}')
@example(b'{"resourceSpans":[{"scopeSpans":[null]}]}')
@example(b'{"resourceSpans":[{"scopeSpans":[{"spans":[null]}]}]}')
@example(_NS_OF_5000_DIGITS)
def test_json_decoder(body: bytes) -> None:
    with keep_on_failure("otlp", "json", body, "json"):
        check_json_decoder(body)


def _check_span(span: OtlpSpan) -> None:
    assert len(span.trace_id) == 32 and span.trace_id == span.trace_id.lower()
    assert len(span.span_id) == 16 and span.span_id == span.span_id.lower()
    assert len(span.parent_span_id) in (0, 16)
    assert span.status in ("UNSET", "OK", "ERROR")
    assert_storable(span)


@pytest.mark.parametrize(
    "template",
    [
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0102030405060708",'
        '"attributes":[{"key":"k","value":VALUE}]}]}]}]}',
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0102030405060708",'
        '"events":[{"name":VALUE}],"status":{"message":VALUE}}]}]}]}',
    ],
)
def test_nested_attribute_values_at_every_depth(template: str) -> None:
    """``arrayValue`` nests as deep as the JSON decoder allows; the decoder recurses too."""
    for depth in range(100, 700, 7):
        value = '{"arrayValue":{"values":[' * depth + '{"intValue":"1"}' + "]}}" * depth
        text = template.replace("TRACE", _TRACE).replace("VALUE", value)
        with keep_on_failure("otlp", "nesting", text.encode(), "json"):
            try:
                obj = json.loads(text)
            except RecursionError:
                continue
            with contextlib.suppress(OtlpDecodeError):  # a clear error is fine; others not
                spans_from_otlp_json(obj)


def _field(message: Any, name: str, payload: bytes) -> bytes:
    """One length-delimited field of ``message`` on the wire, written by hand."""
    number = message.DESCRIPTOR.fields_by_name[name].number
    out, size = bytearray([number << 3 | 2]), len(payload)
    while size > 0x7F:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + payload


def _nested_attribute(depth: int) -> bytes:
    """An export request whose one attribute value nests ``depth`` arrays deep: written by
    hand, as the protobuf runtime refuses to build it (which is the point)."""
    value = AnyValue(string_value="x").SerializeToString()
    for _ in range(depth):
        value = _field(AnyValue, "array_value", _field(ArrayValue, "values", value))
    attribute = _field(KeyValue, "key", b"k") + _field(KeyValue, "value", value)
    span = _field(Span, "trace_id", b"\x01" * 16) + _field(Span, "span_id", b"\x02" * 8)
    span += _field(Span, "attributes", attribute)
    scope = _field(ScopeSpans, "spans", span)
    resource = _field(ResourceSpans, "scope_spans", scope)
    return _field(ExportTraceServiceRequest, "resource_spans", resource)


@pytest.mark.parametrize("depth", [1, 10, 30, 45, 50, 60, 100, 1000, 20_000])
def test_protobuf_nesting_is_a_clear_error(depth: int) -> None:
    """Nesting past the protobuf parser's limit is an OtlpDecodeError naming protobuf;
    below it the spans decode and survive the JSON round trip."""
    data = _nested_attribute(depth)
    with keep_on_failure("otlp", "proto-nesting", data, "pb"):
        try:
            spans = spans_from_otlp_proto(data)
        except OtlpDecodeError as err:
            assert "protobuf" in str(err)
            assert depth > 10, "the runtime's limit is some 50 levels"
            return
        (span,) = spans
        value = span.attribute("k")
        assert value.count("[") == depth and value.endswith('"x"' + "]" * depth)


# ------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("path", regression_files("otlp"), ids=lambda p: p.name)
def test_regression(rig: _Rig, path: Path) -> None:
    """Each kept body, sent as its extension says (``.pb``/``.json``, ``.gz`` gzipped)."""
    data = path.read_bytes()
    ctype = _PROTOBUF if ".pb" in path.suffixes else _JSON
    encoding = "gzip" if path.suffix == ".gz" else ""
    check_exchange(rig, data, ctype, encoding)
    if ctype == _JSON and not encoding:
        check_json_decoder(data)
