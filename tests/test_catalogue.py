"""The pathology catalogue is complete: each kind has its detector, test, alert, rule test and
runbook, and everything derived from it agrees with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from observability.catalogue import (
    CATALOGUE,
    FAULTS,
    KINDS,
    SIGNALS,
    Pathology,
    render_markdown,
    sight_table,
)
from observability.demo.scenario import DEMO_STEPS
from observability.detectors.registry import DETECTORS, default_detectors
from observability.findings import KINDS as FINDING_KINDS
from tests import yamlfast

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "dashboards" / "alerts"


def _rules(rule_file: str) -> dict[str, dict[str, Any]]:
    data = yamlfast.load((ALERTS / rule_file).read_text())
    return {
        rule["alert"]: rule
        for group in data["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


@pytest.mark.parametrize("p", CATALOGUE, ids=lambda p: p.kind)
def test_every_kind_has_its_detector_test_alert_and_runbook(p: Pathology) -> None:
    assert DETECTORS[p.kind].__name__ == p.detector
    assert (ROOT / "observability" / "detectors" / f"{p.kind}.py").is_file()
    test = ROOT / p.test
    assert test.is_file(), f"{p.kind}: no test module {p.test}"
    text = test.read_text()
    assert "healthy" in text or "twin" in text, f"{p.kind}: {p.test} has no healthy twin"
    rules = _rules(p.rule_file)
    assert p.alert in rules, f"{p.kind}: no alert {p.alert} in {p.rule_file}"
    annotations = rules[p.alert].get("annotations", {})
    assert annotations.get("runbook_url") == p.runbook_url, f"{p.alert}: runbook_url"
    rule_test = ALERTS / p.rule_file.replace(".rules.yml", ".test.yml")
    assert p.alert in rule_test.read_text(), f"{p.alert}: no unit test in {rule_test.name}"
    assert (ROOT / p.runbook).is_file(), f"{p.kind}: no runbook {p.runbook}"


def test_kinds_and_detectors_come_from_the_catalogue() -> None:
    assert FINDING_KINDS == KINDS
    assert set(DETECTORS) == set(KINDS)
    assert [d.kind for d in default_detectors()] == list(KINDS)


def test_the_demo_injects_every_catalogue_fault_and_expects_its_finding() -> None:
    assert {s.fault for s in DEMO_STEPS} == set(FAULTS)
    for step in DEMO_STEPS:
        kind, model = step.finds
        assert step.fault in {f.knob for f in next(p for p in CATALOGUE if p.kind == kind).faults}
        assert model == FAULTS[step.fault].finds_model


def test_every_request_fault_knob_is_handled_by_a_demo_model() -> None:
    models = "".join(
        p.read_text() for p in (ROOT / "observability/lab/repos/demo").glob("*/1/model.py")
    )
    for knob, fault in FAULTS.items():
        if fault.per_request:
            assert f'"{knob}"' in models, f"no demo model handles fault {knob!r}"


def test_pathologies_doc_is_generated_from_the_catalogue() -> None:
    doc = ROOT / "docs" / "pathologies.md"
    assert doc.read_text() == render_markdown(), (
        "docs/pathologies.md is stale: python -m observability.catalogue > docs/pathologies.md"
    )


def test_readme_sight_table_is_the_catalogues() -> None:
    """What each kind sees without ids, the verbose log or the library: the README shows the
    catalogue's verdicts, so a detector that learns to see more changes one place."""
    assert sight_table() in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("p", CATALOGUE, ids=lambda p: p.kind)
def test_every_kind_says_what_it_needs(p: Pathology) -> None:
    assert p.needs and all(alt <= SIGNALS.keys() for alt in p.needs)
