"""bls_call_hung: on the real recording (the in-model watchdog, deadline 5 s, exporting to the
collector's OTLP receiver) and its healthy twin; plus tables of hand-built events in the form
``observability/bls/calls.py`` emits, for the cases a recording cannot stage (a call that ends
after its report, a missing trace id).
"""

from __future__ import annotations

from dataclasses import replace

from observability.detectors import Window
from observability.detectors.bls_call_hung import BlsCallHung
from observability.events import OtlpSpan, OtlpSpanEvent, StubOutput
from observability.findings import Severity

T0 = 1_795_320_000_000_000_000
S = 1_000_000_000
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALL_SPAN = "00f067aa0ba902b7"
ATTRS = (
    ("triton.bls.parent.model", "router"),
    ("triton.bls.parent.instance", "router_0_7"),
    ("triton.bls.child.model", "detector"),
    ("triton.bls.parent.request_id", "demo-hang-0"),
    ("triton.bls.child.request_id", "demo-hang-0.detector"),
)


def marker(at_ns: int, age_s: float) -> OtlpSpan:
    return OtlpSpan(
        trace_id=TRACE,
        span_id="b7ad6b7169203331",
        parent_span_id=CALL_SPAN,
        name="bls.call.hung",
        service="router",
        start_ns=at_ns,
        end_ns=at_ns,
        status="ERROR",
        status_message=f"in flight for {age_s:.1f} s",
        attributes=(
            *ATTRS,
            ("triton.bls.age_s", repr(age_s)),
            ("triton.bls.deadline_s", "30.0"),
            ("triton.bls.stack", 'File "model.py", line 120, in _call\n  await bls.async_exec'),
            ("triton.bls.call.trace_id", TRACE),
            ("triton.bls.call.span_id", CALL_SPAN),
        ),
    )


def ended_call(start_ns: int, end_ns: int) -> OtlpSpan:
    return OtlpSpan(
        trace_id=TRACE,
        span_id=CALL_SPAN,
        parent_span_id="",
        name="bls detector",
        service="router",
        start_ns=start_ns,
        end_ns=end_ns,
        status="UNSET",
        attributes=(
            *ATTRS,
            ("triton.bls.outcome", "ok"),
            ("triton.bls.hung", "true"),
            ("triton.bls.hung_after_s", "30.08"),
        ),
        events=(
            OtlpSpanEvent("bls.call.hung", start_ns + 30 * S, (("triton.bls.age_s", "30.08"),)),
        ),
    )


# Copied from a real lab log (tests/detectors/recording.py run, after its window).
LINE = (
    "triton-obs bls: HUNG BLS call router -> detector instance=router_0_7 "
    "parent_request_id='demo-hang-0' child_request_id='demo-hang-0.detector' age=30.08s "
    "deadline=30s trace_id=00000000000000000000000000000000"
)


def test_marker_span_of_a_call_still_hung_is_critical() -> None:
    window = Window(T0, T0 + 40 * S, events=[marker(T0 + 31 * S, 30.08)])
    (found,) = BlsCallHung().detect(window)
    assert found.kind == "bls_call_hung"
    assert found.severity is Severity.CRITICAL
    assert (found.model, found.instance, found.request_id) == (
        "router",
        "router_0_7",
        "demo-hang-0",
    )
    assert found.trace_id == TRACE
    assert "'detector'" in found.summary and "still hung" in found.summary
    assert any("async_exec" in e.detail for e in found.evidence)  # the waiting stack


def test_stub_stderr_line_alone_is_enough() -> None:
    window = Window(T0, T0 + 40 * S, events=[StubOutput(T0 + 31 * S, 1234, LINE)])
    (found,) = BlsCallHung().detect(window)
    assert (found.model, found.request_id) == ("router", "demo-hang-0")
    assert found.trace_id is None  # all zeros: the stub had no tracer
    assert found.evidence[0].ref == "triton.log@1234"


def test_all_sources_of_one_call_are_one_finding_and_an_ended_call_is_a_warning() -> None:
    events = [
        StubOutput(T0 + 31 * S, 1234, LINE),
        marker(T0 + 31 * S, 30.08),
        ended_call(T0 + 1 * S, T0 + 35 * S),
    ]
    (found,) = BlsCallHung().detect(Window(T0, T0 + 40 * S, events=events))
    assert found.severity is Severity.WARNING
    assert "returned after" in found.summary
    assert {e.source for e in found.evidence} == {"log", "otlp"}
    assert found.last_seen_ns == T0 + 35 * S


def test_calls_never_reported_hung_are_not_findings() -> None:
    fine = replace(ended_call(T0, T0 + S), attributes=ATTRS, events=())
    assert BlsCallHung().detect(Window(T0, T0 + 40 * S, events=[fine])) == []


def test_real_hung_calls_are_reported_while_hung(faulty: Window) -> None:
    found = BlsCallHung().detect(faulty)
    hang = [f for f in found if f.request_id == "demo-hang-0"]
    assert hang, [(f.model, f.request_id) for f in found]
    assert hang[0].model == "router" and hang[0].severity is Severity.CRITICAL
    # The child: by model always; by request id when the span (not only the stub's log line)
    # reached the collector in time, which a loaded machine does not promise.
    assert "to 'detector'" in hang[0].summary
    assert any(f.model == "generate" and f.request_id == "demo-deadlock-0" for f in found)


def test_real_healthy_twin_has_no_hung_call(healthy: Window) -> None:
    assert BlsCallHung().detect(healthy) == []
