"""callback_error on the recorded real run: the demo's failing done-callback and task."""

from __future__ import annotations

from observability.detectors import Window
from observability.detectors.callback_error import CallbackErrorDetector, tracebacks
from observability.findings import Severity


def _victim(finding) -> str | None:
    """The request a finding names: its own, or — when two requests were released in the same
    instant on a busy machine, which the log cannot order — the tie it names in the summary."""
    if finding.request_id is not None:
        return finding.request_id
    return "tie" if "cannot tell which request" in finding.summary else None


def test_callback_and_task_exceptions_are_found_on_router(faulty: Window) -> None:
    findings = CallbackErrorDetector().detect(faulty)
    assert [(f.kind, f.model) for f in findings] == [("callback_error", "router")] * 2
    callback, task = findings
    assert _victim(callback) == "demo-callback-0"
    assert _victim(task) in ("demo-task_error-0", "tie")
    if _victim(task) == "tie":  # then the real victim is among those it names
        assert "'demo-task_error-0'" in task.summary
    assert "done-callback raised KeyError: 'LOGITS'" in callback.summary
    assert "asyncio task raised KeyError" in task.summary
    assert callback.severity is Severity.CRITICAL
    assert callback.evidence[0].detail.startswith("Exception in callback ")
    assert callback.evidence[0].detail.endswith("KeyError: 'LOGITS'")
    assert task.evidence[0].detail.startswith("Task exception was never retrieved")
    assert all(f.instance and f.instance.startswith("router_") for f in findings if f.request_id)


def test_traceback_blocks_take_the_model_from_the_innermost_model_file(faulty: Window) -> None:
    blocks = tracebacks(faulty)
    assert [(b.kind, b.model, b.exception) for b in blocks] == [
        ("callback", "router", "KeyError: 'LOGITS'"),
        ("task", "router", "KeyError: 'LOGITS'"),
    ]


def test_healthy_twin_has_no_callback_error(healthy: Window) -> None:
    assert CallbackErrorDetector().detect(healthy) == []
