"""Triton overview rows: throughput, failures by reason, latency split, queue and load time.

Why counter increases: Triton exposes latency as cumulative microsecond counters (no
``_total``); the mean per request over a window is ``rate(duration) / rate(success)``, the
only split of queue vs compute input/infer/output that every Triton release has.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard

from dashboards.grafana.common import (
    POD,
    POD_LEGEND,
    RATE,
    SEL,
    per_request,
    query,
    stat_panel,
    table_panel,
    timeseries_panel,
)

__all__ = ["SEL", "fleet_row", "latency_row", "queue_row", "throughput_row"]

TOP = 10
"""How many pods a "top pods" panel shows."""


def fleet_row() -> list[dashboard.Row | object]:
    """The fleet at a glance (issue 16): how many pods serve, which queue the longest."""
    queue = per_request("nv_inference_queue_duration_us", SEL, by=POD)
    ok = f"rate(nv_inference_request_success{{{SEL}}}[{RATE}])"
    return [
        dashboard.Row("Fleet: pods"),
        stat_panel(
            "Pods serving",
            "Triton pods (scrape targets) with models selected here.",
            f"count(count by ({POD}) ({ok}))",
        ),
        stat_panel(
            "Pods with requests queued",
            "Pods whose schedulers hold pending requests now.",
            f"count(sum by ({POD}) (nv_inference_pending_request_count{{{SEL}}}) > 0) or vector(0)",
        ),
        stat_panel(
            "Pods failing requests",
            "Pods where some requests failed over the rate window.",
            f"count(sum by ({POD}) (rate(nv_inference_request_failure{{{SEL}}}[{RATE}])) > 0)"
            " or vector(0)",
        ),
        stat_panel(
            "Worst queue time per request",
            "The highest mean queue time per request among the pods: the pod that cannot keep up.",
            f"max({queue})",
            unit="µs",
        ),
        table_panel(
            f"Top {TOP} pods by queue time per request",
            "Mean queue time per finished request over the rate window, all selected models: "
            "near the end-to-end time, the pod's instances cannot keep up.",
            f"topk({TOP}, {queue})",
            span=12,
        ),
        timeseries_panel(
            f"Queue time per request, top {TOP} pods",
            "rate(nv_inference_queue_duration_us) / rate(nv_inference_request_success) per pod.",
            [query(f"topk({TOP}, {queue})", POD_LEGEND)],
            unit="µs",
            span=12,
        ),
        timeseries_panel(
            "Successful requests/s by pod",
            "rate(nv_inference_request_success) per pod: how the load spreads over the fleet.",
            [query(f"sum by ({POD}) ({ok})", POD_LEGEND)],
            unit="reqps",
            span=24,
        ),
    ]


def throughput_row() -> list[dashboard.Row | object]:
    ok = f"rate(nv_inference_request_success{{{SEL}}}[{RATE}])"
    failed = f"rate(nv_inference_request_failure{{{SEL}}}[{RATE}])"
    return [
        dashboard.Row("Throughput and failures"),
        stat_panel(
            "Requests/s",
            "Successful requests per second, all selected models.",
            f"sum({ok})",
            unit="reqps",
        ),
        stat_panel(
            "Failure ratio",
            "Failed / (failed + successful) requests. Python models' error "
            "responses count as successes in Triton and are not in here.",
            f"sum({failed}) / (sum({ok}) + sum({failed}))",
            unit="percentunit",
        ),
        stat_panel(
            "Mean batch size",
            "Inferences per model execution (dynamic batching at work).",
            f"sum(rate(nv_inference_count{{{SEL}}}[{RATE}]))"
            f" / sum(rate(nv_inference_exec_count{{{SEL}}}[{RATE}]))",
        ),
        stat_panel(
            "Pending requests",
            "Queued requests now. A request stuck inside execute() is "
            "not pending: see the Findings dashboard for hung requests.",
            f"sum(nv_inference_pending_request_count{{{SEL}}})",
        ),
        timeseries_panel(
            "Successful requests/s by model",
            "rate(nv_inference_request_success).",
            [query(f"sum by (model) ({ok})", "{{model}}")],
            unit="reqps",
        ),
        timeseries_panel(
            "Failed requests/s by model and reason",
            "rate(nv_inference_request_failure) by reason: REJECTED (queue timeout/full), "
            "CANCELED, BACKEND, OTHER (ensembles).",
            [query(f"sum by (model, reason) ({failed})", "{{model}} {{reason}}")],
            unit="reqps",
        ),
    ]


def latency_row() -> list[dashboard.Row | object]:
    parts = [
        ("queue", "nv_inference_queue_duration_us"),
        ("compute input", "nv_inference_compute_input_duration_us"),
        ("compute infer", "nv_inference_compute_infer_duration_us"),
        ("compute output", "nv_inference_compute_output_duration_us"),
    ]
    return [
        dashboard.Row("Latency per request (from counter increases)"),
        timeseries_panel(
            "End-to-end time per request by model",
            "rate(nv_inference_request_duration_us) / rate(nv_inference_request_success).",
            [query(per_request("nv_inference_request_duration_us", SEL), "{{model}}")],
            unit="µs",
        ),
        timeseries_panel(
            "Time per request: queue / compute input / infer / output (all models)",
            "Where the time goes, stacked. Queue time growing means saturation; infer time "
            "growing means the model itself.",
            [query(per_request(counter, SEL, by="job"), name) for name, counter in parts],
            unit="µs",
            stack=True,
        ),
        *[
            timeseries_panel(
                f"{name.capitalize()} time per request by model",
                f"rate({counter}) / rate(nv_inference_request_success).",
                [query(per_request(counter, SEL), "{{model}}")],
                unit="µs",
                span=6,
            )
            for name, counter in parts
        ],
        timeseries_panel(
            "Time to first response (p50, p99)",
            "From nv_inference_first_response_histogram_ms: needs Triton 24.11+ and "
            "--metrics-config histogram_latencies=true; empty otherwise.",
            [
                query(
                    f"histogram_quantile({q}, sum by (model, le) (rate("
                    f"nv_inference_first_response_histogram_ms_bucket{{{SEL}}}[{RATE}])))",
                    f"{{{{model}}}} p{int(q * 100)}",
                )
                for q in (0.5, 0.99)
            ],
            unit="ms",
        ),
    ]


def queue_row() -> list[dashboard.Row | object]:
    return [
        dashboard.Row("Queue and model load"),
        timeseries_panel(
            "Pending requests by model",
            "nv_inference_pending_request_count: queued in the scheduler, batcher or rate "
            "limiter. Hung requests are executing, not pending.",
            [query(f"sum by (model) (nv_inference_pending_request_count{{{SEL}}})", "{{model}}")],
        ),
        timeseries_panel(
            "Model load time",
            "nv_model_load_duration_secs (Triton 24.11+): the last load of each version.",
            [
                query(
                    f"max by (model, version) (nv_model_load_duration_secs{{{SEL}}})",
                    "{{model}} v{{version}}",
                )
            ],
            unit="s",
        ),
    ]
