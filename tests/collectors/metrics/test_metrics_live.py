"""Against a real Triton: its live page parses like prometheus_client, fits the catalogue,
and two scrapes give sane rates."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from promcompare import FIXTURES, canon_ours, canon_prometheus

from collectors.metrics.catalogue import catalogue
from collectors.metrics.parser import parse_metrics
from observability.events import Labels, MetricFamily
from observability.rates import counter_increase

pytestmark = pytest.mark.lab

RECORDING = FIXTURES / "recording"
ON_A_CPU_2_51_PAGE = {
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
    "nv_inference_exec_count",
    "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us",
    "nv_inference_pending_request_count",
    "nv_inference_request_summary_us",
    "nv_inference_queue_summary_us",
    "nv_inference_compute_input_summary_us",
    "nv_inference_compute_infer_summary_us",
    "nv_inference_compute_output_summary_us",
    "nv_pinned_memory_pool_total_bytes",
    "nv_pinned_memory_pool_used_bytes",
    "nv_cpu_utilization",
    "nv_cpu_memory_total_bytes",
    "nv_cpu_memory_used_bytes",
}
"""Catalogued families a CPU-only 2.51 must show with summaries on and no response cache."""


def _repository(root: Path) -> Path:
    for model in ("echo", "custom"):
        (root / model / "1").mkdir(parents=True)
        shutil.copy(RECORDING / f"{model}.config.pbtxt", root / model / "config.pbtxt")
        shutil.copy(RECORDING / f"{model}.model.py", root / model / "1" / "model.py")
    return root


def _infer(http_url: str, model: str, values: list[float]) -> None:
    body = {"inputs": [{"name": "IN", "datatype": "FP32", "shape": [1, len(values)]}]}
    body["inputs"][0]["data"] = values
    if model == "custom":
        body["inputs"][0]["shape"] = [len(values)]
    request = urllib.request.Request(
        f"{http_url}/v2/models/{model}/infer",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode("utf-8")


@pytest.fixture(scope="module")
def lab(lab_factory: Callable[..., object], tmp_path_factory: pytest.TempPathFactory) -> object:
    repo = _repository(tmp_path_factory.mktemp("metrics-repo"))
    return lab_factory(
        repo,
        name="metrics",
        metrics_config=("summary_latencies=true", "histogram_latencies=true"),
        trace=False,
    )


def test_live_page(lab: object) -> None:
    http_url: str = lab.http_url  # type: ignore[attr-defined]
    metrics_url: str = lab.metrics_url  # type: ignore[attr-defined]
    for model in ("echo", "custom"):
        _infer(http_url, model, [1.0, 2.0])
    time.sleep(1.0)
    first = parse_metrics(_scrape(metrics_url))
    for _ in range(4):
        _infer(http_url, "echo", [1.0, 2.0, 3.0])
    time.sleep(1.0)
    second = _scrape(metrics_url)
    families = parse_metrics(second)

    assert canon_ours(families) == canon_prometheus(second)
    triton = {f.name: f for f in families if f.name.startswith("nv_")}
    assert set(triton) <= set(catalogue()), sorted(set(triton) - set(catalogue()))
    for name, family in triton.items():
        assert catalogue()[name].type is family.type
        assert catalogue()[name].help == family.help
    assert sorted(ON_A_CPU_2_51_PAGE - set(triton)) == []

    echo: Labels = (("model", "echo"), ("version", "1"))

    def increase(name: str) -> float:
        return counter_increase(_value(first, name, echo), _value(families, name, echo))

    assert increase("nv_inference_request_success") == 4
    # mean queue time per request over the interval, as the health view computes it
    assert increase("nv_inference_queue_duration_us") / 4 >= 0


def _value(families: list[MetricFamily], name: str, labels: Labels) -> float:
    samples = (s for f in families for s in f.samples)
    (value,) = (s.value for s in samples if (s.name, s.labels) == (name, labels))
    return value
