"""10,000 distinct request ids over 200 models: our /metrics pages stay bounded, no id is a label.

Three exporters, each scraped over real HTTP and parsed with prometheus_client's parser:

* ``triton-obs watch``'s page (the collector's own metrics and the findings exporter), driven by
  the real collector and detectors over a Triton verbose log of 10,000 requests, 2,000 of them
  hung (one ``hung_request`` finding each, request id included);
* the findings exporter alone, fed more models than it will label, then nothing for longer
  than its retirement delay;
* the BLS library's ``triton_obs_bls_*`` families from 200 instrumented parent models, published
  through a stand-in for ``pb_utils.MetricFamily`` that serves what Triton would serve. The real
  Triton's page after the security run's traffic is checked in ``test_triton_bls_metrics_...``.

Bounds (docs/security.md states them):

* watch: ``models * (kinds seen * severities seen + 3) + SELF_METRICS_MAX``; by design at most
  ``(MAX_MODELS + 1) * (len(KINDS) * 3 + 3) + SELF_METRICS_MAX``;
* BLS: per model instance ``BLS_SERIES_PER_INSTANCE`` (403 with ``MAX_CHILDREN`` = 64).
"""

from __future__ import annotations

import math
import secrets
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from observability.bls.calls import Instrumenter
from observability.bls.metrics import CATALOGUE, MAX_CHILDREN, OTHER_CHILD
from observability.bls.settings import Settings
from observability.collect import CollectConfig
from observability.detectors import Window
from observability.detectors.registry import default_detectors
from observability.exporters.prometheus import (
    MAX_MODELS,
    OTHER_MODEL,
    RETIRE_AFTER_S,
    FindingsExporter,
)
from observability.findings import KINDS, Finding, Severity
from observability.store import Store
from observability.watch import WatchConfig, Watcher

REQUESTS = 10_000
MODELS = 200
HUNG_EVERY = 5  # every 5th request never ends: 2,000 hung requests, 10 per model
SEVERITIES = 3

SELF_METRICS_MAX = 41
"""The collector's own page, by design: every label takes values from a fixed list.
Counters show ``_total`` and ``_created``: log_lines_read 2, log_lines_skipped{reason} 2 x 6
(blank, binary, malformed_header, continuation, truncated_text, and one spare), scrape_failures
{signal} 2 x 2 (metrics, stats), target_up{signal} 2, events_stored{part} 2 x 5 (log, metrics,
stats, traces, otlp), store_errors{reason} 2 x 3 (full, error, dropped_batch), otlp_spans 2,
and three unlabelled gauges (tail lag, store size, last cycle)."""
PER_MODEL_GAUGES = 5
"""triton_obs_hung_requests, triton_obs_bls_children_inflight, triton_obs_oldest_inflight_seconds,
triton_obs_busy_instances, triton_obs_queued_requests."""
SIGNAL_GAUGES = 6
"""triton_obs_signal_present{signal}: log, verbose_log, metrics, stats, library, request_ids."""
DETECTOR_SERIES = 2 * len(default_detectors())
"""triton_obs_detector_failures_total{detector} and its ``_created``: one pair per detector."""
WATCH_DESIGN_MAX = (MAX_MODELS + 1) * (len(KINDS) * SEVERITIES + PER_MODEL_GAUGES)
WATCH_DESIGN_MAX += SELF_METRICS_MAX + SIGNAL_GAUGES + DETECTOR_SERIES

_BLS_LABEL_VALUES = {
    "parent": 1, "model": 1, "model_instance": 1,  # the instance's own model and instance
    "child": MAX_CHILDREN + 1,  # admitted children and "other"
    "outcome": 4, "pool": 2, "kind": 3, "reason": 3,
}  # fmt: skip
BLS_SERIES_PER_INSTANCE = sum(
    math.prod(_BLS_LABEL_VALUES[label] for label in spec.labels) for spec in CATALOGUE
)
"""403: calls 65 x 4, five unlabelled-beyond-instance gauges and counters, capacity 2,
hung and hung_calls 65 each, callback errors 3, dropped spans 3."""


@dataclass(frozen=True)
class Page:
    series: list[tuple[str, dict[str, str]]]

    def values(self) -> set[str]:
        return {v for _, labels in self.series for v in labels.values()}

    def named(self, prefix: str) -> list[tuple[str, dict[str, str]]]:
        return [(n, lab) for n, lab in self.series if n.startswith(prefix)]


def scrape(port: int) -> Page:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    series = [
        (sample.name, dict(sample.labels))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]
    assert len({(n, tuple(sorted(lab.items()))) for n, lab in series}) == len(series)
    return Page(series)


# -- watch's page over a real log -----------------------------------------------------------


def _glog(at: datetime, text: str) -> str:
    return f"I{at:%m%d %H:%M:%S.%f} 4403 {text}\n"


def _request_lines(at: datetime, rid: str, model: str, released: bool) -> list[str]:
    step = timedelta(microseconds=50)
    lines = [
        _glog(at, f'infer_request.cc:905] "[request id: {rid}] prepared: [0x0x7f7e540062c0] '
              f"request id: {rid}, model: {model}, requested version: -1, actual version: 1, "
              "flags: 0x0, correlation id: 0, batch size: 0, priority: 0, timeout (us): 0\\n"
              'original inputs:\\n"'),
        _glog(at + step, f'infer_request.cc:132] "[request id: {rid}] Setting state from '
              'INITIALIZED to PENDING"'),
        _glog(at + 2 * step, f'infer_request.cc:132] "[request id: {rid}] Setting state from '
              'PENDING to EXECUTING"'),
        _glog(at + 3 * step, f'python_be.cc:1310] "model {model}, instance {model}_0_0, '
              'executing 1 requests"'),
    ]  # fmt: skip
    if released:
        lines += [
            _glog(at + 4 * step, 'infer_response.cc:174] "add response output: output: '
                  'OUT, type: FP32, shape: [16]"'),
            _glog(at + 5 * step, f'infer_request.cc:132] "[request id: {rid}] Setting state '
                  'from EXECUTING to RELEASED"'),
        ]  # fmt: skip
    return lines


def write_log(path: Path, first: int, last: int, models: list[str], ids: list[str]) -> int:
    """Requests ``first..last-1``; every ``HUNG_EVERY``-th hangs with an open BLS child.
    Returns the number of lines written."""
    start = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(seconds=90)
    lines: list[str] = []
    for i in range(first, last):
        at = start + timedelta(milliseconds=i * 5)
        model = models[i % len(models)]
        hung = i % HUNG_EVERY == 0
        lines += _request_lines(at, ids[i], model, released=not hung)
        if hung:
            child = models[(i + 1) % len(models)]
            later = at + timedelta(milliseconds=1)
            lines += _request_lines(later, f"{ids[i]}.{child}", child, False)
    with path.open("a") as fh:
        fh.writelines(lines)
    return len(lines)


def _value(page_text: str, name: str) -> float:
    for family in text_string_to_metric_families(page_text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return -1.0


def _request_ids(n: int) -> list[str]:
    """Distinct, and unlike any model name or label value we emit."""
    return [f"rq{i:05d}-{secrets.token_hex(6)}" for i in range(n)]


@pytest.fixture(scope="module")
def request_ids() -> list[str]:
    return _request_ids(REQUESTS)


@pytest.fixture(scope="module")
def models() -> list[str]:
    return [f"model_{i:03d}" for i in range(MODELS)]


@dataclass
class WatchRun:
    half: Page
    full: Page
    findings: list[Finding]


@pytest.fixture(scope="module")
def watch_run(
    tmp_path_factory: pytest.TempPathFactory, request_ids: list[str], models: list[str]
) -> WatchRun:
    """The collector and detectors of ``watch`` over the log: half of it, then all of it. Its
    two tests share a worker (``xdist_group``), so that it runs once per session."""
    root = tmp_path_factory.mktemp("cardinality-watch")
    log = root / "triton.log"
    written = [write_log(log, 0, REQUESTS // 2, models, request_ids)]
    watcher = Watcher(
        WatchConfig(
            collect=CollectConfig(store=root / "store.db", log=log, metrics_port=0),
            settings={"deadline_s": 5.0},
        )
    )
    runner = watcher.runner
    runner.start_servers()
    assert runner.metrics_port
    pages: list[Page] = []
    findings: list[list[Finding]] = []
    wanted = [REQUESTS // 2, REQUESTS]

    def on_cycle() -> None:
        # Every line written has been read (and so stored: the runner flushes before this).
        url = f"http://127.0.0.1:{runner.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode()
        if _value(text, "triton_obs_log_lines_read_total") < written[0]:
            return
        findings.append(watcher.detect_once())
        pages.append(scrape(runner.metrics_port))
        hung = sum(1 for f in watcher.known.values() if f.kind == "hung_request")
        assert hung == wanted[len(pages) - 1] // HUNG_EVERY, hung
        if len(pages) == 1:
            written[0] += write_log(log, REQUESTS // 2, REQUESTS, models, request_ids)
        else:
            runner.stop()

    runner.run(duration_s=120, on_cycle=on_cycle)
    assert len(pages) == 2, f"the collector did not catch up: {runner.state}"
    return WatchRun(pages[0], pages[1], list(watcher.known.values()))


@pytest.mark.xdist_group("label-cardinality-watch")
def test_watch_page_never_labels_a_request_id(watch_run: WatchRun, request_ids) -> None:
    ids = set(request_ids) | {f.request_id for f in watch_run.findings if f.request_id}
    assert len(ids) >= REQUESTS
    assert not ids & watch_run.full.values()
    hung = [f for f in watch_run.findings if f.kind == "hung_request"]
    assert len(hung) == REQUESTS // HUNG_EVERY and all(f.request_id for f in hung), (
        "the ids are there to be found: in the findings, not in labels"
    )


@pytest.mark.xdist_group("label-cardinality-watch")
def test_watch_page_is_bounded_by_models_not_requests(watch_run: WatchRun, models) -> None:
    full, half = watch_run.full, watch_run.half
    assert len(full.series) == len(half.series), "5,000 more request ids added series"
    per_model = full.named("triton_obs_hung_requests")
    assert {lab["model"] for _, lab in per_model} == set(models)
    kinds = {(f.kind, f.severity.value) for f in watch_run.findings}
    bound = MODELS * (len(kinds) + PER_MODEL_GAUGES) + SELF_METRICS_MAX + DETECTOR_SERIES
    own = [s for s in full.series if "model" not in s[1] and "detector" not in s[1]]
    print(
        f"watch /metrics: {len(full.series)} series for {REQUESTS} requests and {MODELS} models "
        f"(bound {bound} with {len(kinds)} kind/severity pairs seen; by design "
        f"{WATCH_DESIGN_MAX}); the collector's own: {len(own)} of {SELF_METRICS_MAX}"
    )
    assert len(full.series) <= bound <= WATCH_DESIGN_MAX
    assert len(own) <= SELF_METRICS_MAX
    assert len(full.series) >= MODELS * PER_MODEL_GAUGES, "the page really was driven"


# -- the findings exporter's own bounds --------------------------------------------------------


@pytest.fixture
def empty_window_store(tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "empty.db"
    Store(path).close()
    with Store(path, readonly=True) as store:
        yield store


def test_findings_exporter_caps_model_labels_and_retires_old_ones(
    empty_window_store: Store, request_ids: list[str]
) -> None:
    registry = CollectorRegistry()
    exporter = FindingsExporter(registry)
    server, _thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    port = int(server.server_address[1])
    try:
        now = time.time_ns()
        many = [f"flood_{i}" for i in range(MAX_MODELS + 500)]
        findings = [
            Finding(
                kind="hung_request", severity=Severity.CRITICAL, model=many[i % len(many)],
                summary="s", advice="a", first_seen_ns=now, last_seen_ns=now,
                request_id=rid,
            )
            for i, rid in enumerate(request_ids)
        ]  # fmt: skip
        exporter.update(findings, Window(now - 10**9, now, empty_window_store))
        page = scrape(port)
        labelled = {lab["model"] for _, lab in page.named("triton_obs_findings")}
        assert len(labelled) == MAX_MODELS + 1 and OTHER_MODEL in labelled
        assert not set(request_ids) & page.values()
        assert any(f.model not in labelled for f in findings), "some went to _other"

        later = now + int(RETIRE_AFTER_S * 1e9) // 2
        exporter.update([], Window(later - 10**9, later, empty_window_store))
        zeroed = scrape(port).named("triton_obs_findings")
        assert len(zeroed) == MAX_MODELS + 1, "a resolved finding shows 0 for a while"
        gone = later + int(RETIRE_AFTER_S * 1e9)
        exporter.update([], Window(gone - 10**9, gone, empty_window_store))
        assert not scrape(port).named("triton_obs_"), "then it is removed"
    finally:
        server.shutdown()
        server.server_close()


# -- BLS metrics from 200 instrumented models -----------------------------------------------------


class _TritonMetrics(Collector):
    """What Triton does with ``pb_utils.MetricFamily``: families shared by every stub, one
    series per label set, exposed on a /metrics page."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.families: dict[str, tuple[str, str, dict[tuple, float]]] = {}

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            snapshot = {k: (t, h, dict(s)) for k, (t, h, s) in self.families.items()}
        for name, (kind, help_text, series) in snapshot.items():
            metric = Metric(name, help_text, kind)
            for labels, value in series.items():
                metric.add_sample(name, dict(labels), value)
            yield metric


def pb_utils_for(page: _TritonMetrics) -> Any:
    class _Series:
        def __init__(self, store: dict[tuple, float], key: tuple) -> None:
            self._store, self._key = store, key
            store.setdefault(key, 0.0)

        def increment(self, value: float) -> None:
            with page.lock:
                self._store[self._key] += value

        def set(self, value: float) -> None:
            with page.lock:
                self._store[self._key] = value

    class MetricFamily:
        COUNTER, GAUGE = "counter", "gauge"

        def __init__(self, name: str, description: str, kind: str) -> None:
            with page.lock:
                entry = page.families.setdefault(name, (kind, description, {}))
            self._series = entry[2]

        def Metric(self, labels: dict[str, str]) -> _Series:  # pb_utils spells it so
            return _Series(self._series, tuple(sorted(labels.items())))

    class PbUtils:
        pass

    PbUtils.MetricFamily = MetricFamily  # type: ignore[attr-defined]
    return PbUtils


class _Response:
    def has_error(self) -> bool:
        return False

    def error(self) -> None:
        return None

    def output_tensors(self) -> list:
        return []


class _Parent:
    """A request being executed: its id and no Triton trace context."""

    def __init__(self, request_id: str) -> None:
        self._id = request_id

    def request_id(self) -> str:
        return self._id

    def trace(self) -> None:
        return None


class _Child:
    """A 2.51 ``InferenceRequest``: it cannot say its model, only its id."""

    def __init__(self, request_id: str) -> None:
        self._id = request_id

    def request_id(self) -> str:
        return self._id

    def inputs(self) -> list:
        return []

    def exec(self, decoupled: bool = False) -> _Response:
        return _Response()


def test_bls_metrics_stay_bounded_and_carry_no_request_ids(
    request_ids: list[str], models: list[str]
) -> None:
    page = _TritonMetrics()
    registry = CollectorRegistry()
    registry.register(page)
    pb_utils = pb_utils_for(page)
    instrumenters = [
        Instrumenter(Settings(model=m, instance=f"{m}_0_0", deadline_s=3600), None, pb_utils)
        for m in models
    ]
    server, _thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    port = int(server.server_address[1])
    careless: set[str] = set()
    try:
        for i, rid in enumerate(request_ids):
            inst = instrumenters[i % MODELS]
            parent = _Parent(rid)
            tokens = [secrets.token_hex(8) for _ in range(2)]
            careless.update(tokens)
            # The conventional ids, a fan-out, and a model that made up unique child ids
            # (100 per model here: more than MAX_CHILDREN).
            children = [f"{rid}.preprocess", f"{rid}.detector.{i % 3}"]
            for child in children + [f"{rid}.{t}" for t in tokens]:
                inst.exec(parent, _Child(child))
        for inst in instrumenters:
            inst.publisher.publish()
        result = scrape(port)
    finally:
        server.shutdown()
        server.server_close()
        for inst in instrumenters:
            inst.shutdown(1.0)
    bls = result.named("triton_obs_bls_")
    children_by_parent: dict[str, set[str]] = {}
    for _, labels in bls:
        if "child" in labels:
            children_by_parent.setdefault(labels["parent"], set()).add(labels["child"])
    assert set(children_by_parent) == set(models)
    for parent, children in children_by_parent.items():
        assert len(children) <= MAX_CHILDREN + 1, (parent, len(children))
        assert {"preprocess", "detector", OTHER_CHILD} <= children
    ids = set(request_ids) | careless
    leaked = ids & result.values()
    print(
        f"BLS /metrics: {len(bls)} series for {REQUESTS} parent requests of {MODELS} models "
        f"(bound {BLS_SERIES_PER_INSTANCE} per instance, {BLS_SERIES_PER_INSTANCE * MODELS})"
    )
    assert len(bls) <= BLS_SERIES_PER_INSTANCE * MODELS
    assert len(leaked) <= MAX_CHILDREN * MODELS, "only the first children of each are kept"
    assert not set(request_ids) & result.values()


@pytest.mark.lab
def test_triton_bls_metrics_after_real_traffic_carry_no_request_ids(security_run) -> None:
    """The same families on the real Triton's /metrics, after the security run's requests
    (each with its own id, BLS children ``<id>.preprocess``, ``<id>.decoder.<step>``...)."""
    from tests.security.conftest import DEMO_MODELS

    series = [
        (sample.name, dict(sample.labels))
        for family in text_string_to_metric_families(security_run.triton_metrics)
        for sample in family.samples
        if sample.name.startswith("triton_obs_bls_")
    ]
    assert series, "the instrumented models published their metrics"
    values = {v for _, labels in series for v in labels.values()}
    assert not set(security_run.request_ids) & values
    assert not any(rid in v for rid in security_run.request_ids for v in values)
    children = {labels["child"] for _, labels in series if "child" in labels}
    assert children and children <= set(DEMO_MODELS), children
    instances = {(labels.get("model") or labels.get("parent"), labels["model_instance"])
                 for _, labels in series}  # fmt: skip
    assert len(series) <= len(instances) * BLS_SERIES_PER_INSTANCE
