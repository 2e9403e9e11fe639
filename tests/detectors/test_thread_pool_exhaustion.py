"""thread_pool_exhaustion on the real recordings: router fans 64 calls out to detector; the
foreign pz pipeline's parents run together."""

from __future__ import annotations

import builtins
from collections import Counter

import pytest

from observability.detectors import Window
from observability.detectors import thread_pool_exhaustion as tpe
from observability.detectors.thread_pool_exhaustion import (
    ThreadPoolExhaustion,
    fan_outs,
    idless_fan_outs,
)
from observability.findings import Severity
from tests.foreign.parsed import sliding_window, window


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


def test_parents_running_together_share_their_calls() -> None:
    """pz_pool_exhausted: two id-less clients fell in step, so every pz_worker call was made
    while both pz_orchestrator instances ran (0.15 ms apart). Read as one, their calls came
    in waves of 4, 2 per parent: each request's 12 calls through its 2-thread pool. With four
    clients (pz_healthy_busy) batches overlap without running together, and 4 calls a request
    are one wave: nothing."""
    found = idless_fan_outs(window("pz_pool_exhausted"), min_children=8)
    together = [f for f in found if f.together]
    assert together, "no parents read as running together"
    assert {frozenset(f.together) for f in together} == {
        frozenset({"pz_orchestrator_0_0", "pz_orchestrator_0_1"})
    }
    assert {f.plateau for f in together} == {2}
    shares = Counter(f.children for f in together)  # a call at a batch's edge is left out
    assert shares.most_common(1)[0][0] == 12 and min(shares) >= 10, shares
    (finding,) = ThreadPoolExhaustion().detect(window("pz_pool_exhausted"))
    assert "running together" in finding.summary and "about 2 ran at once" in finding.summary
    for healthy in ("pz_healthy", "pz_healthy_busy"):
        assert ThreadPoolExhaustion().detect(window(healthy)) == [], healthy


@pytest.mark.parametrize("at_s", [28, 30])
def test_a_batch_begun_before_a_sliding_window_does_not_lend_its_calls(at_s: float) -> None:
    """cx_healthy, 28 s in with 20 s of evidence: cx_gateway_0_1's batch began before the
    window (only its release is in it) while cx_gateway_0_0's was seen whole. Its calls were
    read as the seen batch's, 8 calls at most 2 at once: a 2-thread pool that is not there.
    No call is anyone's while a caller's batch the window does not hold ran."""
    assert ThreadPoolExhaustion().detect(sliding_window("cx_healthy", at_s)) == []


@pytest.mark.parametrize(
    ("name", "at_s"), [("pz_pool_exhausted_one_client", 30), ("asr_router_pool_exhaustion", 20)]
)
def test_an_exhausted_pool_is_found_in_a_sliding_window(name: str, at_s: float) -> None:
    found = ThreadPoolExhaustion().detect(sliding_window(name, at_s))
    assert [f.kind for f in found] == ["thread_pool_exhaustion"]


def test_the_finding_does_not_follow_memory_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parents running together are grouped by their ids (``id()``); the finding named them
    in that order where they began in one instant, so the same window gave another finding
    from run to run. Reversing the ids' order must change nothing."""
    whole = window("pz_pool_exhausted")

    def detected() -> list[dict[str, object]]:
        fresh = Window(
            whole.since_ns, whole.until_ns, events=whole.events,
            clock_offset_ns=whole.clock_offset_ns, log_read=whole.log_read,
        )  # fmt: skip
        return [f.to_dict() for f in ThreadPoolExhaustion().detect(fresh)]

    before = detected()
    monkeypatch.setattr(tpe, "id", lambda obj: -builtins.id(obj), raising=False)
    assert detected() == before
