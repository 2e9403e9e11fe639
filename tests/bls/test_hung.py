"""A call past its deadline is reported while it is still hung, and again when it ends."""

from __future__ import annotations

import threading

from observability import bls
from tests.bls.fakes import FakePbUtils, FakeRequest
from tests.bls.otlp_receiver import OtlpReceiver


def test_hung_call_reported_while_hung_then_at_end(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    release = threading.Event()
    parent = FakeRequest("router", "h1")
    worker = threading.Thread(
        target=bls.exec, args=(parent, FakeRequest("detector", "h1.detector", block=release))
    )
    worker.start()
    try:
        markers = receiver.wait_for(lambda s: s.name == "bls.call.hung", timeout_s=10)
        assert worker.is_alive() and not release.is_set()  # still hung when reported
        (marker,) = markers
        attrs = marker.attributes
        assert attrs["triton.bls.child.model"] == "detector"
        assert attrs["triton.bls.parent.request_id"] == "h1"
        assert attrs["triton.bls.child.request_id"] == "h1.detector"
        assert attrs["triton.bls.age_s"] >= 0.4
        assert "wait" in attrs["triton.bls.stack"]  # the blocked thread's stack
        instrumented._publish()
        assert FakePbUtils.value("triton_obs_bls_hung", child="detector") == 1
        assert FakePbUtils.value("triton_obs_bls_hung_calls_total", child="detector") == 1
    finally:
        release.set()
        worker.join(5)
    (call,) = receiver.wait_for(lambda s: s.name == "bls detector")
    assert call.attributes["triton.bls.hung"] is True
    assert [name for name, _ in call.events] == ["bls.call.hung"]
    assert (marker.trace_id, marker.parent_span_id) == (call.trace_id, call.span_id)
    instrumented._publish()
    assert FakePbUtils.value("triton_obs_bls_hung", child="detector") == 0


def test_hung_async_call_reports_the_waiting_coroutine(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    import asyncio

    release = threading.Event()

    async def waiting_here() -> None:
        await bls.async_exec(
            FakeRequest("router", "h2"), FakeRequest("detector", "h2.d", block=release)
        )

    def run() -> None:
        asyncio.run(waiting_here())

    worker = threading.Thread(target=run)
    worker.start()
    try:
        (marker,) = receiver.wait_for(lambda s: s.name == "bls.call.hung", timeout_s=10)
        assert "waiting_here" in marker.attributes["triton.bls.stack"]
    finally:
        release.set()
        worker.join(5)


def test_fast_calls_are_never_reported(instrumented: bls.Instrumenter) -> None:
    for i in range(20):
        bls.exec(FakeRequest("router", "f"), FakeRequest("detector", f"f.{i}"))
    assert instrumented.watchdog.check() == []


def test_sampled_out_hung_call_is_still_reported(receiver: OtlpReceiver) -> None:
    bls.setup(
        pb_utils=FakePbUtils,
        model="router",
        endpoint=receiver.endpoint,
        sample_ratio=0.0,
        deadline_s=0.3,
        flush_interval_s=0.1,
    )
    release = threading.Event()
    worker = threading.Thread(
        target=bls.exec,
        args=(FakeRequest("router", "h3"), FakeRequest("detector", "h3.detector", block=release)),
    )
    worker.start()
    try:
        (marker,) = receiver.wait_for(lambda s: s.name == "bls.call.hung", timeout_s=10)
        assert worker.is_alive()
        assert marker.attributes["triton.bls.child.request_id"] == "h3.detector"
        assert marker.parent_span_id == marker.attributes["triton.bls.call.span_id"]
        assert marker.trace_id == marker.attributes["triton.bls.call.trace_id"]
    finally:
        release.set()
        worker.join(5)
        bls.shutdown()
    assert receiver.wait_for(lambda s: s.name == "bls detector", timeout_s=0.3) == []
