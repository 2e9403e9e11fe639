"""Generated dashboards: up to date, deterministic, templated, bannered, rates not counters."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dashboards.grafana import DASHBOARDS, GENERATED, build_all
from tests.dashboards.known_metrics import ROOT

BOARDS = build_all()


def _counters() -> set[str]:
    from observability.bls import CATALOGUE

    with (ROOT / "collectors" / "metrics" / "catalogue.csv").open(newline="") as f:
        triton = {r["name"] for r in csv.DictReader(f) if r["type"] == "counter"}
    return triton | {s.name for s in CATALOGUE if s.kind == "COUNTER"}


def test_generated_files_match_a_rebuild() -> None:
    """CI's diff check: the committed JSON is exactly what the Python builds."""
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in GENERATED.glob("*.json")}
    assert set(on_disk) == set(BOARDS), "run `triton-obs dashboards build`"
    stale = [name for name, text in BOARDS.items() if on_disk[name] != text]
    assert not stale, f"stale {stale}: run `triton-obs dashboards build`"


def test_build_is_deterministic() -> None:
    assert build_all() == BOARDS


def test_cli_check_passes(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from dashboards.cli import app; app()", "build"]
    out = subprocess.run([*cmd, "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(BOARDS)
    (tmp_path / "triton-bls.json").write_text("{}")
    out = subprocess.run([*cmd, "--check", "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 1 and "triton-bls.json" in out.stderr


WATCH_PROCESS = {
    "process_resident_memory_bytes",
    "process_cpu_seconds_total",
    "triton_obs_build_info",
}


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_banner_variables_and_layout(name: str) -> None:
    board = json.loads(BOARDS[name])
    assert "triton-obs dashboards build" in board["description"]
    first = board["panels"][0]
    assert first["type"] == "text" and "Do not edit" in first["options"]["content"]
    traces = ["tempo"] if name == "triton-bls.json" else []  # its Explore links' datasource
    assert [v["name"] for v in board["templating"]["list"]] == [
        "datasource", "job", "namespace", "pod", "instance", "model", *traces
    ]  # fmt: skip
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            # All is `.*`, which also matches a label the series lack (namespace and pod
            # off Kubernetes): the boards work with and without the pods' labels.
            assert var["allValue"] == ".*" and var["includeAll"] is True, var["name"]
    ids = [p["gridPos"] for p in board["panels"]]
    assert all(g["x"] >= 0 and g["x"] + g["w"] <= 24 for g in ids)
    for panel in board["panels"]:
        if panel["type"] in ("text", "row"):
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["description"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            assert "$job" in expr and "$instance" in expr, panel["title"]
            # Every selector is narrowed to the chosen namespaces and pods, but watch's own
            # process series (one per watch, not per Triton pod).
            for name, selector in re.findall(r"(\w*)(\{[^{}]*\})", expr):
                if "$job" in selector and name not in WATCH_PROCESS:
                    assert 'namespace=~"$namespace"' in selector, (panel["title"], selector)
                    assert 'pod=~"$pod"' in selector, (panel["title"], selector)


def test_counters_are_only_used_through_rate_or_increase() -> None:
    counters = _counters()
    for name, text in BOARDS.items():
        for panel in json.loads(text)["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                for counter in counters:
                    for m in re.finditer(rf"\b{counter}\b", expr):
                        before = expr[: m.start()].rstrip()
                        assert re.search(r"\b(rate|increase)\($", before), (
                            f"{name}: {panel['title']}: raw counter {counter}"
                        )


FLEET_ROWS = {
    "triton-findings.json": ["Pods with a hung request", "Pods with findings now"],
    "triton-overview.json": ["Top 10 pods by queue time per request"],
    "triton-bls.json": ["Pods with a hung BLS call"],
}


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_a_fleet_row_comes_first(name: str) -> None:
    """Each board opens on the whole fleet (issue 16): pods in trouble now, top pods; their
    queries count or rank pods (namespace and pod), never models alone."""
    panels = json.loads(BOARDS[name])["panels"]
    rows = [p for p in panels if p["type"] == "row"]
    assert rows[0]["title"].startswith("Fleet")
    first = panels.index(rows[0])
    fleet = panels[first + 1 : panels.index(rows[1])]
    titles = [p["title"] for p in fleet]
    assert set(FLEET_ROWS[name]) <= set(titles), titles
    for panel in fleet:
        for target in panel["targets"]:
            assert re.search(r"by \(namespace, pod, (instance|target)\)", target["expr"]), panel[
                "title"
            ]
            if panel["type"] == "stat" and panel["title"].startswith("Pods with"):
                # A count of pods reads 0, not "No data", while none is in trouble.
                assert target["expr"].endswith(" or vector(0)"), panel["title"]
            if "top" in panel["title"].lower():
                assert target["expr"].startswith("topk(10, "), panel["title"]


def test_fleet_counts_are_over_pods_from_findings() -> None:
    findings = {p["title"]: p for p in json.loads(BOARDS["triton-findings.json"])["panels"]}
    (expr,) = [t["expr"] for t in findings["Pods with findings"]["targets"]]
    assert expr.startswith("count(sum by (namespace, pod, target) (triton_obs_findings{")
    (expr,) = [t["expr"] for t in findings["Pods with a hung request"]["targets"]]
    assert "triton_obs_hung_requests{" in expr


def test_three_dashboards() -> None:
    assert set(DASHBOARDS) == {"triton-overview", "triton-bls", "triton-findings"}
