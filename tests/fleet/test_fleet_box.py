"""Issue 16's fleet in a box: three lab Tritons as kubelet-logged pods, one ``watch --pod-logs``,
a real Prometheus with the repository's rules, a hang in one pod only.

One run (:class:`~observability.demo.fleet.FleetBox`, what ``triton-obs demo --fleet 3`` runs)
is measured whole by the module fixture and torn down; the tests read what it measured:

- the hang's alert fires for that pod and no alert fires for another (``/api/v1/alerts``);
- every Grafana panel's query, restricted to one pod (a ``pod="…"`` matcher added to each of
  its selectors), returns data from that Prometheus for each pod; the hang's panels (findings,
  hung BLS calls) have it for the hung pod and nothing but zeros for the others; the panels of
  ``watch``'s own process (memory, CPU, version: one process for the fleet) return data
  unrestricted;
- the app's Fleet page lists that pod only (``streamlit.testing`` on the real Prometheus and
  watch, and the real app server in headless Chromium when it is installed) and opens its
  finding, the request's timeline and health through the watch API.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from observability.demo.fleet import FleetBox, FleetOptions
from observability.store import Store
from tests.dashboards.live_prometheus import (
    NEEDS_PROMETHEUS,
    Prometheus,
    has_finite_value,
    panel_queries,
    resolve_variables,
    substitute,
)
from tests.dashboards.promql_names import metric_names

pytestmark = [pytest.mark.lab, NEEDS_PROMETHEUS]

PODS = 3
HUNG = 1
REQUEST = "fleet-hang"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "fleet"
PROCESS_FAMILIES = {
    "process_resident_memory_bytes",
    "process_cpu_seconds_total",
    "triton_obs_build_info",
}
"""Series of watch's process, once on its page without target labels: one per watch."""
NOT_INJECTED = {
    "triton_obs_bls_callback_errors_total": "no callback fault injected",
    "triton_obs_bls_streams_stalled_total": "no stream stalled",
    "triton_obs_scrape_failures_total": "no Triton went down",
}
"""Families that exist only after a fault this run does not inject, in any pod."""
HANG_ONLY = {
    "triton_obs_findings": "a healthy pod has no finding",
    "triton_obs_bls_hung": "the in-model library's hung BLS calls",
    "triton_obs_bls_hung_calls_total": "the in-model library's hung BLS calls",
}
"""Families of the hang: the hung pod's panels have them, the other pods' must not."""


@dataclass
class FleetRun:
    pods: list[str]
    hung: str
    firing: list[dict[str, str]] = field(default_factory=list)
    fired_after_s: float | None = None
    panels: dict[tuple[str, str, str], dict[str, bool]] = field(default_factory=dict)
    """(board, title, expr) -> pod ("" unrestricted) -> had a finite sample; and
    ``"<pod>>0"`` -> had a sample other than 0."""
    api: dict[str, object] = field(default_factory=dict)
    app_tables: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    app_texts: str = ""
    browser_dom: str | None = None
    rotations: dict[str, int] = field(default_factory=dict)
    watch_cost: dict[str, float] = field(default_factory=dict)
    """The watch's CPU (s/s), RSS (MiB) and log lines/s over the run's last 30 s."""
    notes: list[str] = field(default_factory=list)


def pod_scoped(expr: str, pod: str) -> str:
    """``expr`` with ``pod="<pod>"`` added to every selector (each ``{…}`` of the query)."""
    return expr.replace("{", f'{{pod="{pod}",')


def _get_json(url: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _panels(box: FleetBox, run: FleetRun, start: float) -> None:
    prom = Prometheus(box.root / "prometheus", {}, [])
    prom.port = box.prom_port
    end = time.time()
    variables = {}
    for board, selectors in {p.board: p.variables for p in panel_queries()}.items():
        try:
            variables[board] = resolve_variables(prom, selectors)
        except AssertionError as err:
            run.notes.append(f"{board}: {err}")
    for panel in panel_queries():
        expr = substitute(panel.expr, variables.get(panel.board, {}), 2, end - start)
        per_pod = {"": has_finite_value(prom.query_range(expr, start, end, 2))}
        for pod in run.pods:
            result = prom.query_range(pod_scoped(expr, pod), start, end, 2)
            per_pod[pod] = has_finite_value(result)
            per_pod[f"{pod}>0"] = _nonzero(result)
        run.panels[(panel.board, panel.title, expr)] = per_pod


def _nonzero(result: list[dict]) -> bool:
    """A sample other than 0 (a fleet-wide count scoped to a healthy pod is ``0``)."""
    for series in result:
        for _, value in series.get("values") or [series["value"]]:
            number = float(value)
            if number == number and number != 0:  # not NaN, not 0
                return True
    return False


def _watch_cost(box: FleetBox) -> dict[str, float]:
    """What the one watch of three real Tritons costs, from Prometheus's scrapes of it."""
    queries = {
        "cpu_s_per_s": 'rate(process_cpu_seconds_total{job="triton-obs"}[30s])',
        "rss_mib": 'process_resident_memory_bytes{job="triton-obs"} / 2^20',
        "lines_per_s": 'sum(rate(triton_obs_log_lines_read_total{job="triton-obs"}[30s]))',
    }
    cost = {}
    for name, expr in queries.items():
        result = box.prom_api("query", query=expr)["result"]
        cost[name] = round(float(result[0]["value"][1]), 3) if result else float("nan")
    return cost


def _app(box: FleetBox, run: FleetRun) -> None:
    """The Fleet page through ``streamlit.testing``, on the live Prometheus and watch."""
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from tests.app.helpers import MAIN, texts

    saved = {
        k: os.environ.get(k) for k in ("TRITON_OBS_TRIAGE_PROMETHEUS", "TRITON_OBS_TRIAGE_WATCH")
    }
    os.environ["TRITON_OBS_TRIAGE_PROMETHEUS"] = box.prometheus_url
    os.environ["TRITON_OBS_TRIAGE_WATCH"] = box.watch_url
    try:
        at = AppTest.from_file(str(MAIN), default_timeout=60)
        at.query_params["page"] = "fleet"
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        run.app_tables = {
            name: rows
            for name, rows in zip(
                ("pods", "findings", "timeline", "health"),
                (f.value.to_dict("records") for f in at.dataframe),
                strict=False,
            )
        }
        run.app_texts = texts(at)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _browser(box: FleetBox, run: FleetRun, tmp: Path) -> None:
    from tests.app.browser import CHROMIUM, app_server, capture

    if CHROMIUM is None:
        run.notes.append("chromium missing: the Fleet page was not opened in a browser")
        return
    empty = tmp / "empty.db"
    Store(empty).close()
    os.environ["TRITON_OBS_TRIAGE_PROMETHEUS"] = box.prometheus_url
    os.environ["TRITON_OBS_TRIAGE_WATCH"] = box.watch_url
    try:
        with app_server(empty, None, tmp / "app-server.log") as url:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            pod = urllib.parse.quote(f"ml/{run.hung}", safe="")
            run.browser_dom = capture(
                f"{url}/?page=fleet&pod={pod}", REQUEST, ARTIFACTS / "fleet.png", tmp / "profile"
            )
            (ARTIFACTS / "fleet.html").write_text(run.browser_dom)
    finally:
        os.environ.pop("TRITON_OBS_TRIAGE_PROMETHEUS", None)
        os.environ.pop("TRITON_OBS_TRIAGE_WATCH", None)


def _measure(root: Path) -> Iterator[FleetRun]:
    # A trace backend that is down (bound, never listening): the in-model library's span
    # exports fail and count triton_obs_bls_dropped_spans_total, as in tests/dashboards.
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    endpoint = f"http://127.0.0.1:{dead.getsockname()[1]}/v1/traces"
    box = FleetBox(FleetOptions(pods=PODS, run_dir=root / "box", hang_pod=HUNG,
                                rotate_bytes=256 * 1024, hang_s=90,
                                env={"TRITON_OBS_ENDPOINT": endpoint}))  # fmt: skip
    try:
        box.start()
        start = time.time()
        run = FleetRun([p.name for p in box.pods], box.pods[HUNG].name)
        assert box.wait_for(
            lambda: len(box.targets_up()) == PODS + 1 and all(box.targets_up().values()), 30
        ), box.targets_up()
        time.sleep(5)  # some healthy scrapes and detection passes first
        box.inject_hang(HUNG, REQUEST)
        injected = time.monotonic()
        fired = box.wait_for(
            lambda: any(a["alertname"] == "TritonHungRequests" for a in box.firing()), 60
        )
        if fired:
            run.fired_after_s = time.monotonic() - injected
        time.sleep(6)  # long enough for another pod's alert to fire, were it wrongly pending
        run.firing = box.firing()
        base = box.watch_url
        target = urllib.parse.quote(f"ml/{run.hung}", safe="")
        for name, path in {
            "targets": "/api/v1/targets",
            "findings": f"/api/v1/findings?target={target}",
            "request": f"/api/v1/requests/{REQUEST}?target={target}",
            "health": f"/api/v1/health?target={target}",
            **{
                f"findings:{p}": f"/api/v1/findings?target=ml%2F{p}"
                for p in run.pods
                if p != run.hung
            },
        }.items():
            run.api[name] = _get_json(base + path)
        _panels(box, run, start)
        run.watch_cost = _watch_cost(box)
        _app(box, run)
        _browser(box, run, root)
        run.rotations = box.rotations()
        yield run
    finally:
        box.stop()
        dead.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetRun]:
    gen = _measure(tmp_path_factory.mktemp("fleet"))
    run = next(gen)
    gen.close()
    yield run


def test_the_hang_alert_fires_for_that_pod_and_no_other(fleet: FleetRun) -> None:
    assert fleet.fired_after_s is not None, fleet.firing
    hung = [a for a in fleet.firing if a["alertname"] == "TritonHungRequests"]
    assert {(a["namespace"], a["pod"], a["model"]) for a in hung} == {("ml", fleet.hung, "router")}
    others = [a for a in fleet.firing if a.get("pod") and a["pod"] != fleet.hung]
    assert not others, others
    print(f"TritonHungRequests fired {fleet.fired_after_s:.1f} s after the hang; {fleet.firing}")


def test_every_panel_returns_per_pod_data(fleet: FleetRun) -> None:
    assert not fleet.notes or all("chromium" in n for n in fleet.notes), fleet.notes
    from tests.dashboards.test_prometheus_integration import ABSENT_ON_CPU_251, NO_FAULT_INJECTED

    cannot = set(ABSENT_ON_CPU_251) | set(NO_FAULT_INJECTED)
    missing = []
    checked = 0
    for (board, title, expr), per_pod in sorted(fleet.panels.items()):
        names = metric_names(expr)
        if names & cannot or names & set(NOT_INJECTED):
            continue
        if names & PROCESS_FAMILIES:
            if not per_pod[""]:
                missing.append(f"{board}: {title}: no data at all")
            continue
        if names & set(HANG_ONLY):
            leaked = [p for p in fleet.pods if p != fleet.hung and per_pod[f"{p}>0"]]
            if leaked:
                missing.append(f"{board}: {title}: the hang's data for {leaked}: {expr}")
            expect = [fleet.hung]
        else:
            expect = fleet.pods
        empty = [pod for pod in expect if not per_pod[pod]]
        if empty:
            missing.append(f"{board}: {title}: no data for {empty}: {expr}")
        checked += 1
    assert not missing, "\n".join(missing)
    assert checked >= 60, checked


def test_the_fleet_page_lists_that_pod_and_opens_its_finding(fleet: FleetRun) -> None:
    pods = fleet.app_tables["pods"]
    assert [(r["namespace"], r["pod"]) for r in pods] == [("ml", fleet.hung)], pods
    assert "hung_request" in str(pods[0]["kinds"])
    findings = fleet.app_tables["findings"]
    assert any(r["kind"] == "hung_request" and r["request"] == REQUEST for r in findings)
    assert fleet.app_tables["timeline"], "the request's timeline is empty"
    assert any(r["model"] == "router" for r in fleet.app_tables["health"])
    assert "cannot" not in fleet.app_texts.lower()
    if fleet.browser_dom is not None:
        assert REQUEST in fleet.browser_dom
        assert "Traceback" not in fleet.browser_dom and "stException" not in fleet.browser_dom


def test_the_finding_opens_through_the_watch_api(fleet: FleetRun) -> None:
    status, targets = fleet.api["targets"]  # type: ignore[misc]
    assert status == 200
    assert {t["pod"] for t in targets["targets"]} == set(fleet.pods)
    assert all(t["namespace"] == "ml" for t in targets["targets"])
    status, body = fleet.api["findings"]  # type: ignore[misc]
    assert status == 200
    hang = [f for f in body["findings"] if f["request_id"] == REQUEST]
    assert hang and all(f["pod"] == fleet.hung for f in hang)
    status, body = fleet.api["request"]  # type: ignore[misc]
    assert status == 200 and body["records"] and body["pod"] == fleet.hung
    status, body = fleet.api["health"]  # type: ignore[misc]
    assert status == 200 and any(m["model"] == "router" for m in body["models"])
    for pod in fleet.pods:
        if pod == fleet.hung:
            continue
        status, body = fleet.api[f"findings:{pod}"]  # type: ignore[misc]
        assert status == 200
        assert not [f for f in body["findings"] if f["kind"] == "hung_request"], body


def test_what_the_watch_of_three_real_tritons_costs(fleet: FleetRun) -> None:
    """Recorded, not judged tightly (two shared cores): a sanity bound only."""
    cost = fleet.watch_cost
    print(f"one watch, {PODS} lab Tritons at 4 requests/s each: {cost}")
    assert cost["lines_per_s"] > 0
    assert cost["rss_mib"] < 1024


def test_the_kubelet_rotation_happened_under_watch(fleet: FleetRun) -> None:
    """0.log passed 256 KiB and was renamed at least once in some pod: watch followed it."""
    assert any(n >= 1 for n in fleet.rotations.values()), fleet.rotations
    assert re.fullmatch(r"triton-\d", fleet.hung)
