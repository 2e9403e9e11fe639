"""CPU added per BLS call by ``observability.bls``, against a plain call in the same process.

Why CPU time of the calling thread (``time.thread_time``): that is what a BLS call costs the
model; the export worker's CPU (protobuf encoding, HTTP) runs beside it, and the test receiver
decodes in this same process, so process-wide CPU would charge its work to us. Each mode
alternates with the baseline (a fake child whose ``exec`` returns at once, so the call itself
costs ~nothing and only our work is measured). Modes: disabled (not set up), sampled out
(``sample_ratio=0``), sampled (100%, exporting to a local OTLP receiver), and the p99 added
latency of a call while the OTLP endpoint is stalled (accepts, never answers in time). The
encoding moved to the export thread is reported beside the sampled mode
(``bls_sampled_export_thread_cpu``, per span, informational) so that it is not hidden. Beside
them, on the same machine in the same process, the opentelemetry-sdk doing the same job (a
span per call with the same attributes, ``BatchSpanProcessor`` and its OTLP/HTTP exporter to
the same receiver): ``otel_sdk_added_cpu``, whose ``ratio`` is the SDK's cost over ours.

Run: ``python benchmarks/bls_overhead.py``. Prints JSON lines
``{"bench", "value", "unit", "baseline", "ratio"}``.
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from observability import bls
from tests.bls.fakes import FakePbUtils, FakeRequest
from tests.bls.otlp_receiver import OtlpReceiver

__all__ = ["main", "per_call_cpu_us"]

N = 5000
ROUNDS = 5


def per_call_cpu_us(fn: Callable[[], object], n: int = N) -> float:
    start = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - start) / n * 1e6


def _paired(instrumented: Callable[[], object], plain: Callable[[], object]) -> tuple[float, float]:
    """Median over rounds of (instrumented, plain) CPU µs per call, alternated."""
    ours, base = [], []
    for _ in range(ROUNDS):
        base.append(per_call_cpu_us(plain))
        ours.append(per_call_cpu_us(instrumented))
    return statistics.median(ours), statistics.median(base)


def _emit(name: str, value: float, unit: str, baseline: float) -> None:
    ratio = value / baseline if baseline else None
    row = {"bench": name, "value": round(value, 3), "unit": unit, "baseline": round(baseline, 3)}
    row["ratio"] = ratio and round(ratio, 3)
    print(json.dumps(row))


def _stalled_endpoint() -> tuple[socket.socket, str]:
    """A listener that accepts connections and never reads or answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}/v1/traces"


def _sdk_traced(
    endpoint: str, parent: FakeRequest, child: FakeRequest
) -> tuple[Callable[[], object], Callable[[], object]]:
    """The same call as a span of the opentelemetry-sdk, exported the SDK's way."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "router"}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), max_queue_size=65536)
    )
    tracer = provider.get_tracer("bench")
    attrs = {
        "triton.bls.parent.model": "router",
        "triton.bls.child.model": "detector",
        "triton.bls.parent.request_id": parent.request_id(),
        "triton.bls.child.request_id": child.request_id(),
    }

    def call() -> object:
        with tracer.start_as_current_span("bls detector", attributes=attrs):
            return child.exec()

    return call, provider.shutdown


def main() -> None:
    parent = FakeRequest("router", "bench")
    child = FakeRequest("detector", "bench.detector")

    def plain() -> object:
        return child.exec()

    def traced() -> object:
        return bls.exec(parent, child)

    bls.shutdown()
    ours, base = _paired(traced, plain)
    _emit("bls_disabled_added_cpu", ours - base, "us/call", base)

    with OtlpReceiver() as rx:
        bls.setup(pb_utils=FakePbUtils, model="router", endpoint=rx.endpoint, sample_ratio=0.0)
        ours, base = _paired(traced, plain)
        _emit("bls_sampled_out_added_cpu", ours - base, "us/call", base)
        bls.shutdown()
        inst = bls.setup(
            pb_utils=FakePbUtils, model="router", endpoint=rx.endpoint, queue_size=65536
        )
        ours, base = _paired(traced, plain)
        _emit("bls_sampled_added_cpu", ours - base, "us/call", base)
        sampled = ours - base
        queue = inst.queue if inst is not None else None
        if queue is not None and queue.force_flush(30.0) and queue.exported:
            # Not a floor: the export thread's CPU per span (OTLP encoding + HTTP), which
            # thread_time above rightly leaves out of the model's cost but the stub still pays.
            _emit("bls_sampled_export_thread_cpu", queue.export_cpu_s / queue.exported * 1e6,
                  "us/span", base)  # fmt: skip
        bls.shutdown(5.0)
        sdk_call, sdk_shutdown = _sdk_traced(rx.endpoint, parent, child)
        sdk, base = _paired(sdk_call, plain)
        sdk_shutdown()  # before the receiver goes: its exporter would retry for seconds
        _emit("otel_sdk_added_cpu", sdk - base, "us/call", sampled)

    sock, endpoint = _stalled_endpoint()
    try:
        bls.setup(pb_utils=FakePbUtils, model="router", endpoint=endpoint, queue_size=2048,
                  export_timeout_s=5.0)  # fmt: skip
        lat_ours, lat_base = [], []
        for _ in range(20000):
            t0 = time.perf_counter()
            plain()
            t1 = time.perf_counter()
            traced()
            t2 = time.perf_counter()
            lat_base.append(t1 - t0)
            lat_ours.append(t2 - t1)
        p99 = lambda xs: statistics.quantiles(xs, n=100)[98] * 1e6  # noqa: E731
        _emit("bls_stalled_exporter_p99_added", p99(lat_ours) - p99(lat_base), "us", p99(lat_base))
        bls.shutdown(1.0)
    finally:
        sock.close()
    threading.Event().wait(0)


if __name__ == "__main__":
    main()
