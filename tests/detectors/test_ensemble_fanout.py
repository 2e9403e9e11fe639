"""ensemble_fanout on a real Triton 2.51: the miswired ensemble and its valid twin."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.logs.parser import parse_bytes
from observability.detectors import Window
from observability.detectors.ensemble_fanout import EnsembleFanoutDetector
from observability.findings import Finding, Severity
from observability.lab import repository

pytestmark = pytest.mark.lab


def _detect(log: Path) -> list[Finding]:
    events = parse_bytes(log.read_bytes(), year=datetime.now(timezone.utc).year)
    return EnsembleFanoutDetector().detect(Window(0, time.time_ns(), events=events))


def test_miswired_ensemble_is_found_with_the_fix(lab_factory) -> None:
    lab = lab_factory(
        repository("ensemble_fanout_broken"),
        name="broken",
        trace=False,
        exit_on_error=False,
        strict_readiness=False,
        exit_timeout_s=10,
    )
    lab.stop()  # the error is written at load; read the flushed log
    findings = _detect(lab.log_path)
    assert len(findings) == 1, findings
    (finding,) = findings
    assert (finding.kind, finding.model) == ("ensemble_fanout", "fanout_ensemble")
    assert finding.severity is Severity.CRITICAL
    assert "'RIGHT'" in finding.summary and "'OUTPUT'" in finding.summary
    # Refused at start, never served (a refused reload keeps serving: foreign vis_ensemble_*)
    assert "fails with 'unknown model'" in finding.summary
    assert "keeps serving" not in finding.summary
    assert finding.evidence[0].detail.startswith(
        "Poll failed for model directory 'fanout_ensemble': output 'RIGHT' for ensemble"
    )
    assert finding.evidence[0].ref.startswith("triton.log@")
    assert "ensemble_fanout_fixed" in finding.advice and "input_map" in finding.advice


def test_one_tensor_to_two_steps_loads_and_finds_nothing(lab_factory) -> None:
    """The healthy twin: the same fan-out, wired right."""
    lab = lab_factory(repository("ensemble_fanout"), name="fanout", trace=False, exit_timeout_s=10)
    lab.stop()
    assert _detect(lab.log_path) == []
