"""bls_deadlock on the recorded real run (generate calling its own only instance) and on
hand-written logs for the shapes the demo does not produce (A -> B -> A, a free instance)."""

from __future__ import annotations

from observability import events as ev
from observability.detectors import Window
from observability.detectors.bls_deadlock import BlsDeadlockDetector
from observability.findings import Severity

S = 1_000_000_000


def test_generate_calling_its_only_instance_is_a_deadlock(faulty: Window) -> None:
    findings = BlsDeadlockDetector().detect(faulty)
    assert len(findings) == 1, findings
    (f,) = findings
    assert (f.kind, f.model, f.request_id, f.instance) == (
        "bls_deadlock",
        "generate",
        "demo-deadlock-0",
        "generate_0_0",
    )
    assert f.severity is Severity.CRITICAL
    assert "'demo-deadlock-0.generate'" in f.summary
    assert any("demo-deadlock-0.generate" in e.detail for e in f.evidence)


def test_healthy_twin_has_no_deadlock(healthy: Window) -> None:
    assert BlsDeadlockDetector().detect(healthy) == []


class _Log:
    """A hand-written 2.51 verbose log, one record per call, one millisecond apart."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self.at = 1_000 * S

    def _h(self) -> ev.LogRecord:
        self.at += 1_000_000
        return ev.LogRecord(self.at, ev.LogLevel.INFO, "x.cc", 1, len(self.events) * 100)

    def start(self, rid: str, model: str, instance: str | None) -> None:
        self.events.append(ev.RequestPrepared(self._h(), rid, model, 1, 0, 0))
        self.events.append(ev.RequestStateChange(self._h(), rid, "INITIALIZED", "PENDING"))
        if instance is not None:
            self.events.append(ev.RequestStateChange(self._h(), rid, "PENDING", "EXECUTING"))
            self.events.append(ev.InstanceExecuting(self._h(), model, instance, 1))

    def window(self, after_s: float) -> Window:
        return Window(0, self.at + int(after_s * S), events=self.events)


def test_a_cycle_through_two_models_is_found() -> None:
    log = _Log()
    log.start("r1", "a", "a_0_0")
    log.start("r1.b", "b", "b_0_0")
    log.start("r1.b.a", "a", None)
    findings = BlsDeadlockDetector().detect(log.window(after_s=30))
    assert [(f.model, f.request_id) for f in findings] == [("a", "r1")]
    assert "a (r1) -> b (r1.b)" in findings[0].summary


def test_a_free_instance_breaks_the_cycle() -> None:
    log = _Log()
    log.start("other", "a", "a_0_1")  # a second instance of a exists ...
    log.events.append(ev.RequestStateChange(log._h(), "other", "EXECUTING", "RELEASED"))
    log.start("r1", "a", "a_0_0")  # ... and is free: the child is just queued, not deadlocked
    log.start("r1.a", "a", None)
    assert BlsDeadlockDetector().detect(log.window(after_s=30)) == []


def test_two_parents_each_holding_one_of_two_instances_deadlock() -> None:
    log = _Log()
    log.start("p1", "a", "a_0_0")
    log.start("p2", "a", "a_0_1")
    log.start("p1.a", "a", None)
    log.start("p2.a", "a", None)
    found = BlsDeadlockDetector().detect(log.window(after_s=30))
    assert sorted(f.request_id or "" for f in found) == ["p1", "p2"]


def test_a_child_queued_briefly_is_not_yet_a_deadlock() -> None:
    log = _Log()
    log.start("r1", "a", "a_0_0")
    log.start("r1.a", "a", None)
    assert BlsDeadlockDetector(min_pending_s=5).detect(log.window(after_s=1)) == []
