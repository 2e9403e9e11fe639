"""Alert rules: promtool checks and unit-tests every rule file, and each file has its tests.

Why promtool and not a Python re-implementation: the rules run in Prometheus, so only its own
engine can prove a firing case fires, a silent case stays silent and a counter reset is
harmless. Debian's ``prometheus`` package ships it (``.ci/run`` installs it).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ALERTS = Path(__file__).resolve().parents[2] / "dashboards" / "alerts"
ROOT = Path(__file__).resolve().parents[2]
RUNBOOK_URL = "https://github.com/triton-observability/triton-observability/blob/main/"
RULE_FILES = sorted(ALERTS.glob("*.rules.yml"))
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool missing: apt-get install -y prometheus (.ci/run does)"
)


def _rules(path: Path) -> list[dict]:
    return [r for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"]]


def test_rule_files_exist() -> None:
    assert {p.name for p in RULE_FILES} >= {
        "triton.rules.yml", "bls.rules.yml", "findings.rules.yml", "collector.rules.yml"
    }  # fmt: skip


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_every_rule_file_has_a_test_file_covering_each_alert(rules: Path) -> None:
    tests = rules.with_name(rules.name.replace(".rules.yml", ".test.yml"))
    assert tests.exists(), f"{rules.name} has no {tests.name} beside it"
    doc = yaml.safe_load(tests.read_text())
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
