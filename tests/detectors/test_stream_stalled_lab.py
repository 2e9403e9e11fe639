"""stream_stalled over HTTP on a real Triton: ``generate_stream`` writes no end of a stream to
the log (docs/triton-behaviour.md), so only the in-model library (``bls.response_sender``) can
see a stream that stops half-way. A healthy HTTP stream runs beside the stalled one.

The gRPC case, from the library and from the verbose log alone, is read from the checked-in
recordings (tests/detectors/test_stream_stalled.py)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import pytest

from observability.collect import CollectConfig, CollectRunner
from observability.detectors import Window
from observability.detectors.stream_stalled import StreamStalled
from observability.findings import Severity
from observability.lab import TritonLab, demo_env, demo_repository
from observability.load import TritonClient
from observability.load.workload import inputs_for
from observability.store import Store

pytestmark = pytest.mark.lab

STALL_S = 1.5
"""The library's stall deadline in the stub (``TRITON_OBS_STREAM_STALL_S``)."""


def _stream(url: str, params: dict[str, str] | None, timeout_s: float) -> threading.Thread:
    def run() -> None:
        client = TritonClient(url, timeout_s)
        try:
            client.stream("stream", inputs_for("stream", random.Random(0)), "", "", params)
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_http_stream_that_stops_is_reported_by_the_library(
    lab_factory: Callable[..., TritonLab],
) -> None:
    lab = lab_factory(
        demo_repository(),
        name="stream-http",
        model_control="explicit",
        load_models=("stream",),
        trace=False,
        exit_timeout_s=5,
        env={"TRITON_OBS_STREAM_STALL_S": str(STALL_S), **demo_env("none")},
    )
    store = lab.run_dir / "store.db"
    runner = CollectRunner(
        CollectConfig(store=store, metrics_url=lab.metrics_url, log=lab.log_path, interval_s=0.5)
    )
    collector = threading.Thread(target=runner.run, kwargs={"duration_s": 60}, daemon=True)
    collector.start()
    since = time.time_ns()
    healthy = _stream(lab.http_url, {"token_s": "0.05"}, 10)
    healthy.join(timeout=10)
    quiet = Window(since, time.time_ns(), store=None)
    stalled = _stream(lab.http_url, {"fault": "stall", "stall_after": "2", "stall_s": "20"}, 20)
    time.sleep(STALL_S + 3.0)  # the stall, the library's report, a scrape, the collector
    until = time.time_ns()
    time.sleep(1.0)
    runner.stop()
    collector.join(timeout=30)
    with Store(store, readonly=True) as st:
        before = StreamStalled().detect(
            Window(since, quiet.until_ns, store=st, clock_offset_ns=None)
        )
        findings = StreamStalled().detect(Window(since, until, store=st))
    assert before == []
    [finding] = findings
    assert (finding.model, finding.severity) == ("stream", Severity.CRITICAL)
    assert "stalled now" in finding.summary and "in-model library" in finding.summary
    assert {e.source for e in finding.evidence} >= {"log", "metrics"}
    stalled.join(timeout=0)  # the client waits out its timeout; the lab's stop ends it
