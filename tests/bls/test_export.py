"""Export never blocks the model: an endpoint that is down or stalled only costs dropped spans."""

from __future__ import annotations

import os
import threading
import time

from observability import bls
from observability.bls.export import ExportQueue
from observability.lab.ports import free_port
from tests.bls.fakes import FakePbUtils, FakeRequest
from tests.bls.otlp_receiver import OtlpReceiver


def test_endpoint_down_every_call_succeeds_and_drops_are_counted() -> None:
    bls.setup(
        pb_utils=FakePbUtils,
        model="m",
        endpoint=f"http://127.0.0.1:{free_port()}/v1/traces",
        queue_size=8,
        batch_size=4,
        export_timeout_s=0.2,
        flush_interval_s=0.05,
    )
    try:
        for i in range(50):
            assert not bls.exec(
                FakeRequest("router", "d"), FakeRequest("detector", f"d.{i}")
            ).has_error()
    finally:
        inst = bls.active()
        bls.shutdown(2.0)
    dropped = sum(
        v for (name, _), v in inst.metrics.counters.items() if name.endswith("dropped_spans_total")
    )
    assert dropped == 50
    assert FakePbUtils.value("triton_obs_bls_dropped_spans_total", model="m") == 50


def test_stalled_endpoint_fills_the_queue_not_the_model() -> None:
    with OtlpReceiver(stall_s=3.0) as rx:
        bls.setup(
            pb_utils=FakePbUtils,
            model="s",
            endpoint=rx.endpoint,
            queue_size=16,
            batch_size=8,
            export_timeout_s=1.0,
        )
        inst = bls.active()
        for i in range(200):
            bls.exec(FakeRequest("router", "s"), FakeRequest("detector", f"s.{i}"))
        full = inst.metrics.counters.get(
            ("triton_obs_bls_dropped_spans_total", ("s", "unknown", "queue_full"))
        )
        bls.shutdown(1.0)
    assert full is not None and full >= 200 - 16 - 8


class _Recorder:
    def __init__(self) -> None:
        self.batches: list[int] = []

    def export(self, batch: list) -> bool:
        self.batches.append(len(batch))
        return True

    def shutdown(self) -> None:
        pass


def test_queue_in_a_forked_child_starts_clean() -> None:
    exporter = _Recorder()
    queue = ExportQueue(exporter, lambda r, n: None, queue_size=4, interval_s=0.05)
    for _ in range(3):
        queue.submit(object())  # the parent's worker thread is running now
    pid = os.fork()
    if pid == 0:  # the child: a fresh queue and worker, the parent's spans are not re-sent
        ok = False
        try:
            queue.submit(object())
            ok = queue.force_flush(5.0) and sum(exporter.batches) >= 1 and not queue._queue
        finally:
            os._exit(0 if ok else 1)
    for _ in range(100):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        status = -1
    queue.shutdown(1.0)
    assert status == 0


class _Stalled(_Recorder):
    """An exporter stuck in its request until released (a collector that never answers)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def export(self, batch: list) -> bool:
        self.batches.append(len(batch))
        self.release.wait(10)
        return False


def test_submit_never_waits_for_a_stalled_export_and_counts_every_drop() -> None:
    exporter = _Stalled()
    drops: dict[str, int] = {}
    queue = ExportQueue(
        exporter,
        lambda reason, n: drops.__setitem__(reason, drops.get(reason, 0) + n),
        queue_size=8,
        batch_size=4,
        interval_s=0.01,
    )
    queue.submit(object())
    deadline = time.monotonic() + 5
    while not exporter.batches and time.monotonic() < deadline:
        time.sleep(0.01)  # the worker is now stuck inside export
    slowest = 0.0
    for _ in range(100):
        t0 = time.perf_counter()
        queue.submit(object())
        slowest = max(slowest, time.perf_counter() - t0)
    assert slowest < 0.05  # never the 10 s of the stalled request
    assert drops == {"queue_full": 100 - 8}  # oldest dropped, each one counted
    exporter.release.set()
    queue.shutdown(2.0)
    assert drops["export_failed"] + drops.get("shutdown", 0) == 1 + 8


def test_opentelemetry_environment_reaches_the_wire(monkeypatch) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT (a base URL), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
    OTEL_EXPORTER_OTLP_COMPRESSION=gzip, as a real receiver gets them; execute spans carry
    Triton's own attribute name for the model."""
    with OtlpReceiver() as rx:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint.removesuffix("/v1/traces"))
        monkeypatch.setenv("OTEL_SERVICE_NAME", "ranker-svc")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        bls.setup(pb_utils=FakePbUtils, model="ranker", flush_interval_s=0.05)
        try:
            bls.exec(FakeRequest("ranker", "r"), FakeRequest("scorer", "r.1"))
        finally:
            bls.shutdown(2.0)
        assert rx.spans and set(rx.encodings) == {"gzip"}
        resource = rx.spans[0].resource
        assert resource["service.name"] == "ranker-svc"
        assert resource["deployment.environment"] == "prod"
        assert resource["triton.model.name"] == "ranker"
