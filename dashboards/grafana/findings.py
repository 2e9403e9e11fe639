"""Findings rows: what ``triton-obs watch`` found, over time and now, and its own health.

The gauges come from the watch's /metrics (``triton_obs_findings{kind,model,severity}`` and
friends); request ids never become labels, so the table links back to the watch output and
the store for them.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard

from dashboards.grafana.common import (
    POD_LEGEND,
    SEL,
    SRV,
    WATCHED_POD,
    query,
    stat_panel,
    table_panel,
    timeseries_panel,
)

__all__ = ["SEL", "collector_row", "findings_row", "fleet_row", "requests_row"]

TOP = 10
"""How many pods a "top pods" panel shows."""
PROCESS = 'job=~"$job",instance=~"$instance"'
"""watch's own process (memory, CPU, version): one per watch, not per Triton pod, so not
narrowed by namespace or pod (a DaemonSet's process series carry its own pod's labels)."""


def _pods_where(expr: str) -> str:
    """How many pods ``expr`` (summed per pod) is above 0 for; 0, not "No data", when none."""
    return f"count(sum by ({WATCHED_POD}) ({expr}) > 0) or vector(0)"


def fleet_row() -> list[dashboard.Row | object]:
    """The whole fleet at a glance: how many pods are in trouble now and which (issue 16)."""
    findings = f"triton_obs_findings{{{SEL}}}"
    hung = f"triton_obs_hung_requests{{{SEL}}}"
    return [
        dashboard.Row("Fleet: pods in trouble now"),
        stat_panel(
            "Pods watched",
            "Triton pods (targets) whose logs or endpoints a watch follows now.",
            "count(count by (" + WATCHED_POD + ") "
            f"(triton_obs_collector_last_cycle_timestamp_seconds{{{SRV}}}))",
        ),
        stat_panel(
            "Pods with a hung request",
            "Pods with at least one request executing past its deadline now.",
            _pods_where(hung),
        ),
        stat_panel(
            "Pods with findings",
            "Pods with at least one active finding now (triton_obs_findings), any kind.",
            _pods_where(findings),
        ),
        stat_panel(
            "Pods with a critical finding",
            "Pods with at least one active critical finding now.",
            _pods_where(f'triton_obs_findings{{{SEL},severity="critical"}}'),
        ),
        table_panel(
            "Pods with findings now",
            "One row per pod with its count of active findings, most first. Open a pod's "
            "findings, request timelines and health in the triage app's Fleet page (watch's "
            "API).",
            f"sort_desc(sum by ({WATCHED_POD}) ({findings}) > 0)",
            span=12,
        ),
        timeseries_panel(
            f"Hung requests, top {TOP} pods",
            "Requests executing past their deadline, per pod: the pods holding the most.",
            [query(f"topk({TOP}, sum by ({WATCHED_POD}) ({hung}))", POD_LEGEND)],
            span=12,
        ),
    ]


def findings_row() -> list[dashboard.Row | object]:
    active = f"triton_obs_findings{{{SEL}}}"
    return [
        dashboard.Row("Findings"),
        stat_panel("Active findings", "Findings active now, all kinds.", f"sum({active})"),
        stat_panel(
            "Critical",
            "Active critical findings.",
            f'sum(triton_obs_findings{{{SEL},severity="critical"}})',
        ),
        stat_panel(
            "Hung requests",
            "Requests executing past their deadline now.",
            f"sum(triton_obs_hung_requests{{{SEL}}})",
        ),
        stat_panel(
            "Oldest in flight",
            "Age of the oldest request still inside Triton.",
            f"max(triton_obs_oldest_inflight_seconds{{{SEL}}})",
            unit="s",
        ),
        timeseries_panel(
            "Findings by kind",
            "Active findings over time, by kind.",
            [query(f"sum by (kind) ({active})", "{{kind}}")],
            span=8,
            stack=True,
        ),
        timeseries_panel(
            "Findings by model",
            "Active findings over time, by model.",
            [query(f"sum by (model) ({active})", "{{model}}")],
            span=8,
            stack=True,
        ),
        timeseries_panel(
            "Findings by severity",
            "Active findings over time, by severity.",
            [query(f"sum by (severity) ({active})", "{{severity}}")],
            span=8,
            stack=True,
        ),
        table_panel(
            "Active findings now",
            "One row per pod, kind, model and severity with a count. Request ids, evidence "
            "and advice are in `triton-obs watch`'s output, its API and its store.",
            f"sum by ({WATCHED_POD}, kind, model, severity) ({active}) > 0",
        ),
    ]


def requests_row() -> list[dashboard.Row | object]:
    return [
        dashboard.Row("Requests inside Triton"),
        timeseries_panel(
            "Oldest in-flight request by pod and model",
            "From the verbose log's request state machine: a hang is an age that keeps growing.",
            [
                query(
                    f"max by ({WATCHED_POD}, model) (triton_obs_oldest_inflight_seconds{{{SEL}}})",
                    f"{POD_LEGEND} {{{{model}}}}",
                )
            ],
            unit="s",
            span=8,
        ),
        timeseries_panel(
            "Hung requests by pod and model",
            "triton_obs_hung_requests: past the deadline now.",
            [
                query(
                    f"sum by ({WATCHED_POD}, model) (triton_obs_hung_requests{{{SEL}}})",
                    f"{POD_LEGEND} {{{{model}}}}",
                )
            ],
            span=8,
        ),
        timeseries_panel(
            "BLS children in flight by parent",
            "Seen from the log (any model, instrumented "
            "or not): child requests whose outermost caller is the model.",
            [query(f"sum by (model) (triton_obs_bls_children_inflight{{{SEL}}})", "{{model}}")],
            span=8,
        ),
        timeseries_panel(
            "Instances busy by model",
            "From the verbose log's instance lines, whether or not requests carry ids: a model "
            "whose every instance stays busy while nothing completes is held.",
            [query(f"sum by (model) (triton_obs_busy_instances{{{SEL}}})", "{{model}}")],
            span=12,
        ),
        timeseries_panel(
            "Requests queued by model (log)",
            "Admitted and not yet executing, from the verbose log (ids not needed); compare "
            "with nv_inference_pending_request_count on Triton's own page.",
            [query(f"sum by (model) (triton_obs_queued_requests{{{SEL}}})", "{{model}}")],
            span=12,
        ),
    ]


def collector_row() -> list[dashboard.Row | object]:
    return [
        dashboard.Row("triton-obs watch itself"),
        timeseries_panel(
            "Log bytes not yet read",
            "The tailer's lag behind Triton's log.",
            [query(f"triton_obs_tail_lag_bytes{{{SRV}}}", "{{instance}} {{target}}")],
            unit="bytes",
            span=4,
        ),
        timeseries_panel(
            "Seconds since the last cycle",
            "A collector that stopped cycling grows this.",
            [
                query(
                    f"time() - triton_obs_collector_last_cycle_timestamp_seconds{{{SRV}}}",
                    "{{instance}} {{target}}",
                ),
            ],
            unit="s",
            span=4,
        ),
        timeseries_panel(
            "watch's memory",
            "Resident memory of the watch process (its live window is bounded; a rise that "
            "never levels off is a leak).",
            [query(f"process_resident_memory_bytes{{{PROCESS}}}", "{{instance}}")],
            unit="bytes",
            span=4,
        ),
        timeseries_panel(
            "watch's CPU",
            "Share of one core the watch process uses.",
            [
                query(
                    f"rate(process_cpu_seconds_total{{{PROCESS}}}[$__rate_interval])",
                    "{{instance}}",
                )
            ],
            unit="percentunit",
            span=4,
        ),
        table_panel(
            "watch versions",
            "Which triton-observability version each watch runs.",
            f"triton_obs_build_info{{{PROCESS}}}",
            span=8,
        ),
        timeseries_panel(
            "Signals the detectors have",
            "1: read in the last window; 0: missing (no verbose log, no /metrics, no in-model "
            "library...), and the kinds that need it cannot be seen; 0.5: request ids on some "
            "requests only. `triton-obs watch` prints which kinds are blind.",
            [query(f"max by (signal) (triton_obs_signal_present{{{SRV}}})", "{{signal}}")],
            span=8,
        ),
        timeseries_panel(
            "Log lines/s read and skipped",
            "Counters from prometheus_client: `_total` on the wire.",
            [
                query(
                    f"rate(triton_obs_log_lines_read_total{{{SRV}}}[$__rate_interval])",
                    "read {{instance}} {{target}}",
                ),
                query(
                    f"sum by (reason) (rate(triton_obs_log_lines_skipped_total{{{SRV}}}"
                    f"[$__rate_interval]))",
                    "skipped {{reason}}",
                ),
            ],
            span=8,
        ),
        timeseries_panel(
            "Scrapes and store",
            "Scrape failures/s by signal, store write errors/s.",
            [
                query(
                    f"sum by (signal) (rate(triton_obs_scrape_failures_total{{{SRV}}}"
                    f"[$__rate_interval]))",
                    "scrape failures {{signal}}",
                ),
                query(
                    f"sum by (reason) (rate(triton_obs_store_errors_total{{{SRV}}}"
                    f"[$__rate_interval]))",
                    "store errors {{reason}}",
                ),
            ],
            span=8,
        ),
        timeseries_panel(
            "Detectors that raised",
            "Passes in which a detector raised over the last 10m, by detector: its findings "
            "are missing from them (alert TritonObsDetectorFailing; the traceback is in "
            "watch's log). 0 when all is well.",
            [
                query(
                    f"sum by (detector) (increase(triton_obs_detector_failures_total{{{SRV}}}"
                    f"[10m]))",
                    "{{detector}}",
                ),
            ],
            span=24,
        ),
    ]
