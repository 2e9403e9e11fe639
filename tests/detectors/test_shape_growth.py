"""shape_growth on the recorded real run (the decoder's state doubling TOKEN_IDS) and its
healthy twin (the same generate calls: +1 token per step, reset per request)."""

from __future__ import annotations

from observability import events as ev
from observability.detectors import Window
from observability.detectors.shape_growth import ShapeGrowthDetector
from observability.findings import Severity

S = 1_000_000_000


def test_doubling_decoder_output_is_found_with_its_shapes(faulty: Window) -> None:
    findings = ShapeGrowthDetector().detect(faulty)
    assert [(f.kind, f.model, f.instance) for f in findings] == [
        ("shape_growth", "decoder", "decoder_0_0")
    ]
    (f,) = findings
    assert f.severity is Severity.CRITICAL
    assert f.request_id is not None and f.request_id.startswith("demo-shape_growth-")
    shapes = f.evidence[0].detail
    assert shapes.startswith("TOKEN_IDS shapes in response order: [5] [11] [23] [47]")
    assert "[65536]" in shapes


def test_healthy_decode_loop_growth_is_not_a_finding(healthy: Window) -> None:
    assert ShapeGrowthDetector().detect(healthy) == []


def _responses(sizes_per_request: list[list[int]]) -> Window:
    """A decoder answering each client request's steps, one response per step."""
    events: list[object] = []
    at = 1_000 * S
    for r, sizes in enumerate(sizes_per_request):
        for step, size in enumerate(sizes):
            rid = f"c{r}.decoder.{step}"
            records = (
                (ev.RequestPrepared, (rid, "decoder", 1, 0, 0)),
                (ev.RequestStateChange, (rid, "INITIALIZED", "PENDING")),
                (ev.RequestStateChange, (rid, "PENDING", "EXECUTING")),
                (ev.InstanceExecuting, ("decoder", "decoder_0_0", 1)),
                (ev.ResponseOutput, ("", "TOKEN_IDS", "INT64", (size,))),
                (ev.RequestStateChange, (rid, "EXECUTING", "RELEASED")),
            )
            for cls, args in records:
                at += 1_000_000
                header = ev.LogRecord(at, ev.LogLevel.INFO, "x.cc", 1, len(events))
                events.append(cls(header, *args))
    return Window(0, at, events=events)


def test_a_fixed_chunk_that_is_never_reset_between_requests_is_a_warning() -> None:
    window = _responses([[4, 8], [12, 16], [20, 24]])
    (f,) = ShapeGrowthDetector().detect(window)
    assert (f.model, f.severity) == ("decoder", Severity.WARNING)
    assert "not reset between client requests" in f.summary


def test_per_request_growth_that_resets_is_normal() -> None:
    window = _responses([[5, 6, 7, 8, 9, 10, 11, 12]] * 3)
    assert ShapeGrowthDetector().detect(window) == []
