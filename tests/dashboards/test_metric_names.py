"""The metric linter: every name used by a dashboard panel, a dashboard variable or an alert
rule exists in Triton's catalogue, the BLS catalogue or ``triton-obs watch``'s registry.

Why: a misspelt or renamed metric does not fail in Prometheus or Grafana; it returns nothing,
and an alert on nothing never fires.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboards.grafana import build_all
from tests import yamlfast
from tests.dashboards.known_metrics import known_names, triton_names, watch_names
from tests.dashboards.promql_names import metric_names

ALERTS = Path(__file__).resolve().parents[2] / "dashboards" / "alerts"


def dashboard_exprs() -> Iterator[tuple[str, str]]:
    for name, text in build_all().items():
        board = json.loads(text)
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                yield f"{name}: {panel['title']}", target["expr"]
        for var in board["templating"]["list"]:
            if var["type"] == "query":
                m = re.fullmatch(r"label_values\((.*),\s*\w+\)", var["query"])
                assert m, var["query"]
                yield f"{name}: ${var['name']}", m.group(1)


def rule_exprs() -> Iterator[tuple[str, str]]:
    for path in sorted(ALERTS.glob("*.rules.yml")):
        for group in yamlfast.load(path.read_text())["groups"]:
            for rule in group["rules"]:
                yield f"{path.name}: {rule.get('alert') or rule['record']}", rule["expr"]


def test_known_names_come_from_all_three_sources() -> None:
    known = known_names()
    assert (
        "nv_inference_request_success" in known
        and "nv_inference_request_success_total" not in known
    )  # Triton counters have no _total
    assert "triton_obs_bls_calls_total" in known
    assert {"triton_obs_findings", "triton_obs_log_lines_read_total"} <= watch_names()
    assert "nv_inference_first_response_histogram_ms_bucket" in triton_names()


@pytest.mark.parametrize("source", ["dashboards", "rules"])
def test_every_metric_name_is_known(source: str) -> None:
    exprs = list(dashboard_exprs() if source == "dashboards" else rule_exprs())
    assert exprs
    known = known_names()
    unknown = {
        (where, name) for where, expr in exprs for name in metric_names(expr) - known
    }  # fmt: skip
    assert not unknown, sorted(unknown)


def test_the_linter_catches_an_unknown_name() -> None:
    assert metric_names("rate(nv_inference_request_success_total[5m])") - known_names() == {
        "nv_inference_request_success_total"
    }


def test_every_bls_and_watch_metric_has_a_panel() -> None:
    """The other direction, for our own metrics: nothing we publish goes unseen."""
    used = {n for _, expr in dashboard_exprs() for n in metric_names(expr)}
    from tests.dashboards.known_metrics import bls_names

    ours = bls_names() | {n for n in watch_names() if not n.endswith("_created")}
    # Served but deliberately not charted: sizes and counts that only matter while debugging.
    not_charted = {
        "triton_obs_store_bytes", "triton_obs_events_stored_total", "triton_obs_target_up",
        "triton_obs_otlp_spans_received_total",
        # the standard process collector's rest (memory and CPU are charted)
        "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
        "process_start_time_seconds",
    }  # fmt: skip
    assert ours - used - not_charted == set()
