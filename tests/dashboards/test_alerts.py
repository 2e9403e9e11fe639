"""Alert rules: promtool checks and unit-tests every rule file, and each file has its tests.

Why promtool and not a Python re-implementation: the rules run in Prometheus, so only its own
engine can prove a firing case fires, a silent case stays silent and a counter reset is
harmless. Debian's ``prometheus`` package ships it (``.ci/run`` installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import yamlfast

ALERTS = Path(__file__).resolve().parents[2] / "dashboards" / "alerts"
ROOT = Path(__file__).resolve().parents[2]
RUNBOOK_URL = "https://github.com/triton-observability/triton-observability/blob/main/"
RULE_FILES = sorted(ALERTS.glob("*.rules.yml"))
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool missing: apt-get install -y prometheus (.ci/run does)"
)


def _rules(path: Path) -> list[dict]:
    """The alerting rules of a file (recording rules are tested with promql_expr_test)."""
    return [
        r for g in yamlfast.load(path.read_text())["groups"] for r in g["rules"] if "alert" in r
    ]


def test_rule_files_exist() -> None:
    assert {p.name for p in RULE_FILES} >= {
        "triton.rules.yml", "bls.rules.yml", "findings.rules.yml", "collector.rules.yml"
    }  # fmt: skip


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_every_rule_file_has_a_test_file_covering_each_alert(rules: Path) -> None:
    tests = rules.with_name(rules.name.replace(".rules.yml", ".test.yml"))
    assert tests.exists(), f"{rules.name} has no {tests.name} beside it"
    doc = yamlfast.load(tests.read_text())
    assert doc["rule_files"] == [rules.name]
    firing: set[str] = set()
    silent: set[str] = set()
    for case in doc["tests"]:
        for t in case.get("alert_rule_test", []):
            (firing if t["exp_alerts"] else silent).add(t["alertname"])
    names = {r["alert"] for r in _rules(rules)}
    assert names - firing == set(), "alerts without a firing case"
    assert names - silent == set(), "alerts without a silent case (exp_alerts: [])"


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_every_alert_is_annotated_with_a_runbook_that_exists(rules: Path) -> None:
    for rule in _rules(rules):
        ann = rule["annotations"]
        assert ann["summary"] and ann["description"], rule["alert"]
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        runbook = ann["runbook_url"]
        assert runbook == f"{RUNBOOK_URL}docs/runbooks/{rule['alert']}.md", runbook
        path = ROOT / runbook.removeprefix(RUNBOOK_URL)
        assert path.is_file(), f"{runbook}: no such file in the repository"
        assert path.read_text().startswith(f"# {rule['alert']}"), path
        if "model" not in rule["expr"] and "parent" not in rule["expr"]:
            continue  # per-target alerts (up, collector) have no model label
        assert "$labels.model" in ann["description"], rule["alert"]


@needs_promtool
def test_promtool_check_rules() -> None:
    out = subprocess.run(
        [PROMTOOL, "check", "rules", *map(str, RULE_FILES)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


@needs_promtool
def test_promtool_test_rules() -> None:
    tests = sorted(ALERTS.glob("*.test.yml"))
    out = subprocess.run(
        [PROMTOOL, "test", "rules", *(p.name for p in tests)],
        capture_output=True, text=True, timeout=120, cwd=ALERTS,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == len(tests), out.stdout


AMTOOL = shutil.which("amtool")


@pytest.mark.skipif(
    AMTOOL is None, reason="amtool missing: apt-get install prometheus-alertmanager"
)
def test_amtool_check_config_and_inhibitions_stay_per_pod() -> None:
    config = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
    run = subprocess.run([AMTOOL, "check-config", str(config)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    doc = yamlfast.load(config.read_text())
    down = next(
        r for r in doc["inhibit_rules"] if 'alertname="TritonTargetDown"' in r["source_matchers"]
    )
    assert down["equal"] == ["namespace", "pod"]  # one Triton down silences only its own


def test_every_aggregation_keeps_namespace_pod_and_instance() -> None:
    """On Kubernetes an alert must name the pod: no `sum by` may drop it."""
    for path in RULE_FILES:
        for clause in re.findall(r"(?:by|on) \(([^)]*)\)", path.read_text()):
            labels = {x.strip() for x in clause.split(",")}
            if labels >= {"model"} and labels != {"namespace", "pod", "model"}:
                assert {"namespace", "pod", "instance"} <= labels, (path.name, clause)


def test_render_changes_only_the_job_selectors_and_the_runbook_base(tmp_path: Path) -> None:
    from dashboards.alerts_render import render, render_all

    assert [p.read_text() for p in render_all(tmp_path / "same")] == [
        p.read_text() for p in RULE_FILES
    ]
    written = render_all(
        tmp_path / "mine",
        triton_job='job=~"triton-.*"',
        watch_job='job="obs"',
        runbook_base="https://wiki.example/t",
    )
    text = "".join(p.read_text() for p in written)
    assert 'job="triton"' not in text and 'job="triton-obs"' not in text
    assert 'up{job=~"triton-.*"}' in text and 'up{job="obs"}' in text
    assert "https://wiki.example/t/docs/runbooks/TritonTargetDown.md" in text
    if PROMTOOL is not None:
        check = subprocess.run(
            [PROMTOOL, "check", "rules", *map(str, written)], capture_output=True
        )
        assert check.returncode == 0, check.stdout
    with pytest.raises(ValueError, match="one label matcher"):
        render("x", triton_job="triton")
