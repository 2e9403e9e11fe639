"""cold_start on the real recordings: classifier reloaded with a lazy warm-up, and the twin
(the same reload with eager initialisation)."""

from __future__ import annotations

from observability.detectors import Window
from observability.detectors.cold_start import ColdStart
from observability.findings import Severity


def test_first_execution_after_reload_is_a_cold_start(faulty: Window) -> None:
    findings = ColdStart().detect(faulty)
    assert [f.model for f in findings] == ["classifier"], [f.to_dict() for f in findings]
    found = findings[0]
    assert found.severity is Severity.WARNING
    assert found.instance == "classifier_0_0"
    # The request that paid for the warm-up is named when the log lets it be joined to the
    # execution (one fresh CI recording could not): then it is a classifier request.
    assert found.request_id is None or found.request_id.endswith(".classifier")
    assert "model_warmup" in found.advice and "initialize" in found.advice


def test_eager_reload_is_not_a_cold_start(healthy: Window) -> None:
    findings = ColdStart().detect(healthy)
    assert [f for f in findings if f.severity.rank >= Severity.WARNING.rank] == []
