"""Span ids, parents and the sampling rule: W3C traceparent parsing and OpenTelemetry's ratio."""

from __future__ import annotations

import random

import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from observability.bls.spans import SpanRef, new_root, parse_traceparent, ratio_bound, triton_parent
from tests.bls.fakes import FakeRequest

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (f"00-{TRACE}-{SPAN}-01", SpanRef(int(TRACE, 16), int(SPAN, 16), True)),
        (f"00-{TRACE}-{SPAN}-00", SpanRef(int(TRACE, 16), int(SPAN, 16), False)),
        (f" 00-{TRACE}-{SPAN}-03 ", SpanRef(int(TRACE, 16), int(SPAN, 16), True)),
        (f"01-{TRACE}-{SPAN}-01-future", SpanRef(int(TRACE, 16), int(SPAN, 16), True)),
    ],
)
def test_valid_traceparent(header: str, expected: SpanRef) -> None:
    assert parse_traceparent(header) == expected


@pytest.mark.parametrize(
    "header",
    [
        "",
        "garbage",
        f"ff-{TRACE}-{SPAN}-01",  # forbidden version
        f"00-{TRACE}-{SPAN}-01-extra",  # version 00 has exactly four fields
        f"00-{'0' * 32}-{SPAN}-01",  # all-zero trace id
        f"00-{TRACE}-{'0' * 16}-01",  # all-zero span id
        f"00-{TRACE.upper()}-{SPAN}-01",  # upper-case hex
        f"00-{TRACE[:-1]}-{SPAN}-01",
        f"00-{TRACE}-{SPAN}-1",
        f"00-+{TRACE[1:]}-{SPAN}-01",  # int() would take it; the spec does not
    ],
)
def test_invalid_traceparent_is_no_parent(header: str) -> None:
    assert parse_traceparent(header) is None


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            f'{{"traceparent": "00-{TRACE}-{SPAN}-01"}}',
            SpanRef(int(TRACE, 16), int(SPAN, 16), True),
        ),
        (
            f'{{"traceparent": "00-{TRACE}-{SPAN}-01", "tracestate": "k=v"}}',
            SpanRef(int(TRACE, 16), int(SPAN, 16), True, "k=v"),
        ),
        (f"00-{TRACE}-{SPAN}-00", SpanRef(int(TRACE, 16), int(SPAN, 16), False)),
        (None, None),  # triton trace mode: no context
        ("{not json", None),
        ('{"tracestate": "k=v"}', None),
        ('["traceparent"]', None),
    ],
)
def test_triton_parent(context: str | None, expected: SpanRef | None) -> None:
    assert triton_parent(FakeRequest("router", "r", traceparent=context)) == expected


def test_triton_parent_survives_a_broken_request() -> None:
    class Broken:
        def trace(self) -> None:
            raise RuntimeError("stub gone")

    assert triton_parent(Broken()) is None


@pytest.mark.parametrize("ratio", [0.0, 0.01, 0.25, 0.5, 1.0])
def test_root_sampling_agrees_with_opentelemetry(ratio: float) -> None:
    """Same trace id, same ratio, same decision as the SDK's TraceIdRatioBased."""
    sdk = TraceIdRatioBased(ratio)
    bound = ratio_bound(ratio)
    rng = random.Random(ratio)
    for _ in range(2000):
        trace_id = rng.getrandbits(128) or 1
        theirs = sdk.should_sample(None, trace_id, "x").decision is Decision.RECORD_AND_SAMPLE
        assert ((trace_id & (2**64 - 1)) < bound) is theirs
    roots = [new_root(bound) for _ in range(2000)]
    assert all(r.span_id == 0 and r.trace_id for r in roots)
    if ratio in (0.0, 1.0):
        assert {r.sampled for r in roots} == {bool(ratio)}
