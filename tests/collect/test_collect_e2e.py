"""End to end: a real Triton under the demo load, ``collect`` running live into a store.

The store must hold every request the client sent, once, with its state transitions, the
response shapes, and the BLS parent links from Triton's own trace files.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from observability import events as ev
from observability.collect import CollectConfig, CollectRunner
from observability.lab import demo_repository
from observability.load import LoadConfig, Status, run_load
from observability.store import Store

pytestmark = pytest.mark.lab


def test_collect_stores_every_request_once_with_its_tree(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(
        demo_repository(), name="e2e", model_control="explicit", trace_log_frequency=1
    )
    store_path = tmp_path / "store.db"
    runner = CollectRunner(
        CollectConfig(
            store=store_path, url=lab.http_url, metrics_url=lab.metrics_url, log=lab.log_path,
            trace=lab.trace_path, metrics_port=0, interval_s=0.5,
        )
    )  # fmt: skip
    thread = threading.Thread(target=runner.run, kwargs={"duration_s": 240}, daemon=True)
    thread.start()
    try:
        report = run_load(
            LoadConfig(url=lab.grpc_url, concurrency=4, requests=80, duration_s=120,
                       timeout_s=20, run_tag="e2e", seed=3)
        )  # fmt: skip
        sent = {o.request_id for o in report.outcomes}
        assert len(sent) == 80 and all(o.status is Status.OK for o in report.outcomes)
        routers = {o.request_id for o in report.outcomes if o.model == "router"}

        def stored_released() -> set[str]:
            with Store(store_path, readonly=True) as db:
                return {
                    r.request_id
                    for r in db.log_records(kinds=["RequestStateChange"])
                    if r.to_state == "RELEASED"
                }

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not sent <= stored_released():
            time.sleep(0.5)
        page = (
            urllib.request.urlopen(f"http://127.0.0.1:{runner.metrics_port}/metrics", timeout=5)
            .read()
            .decode()
        )
    finally:
        runner.stop()
        thread.join(timeout=30)

    with Store(store_path, readonly=True) as db:
        states = [
            r
            for r in db.log_records(kinds=["RequestStateChange"])
            if r.request_id.startswith("e2e-")
        ]
        shapes = list(db.log_records(kinds=["ResponseOutput"]))
        spans = list(db.trace_spans())
        scrapes = list(db.scrapes())
        stats = list(db.model_stats())
        assert db.count("metric_samples") > 0
    # Every request the client sent, each transition stored exactly as often as the log has it
    # (an ensemble's steps reuse its request id, so ``pipeline`` ids appear three times).
    top = Counter(
        s.request_id for s in states if s.to_state == "PENDING" and "." not in s.request_id
    )
    assert set(top) == sent
    in_log = Counter(
        line.split("[request id: ", 1)[1].split("]", 1)[0]
        for line in lab.log_text().splitlines()
        if "Setting state from INITIALIZED to PENDING" in line and "[request id: e2e-" in line
    )
    assert +Counter({k: v for k, v in in_log.items() if "." not in k}) == top
    pipelines = {o.request_id for o in report.outcomes if o.model == "pipeline"}
    assert {top[r] for r in sent - pipelines} == {1}
    for rid in sent:
        path = [(s.from_state, s.to_state) for s in states if s.request_id == rid]
        assert ("PENDING", "EXECUTING") in path and ("EXECUTING", "RELEASED") in path, rid
    assert any(s.output == "BOXES" and len(s.shape) >= 1 for s in shapes)
    # BLS parent links: each router request's children point at its trace.
    by_request = {s.request_id: s for s in spans}
    for rid in routers:
        parent = by_request[rid]
        for child in ("preprocess", "classifier", "detector"):
            assert by_request[f"{rid}.{child}"].parent_id == parent.trace_id, (rid, child)
    assert scrapes and all(s.up for s in scrapes)
    assert {s.model for s in stats} >= {"router", "classifier", "detector"}
    assert "triton_obs_log_lines_read_total" in page
    assert runner.state.stored.get("log", 0) > 0


def test_collect_survives_a_dead_server(tmp_path: Path) -> None:
    runner = CollectRunner(
        CollectConfig(store=tmp_path / "s.db", url="http://127.0.0.1:9",
                      metrics_url="http://127.0.0.1:9/metrics", interval_s=0.2)
    )  # fmt: skip
    runner.run(duration_s=1.5)
    with Store(tmp_path / "s.db", readonly=True) as db:
        statuses = list(db.scrapes())
    assert statuses and not any(s.up for s in statuses)
    assert {s.target.split()[0] for s in statuses} == {"metrics", "stats"}
    assert all(isinstance(s, ev.ScrapeStatus) and s.error for s in statuses)
