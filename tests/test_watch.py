"""``watch`` live on the lab: a hung request becomes a finding while it is still hung, and the
/metrics page carries it with bounded labels."""

from __future__ import annotations

import random
import re
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from observability.collect import CollectConfig
from observability.lab import TritonLab
from observability.load import Status, TritonClient
from observability.load.workload import inputs_for
from observability.watch import WatchConfig, Watcher

pytestmark = pytest.mark.lab
DEADLINE_S = 3.0


def test_watch_reports_a_hang_while_it_is_hung(triton_lab: TritonLab, tmp_path: Path) -> None:
    watcher = Watcher(
        WatchConfig(
            collect=CollectConfig(
                store=tmp_path / "s.db", url=triton_lab.http_url,
                metrics_url=triton_lab.metrics_url, log=triton_lab.log_path, metrics_port=0,
                interval_s=0.5,
            ),
            detect_interval_s=0.5,
            settings={"deadline_s": DEADLINE_S},
        )
    )  # fmt: skip
    seen: dict[str, float] = {}
    watcher.runner.start_servers()
    thread = threading.Thread(
        target=watcher.run,
        kwargs={
            "duration_s": 120,
            "on_new": lambda f: seen.setdefault(f.request_id or "", time.monotonic()),
        },
        daemon=True,
    )
    thread.start()
    try:
        time.sleep(2)  # the collector catches up with the shared lab's log first
        client = TritonClient(triton_lab.grpc_url, 2)
        sent = time.monotonic()
        outcome = client.infer(
            "router", inputs_for("router", random.Random(1)), "watch-hang", "hang",
            {"fault": "hang", "hang_s": "25"},
        )  # fmt: skip
        client.close()
        assert outcome.status is Status.TIMEOUT
        deadline = time.monotonic() + 30
        while "watch-hang" not in seen and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "watch-hang" in seen, sorted(seen)
        delay = seen["watch-hang"] - sent - DEADLINE_S
        print(
            f'{{"bench": "hung_detection_delay", "value": {delay:.2f}, "unit": "s past deadline"}}'
        )
        page = (
            urllib.request.urlopen(
                f"http://127.0.0.1:{watcher.runner.metrics_port}/metrics", timeout=5
            )
            .read()
            .decode()
        )
    finally:
        watcher.stop()
        thread.join(timeout=30)
    assert re.search(r'triton_obs_hung_requests\{model="router"\} [1-9]', page), page[:2000]
    assert re.search(
        r'triton_obs_findings\{kind="hung_request",model="router",severity="critical"\}', page
    )
    assert "watch-hang" not in page  # request ids never become labels
    assert "triton_obs_oldest_inflight_seconds" in page
    assert "triton_obs_bls_children_inflight" in page
