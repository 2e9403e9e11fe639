"""Issue 6's proof on real servers: names on live scrapes, panels with data, alerts firing.

Two real runs, one after the other (this box has 2 cores): a fresh lab Triton with the demo
pipeline, ``triton-obs watch`` on it (a ``Watcher``: log, metrics, stats; its own ``/metrics``)
and Debian's Prometheus scraping both with the repo's rules, while a background load runs and
the demo's fault schedule (or its healthy twin) is injected. Each run is measured whole by its
fixture, then torn down, so the tests below only read results.

Why real servers: promtool and the catalogue linter prove our logic against series we wrote
ourselves; only a live scrape proves the names, labels and jobs that really arrive (2.51's
missing families, the ``instance`` label Prometheus renames to ``model_instance``, ...).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

from observability.collect import CollectConfig
from observability.demo.scenario import Scenario
from observability.lab import TritonLab, demo_repository
from observability.load import LoadConfig, run_load
from observability.watch import WatchConfig, Watcher
from tests.dashboards.known_metrics import PROMETHEUS_SYNTHETIC, triton_names
from tests.dashboards.live_prometheus import (
    NEEDS_PROMETHEUS,
    Prometheus,
    has_finite_value,
    metric_names_on,
    panel_queries,
    resolve_variables,
    scaled_rules,
    substitute,
)
from tests.dashboards.promql_names import metric_names
from tests.dashboards.test_metric_names import dashboard_exprs, rule_exprs
from tests.detectors.recording import STEPS

pytestmark = [pytest.mark.lab, NEEDS_PROMETHEUS]

LOAD_S = 30.0
BLS_DEADLINE_S = 5
FOR_SCALE = 0.1
"""Every rule's ``for`` x 0.1 (1m -> 6 s, 2m -> 12 s, 5m -> 30 s); expressions unchanged."""

# Families that cannot exist on this lab (Triton 2.51 from the nvidia-pytriton wheel, CPU only,
# the demo repository as shipped). Each entry is checked below against the catalogue's facts
# (its `since` or its GPU label) and must really be absent: it leaves this list when it appears.
ABSENT_ON_CPU_251: dict[str, str] = {
    # catalogue `since` 2.52 (24.11): not exposed by 2.51 even with histogram_latencies=true.
    "nv_inference_first_response_histogram_ms_bucket": "since 2.52",
    "nv_model_load_duration_secs": "since 2.52",
    # GPU families (label gpu_uuid, from DCGM): no GPU here.
    "nv_gpu_utilization": "GPU",
    "nv_gpu_memory_used_bytes": "GPU",
    "nv_gpu_memory_total_bytes": "GPU",
    "nv_gpu_power_usage": "GPU",
    "nv_gpu_power_limit": "GPU",
    "nv_energy_consumption": "GPU",
    # Response-cache families: only exposed when a cache is configured (--cache-config) and a
    # model enables `response_cache`; the demo repository does neither (no model benefits).
    "nv_cache_num_hits_per_model": "response cache off",
    "nv_cache_num_misses_per_model": "response cache off",
    "nv_cache_hit_duration_per_model": "response cache off",
    "nv_cache_miss_duration_per_model": "response cache off",
}
# Series that exist only when something fails that this run does not break: watch's store
# never fails here (it would take a full disk).
NO_FAULT_INJECTED: dict[str, str] = {"triton_obs_store_errors_total": "needs a full disk"}

# What the fault schedule must make fire, by (alert, model), with the injected fault behind
# each (for the injection -> firing latency). The deadlock is a hang too: generate waits on
# itself, so its request and its BLS call are hung as well.
EXPECTED_FIRING: dict[tuple[str, str], str] = {
    ("TritonColdStart", "classifier"): "cold_start",
    ("TritonHungRequests", "router"): "hang",
    ("TritonBlsCallHung", "router"): "hang",
    ("TritonInstanceSaturation", "classifier"): "slow",
    ("TritonThreadPoolExhaustion", "router"): "fanout",
    ("TritonBlsCallbackErrors", "router"): "callback",
    ("TritonShapeGrowth", "decoder"): "shape_growth",
    ("TritonBlsDeadlock", "generate"): "deadlock",
    ("TritonHungRequests", "generate"): "deadlock",
    ("TritonBlsCallHung", "generate"): "deadlock",
}
DETECTION_BUDGET_S = 20.0
"""Injection -> condition true: the 5 s deadline for hangs, watch's 0.5 s log tail and 1 s
detection pass, a 1 s scrape, a 1 s evaluation, and two busy cores."""
POD_LABELS = {"namespace": "lab", "pod": "triton-0"}
"""The Triton pod both jobs are about, as Kubernetes would label it."""
NEVER_FIRING = {
    "TritonStubUnhealthy",
    "TritonObsCollectorDown",
    "TritonObsCollectorLagging",
    "TritonObsDetectorFailing",
}


@dataclass
class AlertSeen:
    pending_at: float | None = None
    firing_at: float | None = None
    severity: str = ""
    pending: list[float] = field(default_factory=list)
    """Every instant (1 s steps) the alert was pending."""

    def episode_start(self) -> float | None:
        """When the pending run that ended in firing began: a condition that cleared and came
        back starts ``for`` again (a router request briefly waiting on the cold start)."""
        if self.firing_at is None:
            return None
        before = sorted(t for t in self.pending if t < self.firing_at)
        if not before:
            return None
        start = before[-1]
        for t in reversed(before[:-1]):
            if start - t > 1.5:
                break
            start = t
        return start


@dataclass
class LiveRun:
    """What one run measured; every process it started is stopped by the time tests read it."""

    t0: float
    """Wall time the scenario and load started (epoch seconds)."""
    fors: dict[str, float]
    alerts: dict[tuple[str, str], AlertSeen] = field(default_factory=dict)
    triton_scrape: set[str] = field(default_factory=set)
    watch_scrape: set[str] = field(default_factory=set)
    panels: dict[tuple[str, str, str], bool] = field(default_factory=dict)
    """(board, panel title, concrete expr) -> had a finite sample in the run."""
    variables: dict[str, dict[str, str]] = field(default_factory=dict)
    injected_at: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _dead_endpoint() -> socket.socket:
    """A loopback port bound but never listening: connections are refused at once, so the
    in-model library's span exports fail and count ``triton_obs_bls_dropped_spans_total`` (a
    trace backend that is down). Held for the run so no other process can take it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def _alert_timeline(prom: Prometheus, start: float, end: float) -> dict[tuple[str, str], AlertSeen]:
    """First pending and first firing instant of every alert, by (alertname, model)."""
    seen: dict[tuple[str, str], AlertSeen] = {}
    for series in prom.query_range("ALERTS", start, end, 1):
        labels = series["metric"]
        key = (labels["alertname"], labels.get("model", ""))
        entry = seen.setdefault(key, AlertSeen(severity=labels.get("severity", "")))
        first = float(series["values"][0][0])
        attr = "firing_at" if labels["alertstate"] == "firing" else "pending_at"
        current = getattr(entry, attr)
        setattr(entry, attr, first if current is None else min(current, first))
        if attr == "pending_at":
            entry.pending += [float(t) for t, _ in series["values"]]
    return seen


def _wait(predicate: Callable[[], bool], timeout_s: float, every_s: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every_s)
    return predicate()


def _firing(prom: Prometheus) -> set[tuple[str, str]]:
    return {
        (r["metric"]["alertname"], r["metric"].get("model", ""))
        for r in prom.query('ALERTS{alertstate="firing"}')
    }


def _live_run(
    lab_factory: Callable[..., TritonLab], root: Path, healthy: bool
) -> Iterator[LiveRun]:
    """One run, measured whole. A generator so that ``finally`` stops what it started even
    when a measurement fails."""
    dead = _dead_endpoint()
    name = "prom-healthy" if healthy else "prom"
    lab = lab_factory(
        demo_repository(), name=name, model_control="explicit", trace_log_frequency=1,
        env={
            "TRITON_OBS_DEADLINE_S": str(BLS_DEADLINE_S),
            "TRITON_OBS_ENDPOINT": f"http://127.0.0.1:{dead.getsockname()[1]}/v1/traces",
        },
    )  # fmt: skip
    watcher = Watcher(
        WatchConfig(
            CollectConfig(
                store=root / "store.db", url=lab.http_url, metrics_url=lab.metrics_url,
                log=lab.log_path, metrics_port=0, interval_s=0.5,
            ),
            detect_interval_s=1.0,
            settings={"deadline_s": BLS_DEADLINE_S},
        )
    )  # fmt: skip
    watcher.runner.start_servers()
    watch_metrics = f"http://127.0.0.1:{watcher.runner.metrics_port}/metrics"
    watch_thread = threading.Thread(target=watcher.run, name="watch", daemon=True)
    fors = scaled_rules(root / "rules", FOR_SCALE)
    jobs = {  # the job names the rules expect
        "triton": urlparse(lab.metrics_url).netloc,
        "triton-obs": f"127.0.0.1:{watcher.runner.metrics_port}",
    }
    # The labels a PodMonitor gives both jobs in the sidecar form (watch beside Triton in one
    # pod): every panel is then queried per namespace and pod, as on Kubernetes.
    pod_labels = {job: dict(POD_LABELS) for job in jobs}
    prom = Prometheus(
        root / "prometheus", jobs, sorted((root / "rules").glob("*.rules.yml")), pod_labels
    )
    stop_load = threading.Event()
    scenario = Scenario(lab.grpc_url, STEPS, healthy_twin=healthy)
    try:
        watch_thread.start()
        prom.start()
        assert _wait(lambda: all(prom.targets_up().get(j) for j in ("triton", "triton-obs")), 20)
        load = threading.Thread(
            target=run_load,
            args=(
                LoadConfig(url=lab.grpc_url, concurrency=2, requests=100_000, duration_s=LOAD_S,
                           timeout_s=10, run_tag=f"{name}-load", seed=1),
            ),
            kwargs={"stop": stop_load},
            daemon=True,
        )  # fmt: skip
        run = LiveRun(t0=time.time(), fors=fors)
        load.start()
        scenario.start(time.monotonic())
        if healthy:
            # The same load and requests; then long enough for any finding to reach Prometheus
            # (detection 1 s, scrape 1 s, evaluation 1 s) and the scaled `for`s to elapse.
            load.join(timeout=LOAD_S + 15)
            time.sleep(max(fors.values()) / 2)
        else:
            expected = set(EXPECTED_FIRING)
            _wait(lambda: expected <= _firing(prom), LOAD_S + 50, 2.0)
        run.injected_at = {i.step.fault: i.started for i in scenario.injections}
        run.triton_scrape = metric_names_on(lab.metrics_url)
        run.watch_scrape = metric_names_on(watch_metrics)
        stop_load.set()
        scenario.stop(wait_s=0)
        if not healthy:
            # Stop Triton while Prometheus and watch still scrape it: TritonTargetDown must
            # fire, and watch's scrape-failure series appear (its panel gets data).
            lab.stop()
            down_for = fors["TritonTargetDown"]
            if not _wait(lambda: ("TritonTargetDown", "") in _firing(prom), down_for + 10):
                run.notes.append("TritonTargetDown did not fire after the lab stopped")
            # watch's scrape-failure counter exists only once a scrape has failed.
            run.watch_scrape |= metric_names_on(watch_metrics)
        end = time.time()
        for board, selectors in {p.board: p.variables for p in panel_queries()}.items():
            try:
                run.variables[board] = resolve_variables(prom, selectors)
            except AssertionError as err:
                run.notes.append(f"{board}: {err}")
        for panel in panel_queries():
            values = run.variables.get(panel.board, {})
            expr = substitute(panel.expr, values, step_s=2, range_s=end - prom.started_at)
            result = prom.query_range(expr, prom.started_at, end, 2)
            run.panels[(panel.board, panel.title, expr)] = has_finite_value(result)
        # Read last, and 1 s past now: a range query's 1 s grid can miss a state that began
        # less than a step before its end (an instant query saw it; the grid did not).
        run.alerts = _alert_timeline(prom, prom.started_at, time.time() + 1)
        yield run
    finally:
        stop_load.set()
        scenario.stop(wait_s=0)
        watcher.stop()
        watch_thread.join(timeout=30)
        prom.stop()
        lab.stop()
        dead.close()


@pytest.fixture(scope="module")
def faulty(
    lab_factory: Callable[..., TritonLab], tmp_path_factory: pytest.TempPathFactory
) -> LiveRun:
    gen = _live_run(lab_factory, tmp_path_factory.mktemp("prom-faulty"), healthy=False)
    run = next(gen)
    gen.close()
    return run


@pytest.fixture(scope="module")
def healthy(
    faulty: LiveRun,  # only to run strictly after it: two cores
    lab_factory: Callable[..., TritonLab],
    tmp_path_factory: pytest.TempPathFactory,
) -> LiveRun:
    gen = _live_run(lab_factory, tmp_path_factory.mktemp("prom-healthy"), healthy=True)
    run = next(gen)
    gen.close()
    return run


def _report(run: LiveRun) -> str:
    lines = [f"notes: {run.notes}", f"injected at (s): {run.injected_at}"]
    for (alert, model), seen in sorted(run.alerts.items()):
        p = f"{seen.pending_at - run.t0:5.1f}" if seen.pending_at else "    -"
        f = f"{seen.firing_at - run.t0:5.1f}" if seen.firing_at else "    -"
        cause = EXPECTED_FIRING.get((alert, model))
        lag = ""
        if seen.firing_at and cause in run.injected_at:
            lag = f" ({seen.firing_at - run.t0 - run.injected_at[cause]:4.1f} s after {cause})"
        lines.append(
            f"  {alert:28} {model:12} {seen.severity:8} for {run.fors[alert]:>4}s"
            f" pending t+{p} firing t+{f}{lag}"
        )
    return "\n".join(lines)


# -- 1. the live-scrape metric linter ------------------------------------------------------
def test_allow_list_is_tied_to_the_catalogue() -> None:
    """An absent family is allowed only for a catalogued reason (since > 2.51, a GPU label,
    the cache): a typo cannot hide in the allow-list."""
    import csv

    from tests.dashboards.known_metrics import ROOT

    with (ROOT / "collectors" / "metrics" / "catalogue.csv").open(newline="") as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    assert set(ABSENT_ON_CPU_251) <= triton_names()
    for name, reason in ABSENT_ON_CPU_251.items():
        row = rows[name.removesuffix("_bucket")]
        if reason == "since 2.52":
            assert row["since"] == "2.52", name
        elif reason == "GPU":
            assert "gpu_uuid" in row["labels"].split(), name
        else:
            assert name.startswith("nv_cache_"), name


def test_every_name_used_exists_on_a_live_scrape(faulty: LiveRun) -> None:
    """Every metric name of every panel, variable and rule is on the lab Triton's /metrics
    (demo pipeline, instrumented, after BLS calls) or on watch's /metrics."""
    live = faulty.triton_scrape | faulty.watch_scrape | PROMETHEUS_SYNTHETIC
    used = {
        (where, name)
        for where, expr in [*dashboard_exprs(), *rule_exprs()]
        for name in metric_names(expr)
    }
    allowed = set(ABSENT_ON_CPU_251) | set(NO_FAULT_INJECTED)
    missing = sorted((w, n) for w, n in used if n not in live and n not in allowed)
    assert not missing, missing
    # The allow-lists hold only what is really absent: a family that appears leaves them.
    assert not (set(ABSENT_ON_CPU_251) & faulty.triton_scrape)
    assert not (set(NO_FAULT_INJECTED) & faulty.watch_scrape)
    assert {"triton_obs_bls_calls_total", "triton_obs_bls_hung"} <= faulty.triton_scrape


# -- 2. every panel query returns data -----------------------------------------------------
def test_every_dashboard_variable_resolves(faulty: LiveRun) -> None:
    assert set(faulty.variables) == {"triton-overview", "triton-bls", "triton-findings"}, (
        faulty.notes
    )
    assert faulty.variables["triton-overview"]["job"] == "(triton)"
    assert faulty.variables["triton-findings"]["job"] == "(triton\\\\-obs)"
    for board in faulty.variables.values():
        assert board["namespace"] == "(lab)" and board["pod"] == "(triton\\\\-0)", board


def test_every_panel_query_returns_data(faulty: LiveRun) -> None:
    allowed = set(ABSENT_ON_CPU_251) | set(NO_FAULT_INJECTED)
    empty = []
    for (board, title, expr), has_data in sorted(faulty.panels.items()):
        if has_data:
            continue
        if metric_names(expr) & allowed:
            print(f"allowed empty: {board}: {title}: {sorted(metric_names(expr) & allowed)}")
            continue  # the family cannot exist here (see the allow-lists)
        empty.append(f"{board}: {title}: {expr}")
    assert not empty, "\n".join(empty)
    # And the allow-listed panels really were empty (else they must leave the list).
    for (_board, _title, expr), has_data in faulty.panels.items():
        if metric_names(expr) & set(ABSENT_ON_CPU_251):
            assert not has_data, expr


# -- 3. alerts fire in real Prometheus, within their `for` -----------------------------------
def test_expected_alerts_fire_within_their_for(faulty: LiveRun) -> None:
    report = _report(faulty)
    firing = {key for key, seen in faulty.alerts.items() if seen.firing_at is not None}
    assert firing >= set(EXPECTED_FIRING), f"missing {set(EXPECTED_FIRING) - firing}\n{report}"
    assert ("TritonTargetDown", "") in firing, report
    assert not {a for a, _ in firing} & NEVER_FIRING, report
    for (alert, _model), seen in faulty.alerts.items():
        if seen.firing_at is None:
            continue
        # Pending -> firing takes the (scaled) `for`, plus one evaluation interval of slack
        # and the 1 s step of the range query. Alerts without `for` fire at once.
        start = seen.episode_start() or seen.firing_at
        assert seen.firing_at - start <= faulty.fors[alert] + 3, f"{alert}\n{report}"
    for (alert, model), cause in EXPECTED_FIRING.items():
        seen = faulty.alerts[(alert, model)]
        assert seen.firing_at is not None
        since_fault = seen.firing_at - faulty.t0 - faulty.injected_at[cause]
        assert since_fault <= faulty.fors[alert] + DETECTION_BUDGET_S, f"{alert}\n{report}"
    print(report)  # the timings, for the record (pytest -rA shows them)


# -- 4. the healthy twin stays quiet ---------------------------------------------------------
def test_no_warning_or_critical_alert_on_the_healthy_twin(healthy: LiveRun) -> None:
    # Pending counts too: the twin does not wait out the longest scaled `for` (30 s) after
    # its last request, so a condition that merely became true must fail it as well.
    # The absent-target alerts are pending from Prometheus's start until the first scrape of
    # each job (before t = 0); they must never fire.
    loud = {
        key: seen
        for key, seen in healthy.alerts.items()
        if seen.severity in ("warning", "critical")
        and not (
            key[0].endswith("Absent")
            and seen.firing_at is None
            and (seen.pending_at or 0) < healthy.t0
        )
    }
    assert not loud, _report(healthy)
    print(_report(healthy))
