"""Raising callbacks and swallowed task errors: recorded with their traceback, then re-raised
so asyncio still prints its usual lines."""

from __future__ import annotations

import asyncio
import gc

from observability import bls
from tests.bls.fakes import FakePbUtils, FakeRequest
from tests.bls.otlp_receiver import OtlpReceiver


def test_raising_done_callback_is_a_child_of_its_call(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    handled: list[dict] = []

    def deliver(done: asyncio.Future) -> None:
        raise KeyError("LOGITS")

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _l, c: handled.append(c))
        fut = asyncio.ensure_future(
            bls.async_exec(FakeRequest("router", "c1"), FakeRequest("classifier", "c1.cls"))
        )
        fut.add_done_callback(bls.callback(deliver))
        await asyncio.wait({fut})
        await asyncio.sleep(0.01)

    asyncio.run(run())
    assert handled and isinstance(handled[0]["exception"], KeyError)  # asyncio still told
    (cb,) = receiver.wait_for(lambda s: s.name.startswith("bls.callback"))
    (call,) = receiver.wait_for(lambda s: s.name == "bls classifier")
    assert cb.name.endswith("deliver")
    assert (cb.trace_id, cb.parent_span_id) == (call.trace_id, call.span_id)
    assert "KeyError" in cb.events[0][1]["exception.stacktrace"]
    assert "in deliver" in cb.events[0][1]["exception.stacktrace"]
    instrumented._publish()
    assert FakePbUtils.value("triton_obs_bls_callback_errors_total", kind="callback") == 1


def test_swallowed_task_error_is_captured_when_it_happens(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    async def fetch_scores() -> None:
        await bls.async_exec(FakeRequest("router", "t1"), FakeRequest("classifier", "t1.cls"))
        raise KeyError("LOGITS")

    async def run() -> None:
        task = bls.task(fetch_scores())
        await asyncio.wait({task})
        del task
        gc.collect()

    asyncio.run(run())
    (span,) = receiver.wait_for(lambda s: s.name.startswith("bls.task"))
    (call,) = receiver.wait_for(lambda s: s.name == "bls classifier")
    assert "fetch_scores" in span.name
    assert call.parent_span_id == span.span_id  # BLS calls inside the task are its children
    assert "KeyError" in span.events[0][1]["exception.stacktrace"]
    instrumented._publish()
    assert FakePbUtils.value("triton_obs_bls_callback_errors_total", kind="task") == 1


def test_unwrapped_task_error_is_caught_by_the_loop_handler(
    instrumented: bls.Instrumenter, receiver: OtlpReceiver
) -> None:
    async def broken() -> None:
        raise ValueError("nobody awaits me")

    async def run() -> None:
        await bls.async_exec(FakeRequest("router", "u"), FakeRequest("classifier", "u.c"))
        task = asyncio.ensure_future(broken())
        await asyncio.wait({task})
        del task
        gc.collect()

    asyncio.run(run())
    (span,) = receiver.wait_for(lambda s: s.name == "bls.asyncio.error")
    assert "never retrieved" in span.attributes["triton.bls.asyncio.message"]
    assert "nobody awaits me" in span.events[0][1]["exception.stacktrace"]
