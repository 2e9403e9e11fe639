"""The instrumented demo pipeline on a real Triton 2.51: span tree vs Triton's trace file, a hung
call reported while hung, callback and task errors, thread-pool pressure on /metrics, and an
exporter that is down for a whole run."""

from __future__ import annotations

import json
import random
import re
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from observability.lab import TritonLab, demo_repository
from observability.lab.ports import free_port
from observability.load import Outcome, Status, TritonClient
from observability.load.workload import inputs_for
from tests.bls.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.lab

DEADLINE_S = 1.5
_SAMPLE = re.compile(r"^(triton_obs_bls_\w+)\{([^}]*)\} (\S+)$")
_MODELS = ("router", "preprocess", "classifier", "detector")


def infer(lab: TritonLab, model: str, request_id: str, timeout_s: float = 10.0, **params: str):
    client = TritonClient(lab.grpc_url, timeout_s)
    try:
        return client.infer(
            model,
            inputs_for(model, random.Random(request_id)),
            request_id=request_id,
            parameters=params or None,
        )
    finally:
        client.close()


def bls_metrics(lab: TritonLab) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(lab.metrics_url, timeout=5) as resp:
        page = resp.read().decode()
    out = []
    for line in page.splitlines():
        found = _SAMPLE.match(line)
        if found:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', found.group(2)))
            out.append((found.group(1), labels, float(found.group(3))))
    return out


def metric(lab: TritonLab, name: str, **labels: str) -> float:
    return sum(
        v
        for n, lab_, v in bls_metrics(lab)
        if n == name and all(lab_.get(k) == w for k, w in labels.items())
    )


def poll(fn, timeout_s: float = 15.0):
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.25)


def small_demo(tmp: Path) -> Path:
    """The demo repository with 2 router instances: labs here start and stop faster."""
    repo = tmp / "demo"
    shutil.copytree(demo_repository(), repo, ignore=shutil.ignore_patterns("__pycache__"))
    config = repo / "router" / "config.pbtxt"
    config.write_text(config.read_text().replace("count: 8", "count: 2"))
    return repo


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def lab(lab_factory, receiver: OtlpReceiver, tmp_path_factory) -> TritonLab:
    return lab_factory(
        small_demo(tmp_path_factory.mktemp("bls-demo")),
        name="bls",
        model_control="explicit",
        load_models=_MODELS,
        trace_log_frequency=1,
        env={
            "TRITON_OBS_ENDPOINT": receiver.endpoint,
            "TRITON_OBS_DEADLINE_S": str(DEADLINE_S),
            "TRITON_OBS_FLUSH_INTERVAL_S": "0.2",
        },
    )


def _triton_edges(lab: TritonLab, prefix: str) -> set[tuple[str, str]]:
    entries = []
    for path in sorted(lab.run_dir.glob("trace.json.*")):
        try:
            entries.extend(json.loads(path.read_text()))
        except ValueError:
            continue
    by_id = {e["id"]: e for e in entries if "model_name" in e}
    return {
        (by_id[e["parent_id"]]["request_id"], e["request_id"])
        for e in by_id.values()
        if e.get("parent_id") in by_id and e["request_id"].startswith(prefix)
    }


def test_span_tree_agrees_with_tritons_trace_file(lab: TritonLab, receiver: OtlpReceiver) -> None:
    assert infer(lab, "router", "tree1").status is Status.OK
    rid = "tree1"
    roots = receiver.wait_for(lambda s: s.attributes.get("triton.request_id") == rid)
    kids = receiver.wait_for(
        lambda s: (
            s.attributes.get("triton.bls.parent.request_id") == rid and s.name.startswith("bls ")
        ),
        count=3,
    )
    (root,) = roots
    assert root.name == "router execute"
    assert {k.attributes["triton.bls.child.model"] for k in kids} == {
        "preprocess",
        "classifier",
        "detector",
    }
    assert all((k.trace_id, k.parent_span_id) == (root.trace_id, root.span_id) for k in kids)
    ours = {
        (k.attributes["triton.bls.parent.request_id"], k.attributes["triton.bls.child.request_id"])
        for k in kids
    }
    theirs = poll(lambda: _triton_edges(lab, rid + "."))
    assert ours == theirs == {(rid, f"{rid}.{m}") for m in ("preprocess", "classifier", "detector")}
    det = next(k for k in kids if k.attributes["triton.bls.child.model"] == "detector")
    assert det.attributes["triton.bls.inputs"][0].startswith("FEATURES FP32 [1,")
    assert det.attributes["triton.bls.outputs"] == ["BOXES FP32 [1,16]"]


def test_hung_child_reported_while_still_hung(lab: TritonLab, receiver: OtlpReceiver) -> None:
    outcome = infer(lab, "router", "bls-hang", timeout_s=3.0, fault="hang", hang_s="6")
    assert outcome.status is Status.TIMEOUT
    (marker,) = receiver.wait_for(
        lambda s: (
            s.name == "bls.call.hung"
            and s.attributes["triton.bls.child.request_id"] == "bls-hang.detector"
        )
    )
    a = marker.attributes
    assert (a["triton.bls.parent.model"], a["triton.bls.child.model"]) == ("router", "detector")
    assert a["triton.bls.parent.request_id"] == "bls-hang"
    assert DEADLINE_S <= a["triton.bls.age_s"] <= DEADLINE_S + 1.0
    assert "_call" in a["triton.bls.stack"]  # the awaiting coroutine in router/model.py
    assert metric(lab, "triton_obs_bls_hung_calls_total", parent="router", child="detector") >= 1
    (call,) = receiver.wait_for(
        lambda s: (
            s.name == "bls detector"
            and s.attributes["triton.bls.child.request_id"] == "bls-hang.detector"
        ),
        timeout_s=15,
    )
    assert call.end_ns > marker.end_ns  # the report left while the call was still hung
    assert call.attributes["triton.bls.hung"] is True


@pytest.mark.parametrize(
    ("fault", "span", "kind"),
    [("callback", "bls.callback", "callback"), ("task_error", "bls.task", "task")],
)
def test_raising_callback_and_swallowed_task_reported(
    lab: TritonLab, receiver: OtlpReceiver, fault: str, span: str, kind: str
) -> None:
    rid = f"bls-{fault}"
    outcome = infer(lab, "router", rid, fault=fault, callback_wait_s="1")
    assert outcome.status is Status.ERROR
    (root,) = receiver.wait_for(lambda s: s.attributes.get("triton.request_id") == rid)
    (found,) = receiver.wait_for(lambda s: s.name.startswith(span) and s.trace_id == root.trace_id)
    stack = found.events[0][1]["exception.stacktrace"]
    assert "KeyError: 'LOGITS'" in stack and "router/1/model.py" in stack
    assert poll(
        lambda: metric(lab, "triton_obs_bls_callback_errors_total", model="router", kind=kind)
    )


def test_thread_pool_pressure_on_tritons_metrics(lab: TritonLab) -> None:
    assert (
        infer(lab, "router", "bls-fanout", timeout_s=30, fault="fanout", fanout_n="64").status
        is Status.OK
    )
    peak = poll(
        lambda: (
            max(
                (v for n, _, v in bls_metrics(lab) if n == "triton_obs_bls_inflight_peak"),
                default=0,
            )
            > 32
        )
    )
    assert peak
    assert (
        metric(lab, "triton_obs_bls_thread_pool_capacity", model="router", pool="python_backend")
        == 64
    )  # 2 instances x 32
    assert poll(
        lambda: metric(lab, "triton_obs_bls_executor_wait_seconds_total", model="router") > 0
    )
    assert poll(  # the counters reach /metrics at the exporter's next flush
        lambda: (
            metric(
                lab, "triton_obs_bls_calls_total", parent="router", child="detector", outcome="ok"
            )
            >= 64
        )
    )


def test_exporter_down_every_request_succeeds(lab_factory, tmp_path_factory) -> None:
    closed = free_port()
    down = lab_factory(
        small_demo(tmp_path_factory.mktemp("bls-down")),
        name="bls-down",
        model_control="explicit",
        load_models=_MODELS,
        env={
            "TRITON_OBS_ENDPOINT": f"http://127.0.0.1:{closed}/v1/traces",
            "TRITON_OBS_EXPORT_TIMEOUT_S": "0.5",
        },
    )
    try:
        outcomes: list[Outcome] = [infer(down, "router", f"down-{i}") for i in range(20)]
        assert all(o.status is Status.OK for o in outcomes), [o.error for o in outcomes]
        assert poll(
            lambda: metric(down, "triton_obs_bls_dropped_spans_total", model="router") >= 20, 20
        )
    finally:
        down.stop()
