"""The compiled span maker (``collectors/otlp/_otlpspans.c``) against ``decode._span``, its
reference: on every OTLP request of every recorded bundle (real Triton 2.51 recordings: the
BLS library's spans and Triton's own opentelemetry mode; the quick suite samples the foreign
corpus) and on hypothesis' requests, which vary each field a span has (ids in upper case, all
zeros or not hex, times as strings or ints or past 2**63, every kind of attribute value, status
codes, events, text that is not ASCII). The compiled path either makes what Python makes, or
hands the scope's spans back and Python makes them (or words the error).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.otlp import decode
from collectors.otlp.decode import OtlpDecodeError, spans_from_otlp_json
from observability.events import OtlpSpan, OtlpSpanEvent
from tests.bundles import BUNDLES, REPO, members
from tests.hypothesis_profiles import examples

_built = pytest.mark.skipif(decode._SPANS is None, reason="the compiled span maker is not built")


def test_the_compiled_span_maker_is_built() -> None:
    """Production runs the C path; CI must not pass on a build without it unnoticed."""
    if os.environ.get("TRITON_OBS_PURE_PARSER") == "1":
        pytest.skip("TRITON_OBS_PURE_PARSER=1 asks for the Python path")
    assert decode._SPANS is not None, (
        "collectors/otlp/_otlpspans.c was not built: install a C compiler and the Python "
        "headers (apt-get install gcc python3-dev), then pip install -e . again"
    )


@contextmanager
def _python_path() -> Iterator[None]:
    saved, decode._SPANS = decode._SPANS, None
    try:
        yield
    finally:
        decode._SPANS = saved


def _decoded(obj: object) -> object:
    try:
        return spans_from_otlp_json(obj)
    except OtlpDecodeError as err:
        return str(err)


def _same(obj: object) -> None:
    with _python_path():
        theirs = _decoded(obj)
    assert _decoded(obj) == theirs


def _made_in_c(spans: list[Any]) -> bool:
    assert decode._SPANS is not None
    return decode._SPANS(spans, "svc", OtlpSpan, OtlpSpanEvent) is not None


@_built
@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_every_recorded_request_gives_the_same_spans(name: str) -> None:
    bodies = members(BUNDLES[name], lambda m: "otlp/" in m and m.endswith(".json"))
    for request in map(json.loads, bodies):
        _same(request)
        for rs in request["resourceSpans"]:
            assert all(_made_in_c(ss["spans"]) for ss in rs["scopeSpans"])


@_built
def test_tritons_own_posts_give_the_same_spans() -> None:
    posts = sorted((REPO / "tests/fixtures/otlp/triton_2.51_otel").glob("post_??.json"))
    assert posts
    for post in posts:
        request = json.loads(post.read_text())
        _same(request)
        spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert _made_in_c(spans)


def _span(**fields: Any) -> dict[str, Any]:
    base = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "n"}
    return {**base, **fields}


@_built
def test_what_is_made_and_what_is_handed_back() -> None:
    made = [
        _span(),
        _span(traceId="AB" * 16, parentSpanId="0" * 16, status={"code": "STATUS_CODE_OK"}),
        _span(startTimeUnixNano="0009", endTimeUnixNano=2**63 - 1, status={"code": 2}),
        _span(attributes=[
            {"key": "i", "value": {"intValue": "-12"}},
            {"key": "j", "value": {"intValue": 7}},
            {"key": "d", "value": {"doubleValue": 0.1}},
            {"key": "e", "value": {"doubleValue": 3}},
            {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "x y"}]}}},
            {"key": "n", "value": {"arrayValue": {}}},
            {"key": "b", "value": {"boolValue": True, "intValue": "1"}},
            {"key": "none", "value": {}},
            {"key": "nothing"},
        ]),
        _span(events=[{"name": "QUEUE_START", "timeUnixNano": "5", "attributes": []}, {}]),
    ]  # fmt: skip
    q = '"'  # a character json.dumps escapes
    handed_back = [
        _span(traceId="0" * 32),
        _span(spanId="xyz"),
        _span(name="é"),
        _span(startTimeUnixNano="-1"),
        _span(endTimeUnixNano=str(2**63)),
        _span(startTimeUnixNano=True),
        _span(status={"code": 7}),
        _span(status={"code": True}),
        _span(status={"message": 3}),
        _span(attributes=[{"key": "i", "value": {"intValue": "007"}}]),
        _span(attributes=[{"key": "i", "value": {"intValue": "-0"}}]),
        _span(attributes=[{"key": "y", "value": {"bytesValue": "AQI="}}]),
        _span(attributes=[{"key": "k", "value": {"kvlistValue": {"values": []}}}]),
        _span(attributes=[{"key": "a", "value": {"arrayValue": {"values": [{"intValue": 1}]}}}]),
        _span(attributes=[{"key": "a", "value": {"arrayValue": {"values": [{"stringValue": q}]}}}]),
        _span(attributes=[{"key": 3, "value": {}}]),
        _span(attributes={"key": "k"}),
        _span(events=[{"name": 5}]),
        "not a span",
    ]  # fmt: skip
    for span in made:
        assert _made_in_c([span]), span
        _same({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    for span in handed_back:
        assert not _made_in_c([_span(), span]), span
        _same({"resourceSpans": [{"scopeSpans": [{"spans": [_span(), span]}]}]})
    (s,) = spans_from_otlp_json({"resourceSpans": [{"scopeSpans": [{"spans": [made[3]]}]}]})
    assert dict(s.attributes) == {
        "i": "-12", "j": "7", "d": "0.1", "e": "3", "a": '["x y"]', "n": "[]", "b": "true",
        "none": "", "nothing": "",
    }  # fmt: skip


_HEX32 = st.text("0123456789abcdefABCDEF", min_size=32, max_size=32)
_HEX16 = st.text("0123456789abcdefABCDEF", min_size=16, max_size=16)
_ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
    st.text(max_size=3), st.just([]), st.just({}),
)  # fmt: skip
_NANOS = st.one_of(
    st.integers(0, 2**64), st.integers(0, 2**64).map(str), st.just("0001"), st.just(" 1"), _ODD
)
_INT_TEXT = st.one_of(
    st.integers().map(str), st.sampled_from(["007", "-0", "+1", " 2", "1_0", "0", "-12"])
)
"""Integers as text, some that int() reads but str() writes otherwise."""
_VALUE = st.one_of(
    st.fixed_dictionaries({"stringValue": st.one_of(st.text(max_size=4), _ODD)}),
    st.fixed_dictionaries({"boolValue": st.one_of(st.booleans(), _ODD)}),
    st.fixed_dictionaries({"intValue": st.one_of(st.integers(), _INT_TEXT, _ODD)}),
    st.fixed_dictionaries({"doubleValue": st.one_of(st.floats(), st.integers(), _ODD)}),
    st.fixed_dictionaries({"bytesValue": st.sampled_from(["AQI=", "%%"])}),
    st.fixed_dictionaries(
        {"arrayValue": st.fixed_dictionaries(
            {"values": st.lists(st.fixed_dictionaries(
                {"stringValue": st.one_of(st.text(max_size=3), _ODD)}), max_size=3)})}
    ),
    st.just({}),
    _ODD,
)  # fmt: skip
_ATTRIBUTES = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"key": st.one_of(st.text(max_size=3), _ODD)}, optional={"value": _VALUE}
        ),
        max_size=4,
    ),
    _ODD,
)
_SPAN = st.fixed_dictionaries(
    {
        "traceId": st.one_of(_HEX32, st.just("0" * 32), _ODD),
        "spanId": st.one_of(_HEX16, st.just("0" * 16), _ODD),
    },
    optional={
        "parentSpanId": st.one_of(_HEX16, st.just("0" * 16), st.just(""), _ODD),
        "name": st.one_of(st.text(max_size=4), _ODD),
        "startTimeUnixNano": _NANOS,
        "endTimeUnixNano": _NANOS,
        "status": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "code": st.one_of(
                        st.integers(-1, 3), st.sampled_from(["STATUS_CODE_OK", "OK"]), _ODD
                    ),
                    "message": st.one_of(st.text(max_size=3), _ODD),
                },
            ),
            _ODD,
        ),
        "attributes": _ATTRIBUTES,
        "events": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "name": st.one_of(st.text(max_size=3), _ODD),
                        "timeUnixNano": _NANOS,
                        "attributes": _ATTRIBUTES,
                    },
                ),
                max_size=2,
            ),
            _ODD,
        ),
        "kind": st.integers(0, 5),
    },
)


@_built
@settings(max_examples=examples(3000), deadline=None)
@given(spans=st.lists(_SPAN, max_size=3))
def test_any_spans_give_the_same_records_or_error(spans: list[Any]) -> None:
    _same({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
