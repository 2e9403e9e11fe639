"""The outage of issue 17 on a real Triton, with no request id anywhere.

Every router instance (8) is held by a request whose BLS call to the dynamically batched
``detector`` sits in one stuck child batch, and more router requests queue behind them: what
``analyze`` used to answer with no finding at all. Nothing sends an id: the clients send none,
and the demo's BLS children are built without (``demo_env("none")``). The healthy twin sends
the same requests without the fault.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from observability.collect import CollectConfig, CollectRunner
from observability.detectors import Window
from observability.detectors.base import run_detectors
from observability.detectors.registry import default_detectors
from observability.findings import Finding, Severity
from observability.lab import TritonLab, demo_env, demo_repository
from observability.load import TritonClient
from observability.load.workload import inputs_for
from observability.store import Store

pytestmark = pytest.mark.lab

ROUTER_INSTANCES = 8
QUEUED = 24
HANG_S = "40"


@dataclass(frozen=True)
class Outage:
    findings: list[Finding]
    store: Path


def _send(
    url: str, n: int, params: dict[str, str] | None, timeout_s: float
) -> list[threading.Thread]:
    def one(i: int) -> None:
        client = TritonClient(url, timeout_s, send_ids=False)
        try:
            client.infer(
                "router", inputs_for("router", random.Random(i)), f"x-{i}", parameters=params
            )
        finally:
            client.close()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def _run(lab_factory: Callable[..., TritonLab], name: str, faulty: bool) -> Outage:
    lab = lab_factory(
        demo_repository(), name=name, env=demo_env("none"), trace=False, exit_timeout_s=5
    )
    store = lab.run_dir / "store.db"
    runner = CollectRunner(
        CollectConfig(
            store=store, url=lab.http_url, metrics_url=lab.metrics_url, log=lab.log_path,
            interval_s=0.5,
        )
    )  # fmt: skip
    collector = threading.Thread(target=runner.run, kwargs={"duration_s": 120}, daemon=True)
    collector.start()
    since = time.time_ns()
    # A healthy minute's worth of work first: the detectors learn each model's latency and
    # which models call which from it, as they would on a server that was fine until now.
    for t in _send(lab.grpc_url, 40, None, 10):
        t.join(timeout=30)
    params = {"fault": "hang", "hang_s": HANG_S} if faulty else None
    _send(lab.grpc_url, ROUTER_INSTANCES, params, 3)
    time.sleep(1.0)
    _send(lab.grpc_url, QUEUED, None, 3)
    time.sleep(9.0)
    until = time.time_ns()
    time.sleep(1.5)  # the collector reads the last lines
    runner.stop()
    collector.join(timeout=30)
    window = Window(since_ns=since, until_ns=until, store=Store(store, readonly=True))
    return Outage(run_detectors(default_detectors(deadline_s=5), window), store)


@pytest.fixture(scope="module")
def outage(lab_factory: Callable[..., TritonLab]) -> Iterator[Outage]:
    yield _run(lab_factory, "outage-ids-none", faulty=True)


@pytest.fixture(scope="module")
def healthy(lab_factory: Callable[..., TritonLab]) -> Iterator[Outage]:
    yield _run(lab_factory, "outage-ids-none-twin", faulty=False)


def test_stuck_child_batch_holding_every_router_instance_is_one_finding(outage: Outage) -> None:
    hung = [f for f in outage.findings if f.kind == "hung_request"]
    assert [f.model for f in hung] == ["router"], [(f.kind, f.model) for f in outage.findings]
    finding = hung[0]
    assert finding.request_id is None and finding.severity is Severity.CRITICAL
    summary = finding.summary
    assert f"{ROUTER_INSTANCES} of {ROUTER_INSTANCES} known instance(s) of router" in summary
    assert "BLS calls to detector (no request id):" in summary
    assert "executing (detector_0_" in summary
    assert "no BLS call of it has been open" not in finding.summary
    queued = int(finding.summary.split(" request(s) queued for router")[0].rsplit(" ", 1)[-1])
    assert queued >= QUEUED // 2, finding.summary
    assert any("executing" in e.detail and "detector" in e.detail for e in finding.evidence)


def test_the_healthy_twin_finds_nothing(healthy: Outage) -> None:
    loud = [f for f in healthy.findings if f.severity.rank >= Severity.WARNING.rank]
    assert loud == [], [(f.kind, f.model, f.summary) for f in loud]
