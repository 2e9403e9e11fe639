"""Spans, attributes and counters of BLS calls, with fakes and a real OTLP/HTTP receiver."""

from __future__ import annotations

import asyncio
import threading

import pytest

from observability import bls
from tests.bls.fakes import FakePbUtils, FakeRequest, FakeResponse, FakeTensor
from tests.bls.otlp_receiver import OtlpReceiver

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _publish(inst: bls.Instrumenter) -> None:
    inst._publish()


def test_not_set_up_is_a_pass_through() -> None:
    bls.shutdown()
    parent, child = FakeRequest("router", "p"), FakeRequest("detector", "p.detector")
    assert bls.active() is None
    assert bls.exec(parent, child) is child._response

    async def go() -> object:
        return await bls.async_exec(parent, child)

    assert asyncio.run(go()) is child._response
    fn = lambda: 1  # noqa: E731
    assert bls.callback(fn) is fn
    with bls.call(parent, child) as scope:
        scope.response = child.exec()


def test_sync_exec_span_attributes_and_counter(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    parent = FakeRequest("router", "r1")
    child = FakeRequest("detector", "r1.detector")
    assert bls.exec(parent, child).has_error() is False
    bad = FakeRequest("classifier", "r1.classifier", response=FakeResponse(error="boom"))
    assert bls.exec(parent, bad).has_error()
    with pytest.raises(RuntimeError):
        bls.exec(parent, FakeRequest("preprocess", "r1.pre", raises=RuntimeError("stub died")))
    spans = {s.name: s for s in receiver.wait_for(lambda s: s.name.startswith("bls "), 3)}
    ok = spans["bls detector"].attributes
    assert ok["triton.bls.parent.model"] == "router"
    assert ok["triton.bls.parent.instance"] == "router_0_0"
    assert ok["triton.bls.child.model"] == "detector"
    assert ok["triton.bls.parent.request_id"] == "r1"
    assert ok["triton.bls.child.request_id"] == "r1.detector"
    assert ok["triton.bls.inputs"] == ["FEATURES FP32 [1,64]"]
    assert ok["triton.bls.outputs"] == ["OUT FP32 [1,16]"]
    assert ok["triton.bls.outcome"] == "ok"
    assert spans["bls classifier"].attributes["triton.bls.outcome"] == "error"
    assert spans["bls classifier"].status_message == "boom"
    pre = spans["bls preprocess"]
    assert pre.attributes["triton.bls.outcome"] == "exception"
    assert "stub died" in pre.events[0][1]["exception.stacktrace"]
    assert spans["bls detector"].resource["service.name"] == "router"
    _publish(instrumented)
    assert FakePbUtils.value("triton_obs_bls_calls_total", child="detector", outcome="ok") == 1
    assert FakePbUtils.value("triton_obs_bls_calls_total", child="classifier", outcome="error") == 1
    assert (
        FakePbUtils.value("triton_obs_bls_calls_total", child="preprocess", outcome="exception")
        == 1
    )
    assert FakePbUtils.value("triton_obs_bls_thread_pool_capacity", pool="python_backend") == 32


def test_async_exec_records_executor_wait_and_parents_on_triton_trace(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    parent = FakeRequest("router", "r2", traceparent=f'{{"traceparent": "{TRACEPARENT}"}}')

    async def run() -> list:
        return await asyncio.gather(
            *(bls.async_exec(parent, FakeRequest("detector", f"r2.detector.{i}")) for i in range(8))
        )

    assert len(asyncio.run(run())) == 8
    spans = receiver.wait_for(lambda s: s.name == "bls detector", 8)
    assert {s.trace_id for s in spans} == {"0af7651916cd43dd8448eb211c80319c"}
    assert {s.parent_span_id for s in spans} == {"b7ad6b7169203331"}
    assert all(s.attributes["triton.bls.executor_wait_s"] >= 0 for s in spans)
    _publish(instrumented)
    assert FakePbUtils.value("triton_obs_bls_executor_waits_total") == 8
    assert FakePbUtils.value("triton_obs_bls_inflight_peak") >= 1
    assert FakePbUtils.value("triton_obs_bls_inflight") == 0


def test_traced_execute_makes_the_request_span_the_parent(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    class Model:
        @bls.traced_execute
        async def execute(self, requests: list) -> list:
            out = []
            for request in requests:
                out.append(await bls.async_exec(request, FakeRequest("classifier", "x")))
                with bls.call(request, FakeRequest("detector", "y")) as scope:
                    scope.response = FakeResponse([FakeTensor("BOXES", (1, 16))])
            return out

    requests = [FakeRequest("router", "a"), FakeRequest("router", "b")]
    assert len(asyncio.run(Model().execute(requests))) == 2
    roots = receiver.wait_for(lambda s: s.name == "router execute", 2)
    kids = receiver.wait_for(lambda s: s.name in ("bls classifier", "bls detector"), 4)
    by_request = {r.attributes["triton.request_id"]: r for r in roots}
    for kid in kids:
        root = by_request[kid.attributes["triton.bls.parent.request_id"]]
        assert (kid.trace_id, kid.parent_span_id) == (root.trace_id, root.span_id)


def test_decoupled_stream_ends_with_the_stream(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    child = FakeRequest("decoder", "s.decoder", stream=[FakeResponse(), FakeResponse()])
    stream = bls.stream_exec(FakeRequest("generate", "s"), child)
    assert len(instrumented.inflight) == 1
    assert len(list(stream)) == 2
    assert len(instrumented.inflight) == 0
    (span,) = receiver.wait_for(lambda s: s.name == "bls decoder")
    assert span.attributes["triton.bls.responses"] == 2


def test_sampled_out_calls_still_count(receiver: OtlpReceiver) -> None:
    bls.setup(pb_utils=FakePbUtils, endpoint=receiver.endpoint, sample_ratio=0.0, model="m")
    try:
        bls.exec(FakeRequest("router", "z"), FakeRequest("detector", "z.d"))
        bls.active()._publish()
        assert FakePbUtils.value("triton_obs_bls_calls_total", parent="m", child="detector") == 1
    finally:
        bls.shutdown()
    assert receiver.wait_for(lambda s: s.name == "bls detector", timeout_s=0.3) == []


def test_call_waiting_for_a_thread_is_in_flight(instrumented: bls.Instrumenter) -> None:
    release = threading.Event()
    parent = FakeRequest("router", "w")

    def run() -> None:
        bls.exec(parent, FakeRequest("detector", "w.d", block=release))

    worker = threading.Thread(target=run)
    worker.start()
    try:
        for _ in range(200):
            if len(instrumented.inflight):
                break
            release.wait(0.01)
        instrumented.refresh_gauges()
        assert instrumented.metrics.gauges[("triton_obs_bls_inflight", ("router", "router_0_0"))]
    finally:
        release.set()
        worker.join(5)


def test_the_users_current_opentelemetry_span_is_the_parent(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    from opentelemetry import context
    from opentelemetry.sdk.trace import TracerProvider

    user = TracerProvider().get_tracer("user")
    with user.start_as_current_span("user work") as mine:
        bls.exec(FakeRequest("router", "o1"), FakeRequest("detector", "o1.d"))
    ctx = mine.get_span_context()
    (span,) = receiver.wait_for(lambda s: s.name == "bls detector")
    assert (span.trace_id, span.parent_span_id) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")
    assert not context.get_current()  # nothing of ours left attached


class _Nameless(FakeRequest):
    """2.51's ``InferenceRequest``: no ``model_name()`` to ask."""

    model_name = None  # type: ignore[assignment]


def test_a_child_without_an_id_is_named_by_what_built_it(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    """Without request ids the child's model cannot be read from its id: what
    ``bls.child_request`` noted when it built the request names it, else ``model=``."""
    from observability.bls.calls import remember_model

    parent = FakeRequest("router", "")
    noted = _Nameless("detector", "")
    remember_model(noted, "detector")
    bls.exec(parent, noted)
    bls.exec(parent, _Nameless("classifier", ""), model="classifier")
    bls.exec(parent, _Nameless("preprocess", ""))
    names = {s.name for s in receiver.wait_for(lambda s: s.name.startswith("bls "), 3)}
    assert names == {"bls detector", "bls classifier", "bls unknown"}
