"""Per-model health over a window: throughput, latency by stage, pending, busy, BLS capacity.

Latency per stage is the increase of Triton's cumulative duration counters divided by the
increase of successful requests over the same scrape interval: the average of that interval,
the only per-request figure the counters allow. Instance busy time comes from the log's
``executing N requests`` / ``released N requests`` lines, which Triton's metrics lack.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from dashboards.app.data.metrics import counter_increases, gauge
from observability import events as ev
from observability.store import Store

__all__ = ["STAGES", "busy_ratio", "latency_by_stage", "throughput"]

STAGES = {
    "queue": "nv_inference_queue_duration_us",
    "compute input": "nv_inference_compute_input_duration_us",
    "compute infer": "nv_inference_compute_infer_duration_us",
    "compute output": "nv_inference_compute_output_duration_us",
}


def throughput(store: Store, since_ns: int, until_ns: int) -> dict[str, list[tuple[int, float]]]:
    """Inferences per second per model, per scrape interval."""
    incs = counter_increases(store, "nv_inference_count", since_ns, until_ns)
    return {m: [(t, inc / dt) for t, inc, dt in pts if dt > 0] for m, pts in incs.items()}


def latency_by_stage(
    store: Store, since_ns: int, until_ns: int
) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Model -> stage -> ``(at_ns, ms per request)`` for intervals where requests finished."""
    done = counter_increases(store, "nv_inference_request_success", since_ns, until_ns)
    counts = {m: {t: inc for t, inc, _dt in pts} for m, pts in done.items()}
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    for stage, name in STAGES.items():
        for model, pts in counter_increases(store, name, since_ns, until_ns).items():
            per = counts.get(model, {})
            out[model][stage] = [(t, us / per[t] / 1e3) for t, us, _dt in pts if per.get(t)]
    return dict(out)


def pending(store: Store, since_ns: int, until_ns: int) -> dict[str, list[tuple[int, float]]]:
    return gauge(store, "nv_inference_pending_request_count", since_ns, until_ns)


def bls_capacity(
    store: Store, since_ns: int, until_ns: int
) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Model -> {"in flight", "capacity"}: BLS calls running vs the thread pool's size."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    for label, name in (
        ("in flight", "triton_obs_bls_inflight"),
        ("capacity", "triton_obs_bls_thread_pool_capacity"),
    ):
        for model, pts in gauge(store, name, since_ns, until_ns).items():
            out[model][label] = pts
    return dict(out)


def busy_ratio(
    records: Iterable[object], since_ns: int, until_ns: int, bucket_s: float = 1.0
) -> dict[str, list[tuple[int, float]]]:
    """Model -> ``(bucket start, share of its instances' time spent executing)``.

    An instance is busy from its ``executing`` line to its matching ``released`` line
    (nested executions of an async model count once); one still executing at ``until_ns``
    is busy to the end.
    """
    bucket = int(bucket_s * 1e9)
    n = max(1, (until_ns - since_ns + bucket - 1) // bucket)
    model_of: dict[str, str] = {}
    depth: dict[str, int] = defaultdict(int)
    started: dict[str, int] = {}
    busy: dict[str, list[float]] = {}

    def add(instance: str, start: int, end: int) -> None:
        cells = busy.setdefault(instance, [0.0] * n)
        start, end = max(start, since_ns), min(end, until_ns)
        while start < end:
            i = min((start - since_ns) // bucket, n - 1)
            edge = min(end, since_ns + (i + 1) * bucket)
            cells[i] += edge - start
            start = edge

    for rec in records:
        if isinstance(rec, ev.InstanceExecuting):
            model_of[rec.instance] = rec.model
            if depth[rec.instance] == 0:
                started[rec.instance] = rec.header.at_ns
            depth[rec.instance] += 1
        elif isinstance(rec, ev.InstanceReleased) and depth[rec.instance] > 0:
            depth[rec.instance] -= 1
            if depth[rec.instance] == 0:
                add(rec.instance, started.pop(rec.instance), rec.header.at_ns)
    for instance, at in started.items():
        add(instance, at, until_ns)
    per_model: dict[str, list[list[float]]] = defaultdict(list)
    for instance, cells in busy.items():
        per_model[model_of.get(instance, "?")].append(cells)
    for instance, model in model_of.items():
        if instance not in busy:
            per_model[model].append([0.0] * n)
    return {
        model: [
            (since_ns + i * bucket, sum(c[i] for c in rows) / len(rows) / bucket) for i in range(n)
        ]
        for model, rows in per_model.items()
    }
