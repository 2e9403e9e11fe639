"""thread_pool_exhaustion on the real recordings: router fans 64 calls out to detector."""

from __future__ import annotations

from observability.detectors import Window
from observability.detectors.thread_pool_exhaustion import ThreadPoolExhaustion, fan_outs
from observability.findings import Severity


def test_fanout_parent_waits_for_executor_threads(faulty: Window) -> None:
    findings = ThreadPoolExhaustion().detect(faulty)
    assert [f.model for f in findings] == ["router"], [f.to_dict() for f in findings]
    found = findings[0]
    assert found.request_id == "demo-fanout-0"
    assert found.severity is Severity.WARNING
    assert "'detector'" in found.summary
    assert "Semaphore" in found.advice and "thread-pool-size" in found.advice


def test_fanout_arrives_in_waves_of_the_pool_size(faulty: Window) -> None:
    (fan,) = [f for f in fan_outs(faulty, min_children=8) if f.parent_id == "demo-fanout-0"]
    assert fan.child_models[0] == ("detector", 64)
    assert fan.plateau < 32 <= fan.children  # asyncio's executor, not the python pool
    assert fan.waves >= fan.children // (2 * fan.plateau)


def test_healthy_twin_has_no_exhausted_pool(healthy: Window) -> None:
    findings = ThreadPoolExhaustion().detect(healthy)
    assert [f for f in findings if f.severity.rank >= Severity.WARNING.rank] == []
