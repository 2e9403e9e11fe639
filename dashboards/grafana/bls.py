"""BLS pipelines rows: calls per parent->child edge, in-flight vs thread-pool capacity,
executor wait, hung calls, callback errors and dropped spans.

These series come from the in-model library on Triton's own /metrics (pb_utils counters, no
``_total``). Their ``instance`` label is the model instance; Prometheus keeps the target's
``instance`` and renames the library's to ``model_instance``.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from grafana_foundation_sdk.builders import dashboard

from dashboards.grafana.common import (
    POD,
    POD_LEGEND,
    RATE,
    SEL,
    SRV,
    query,
    stat_panel,
    table_panel,
    timeseries_panel,
)

__all__ = [
    "SEL",
    "calls_row",
    "capacity_row",
    "errors_row",
    "fleet_row",
    "streams_row",
    "tempo_explore_url",
]

EDGE = f'{SRV},parent=~"$model"'


def tempo_explore_url(traceql: str) -> str:
    """An Explore link into the Tempo datasource the dashboard's ``tempo`` variable picks
    (any uid): metrics carry no trace ids, so the link searches the spans the library exports
    instead."""
    left = {
        "datasource": "${tempo}",
        "queries": [{"refId": "A", "queryType": "traceql", "query": traceql}],
        "range": {"from": "${__from}", "to": "${__to}"},
    }
    return "/explore?left=" + quote(json.dumps(left, sort_keys=True, separators=(",", ":")))


TOP = 10
"""How many pods a "top pods" panel shows."""


def fleet_row() -> list[dashboard.Row | object]:
    """The fleet at a glance (issue 16): which pods hold hung calls or fill their pools."""
    inflight = f"sum by ({POD}) (triton_obs_bls_inflight{{{SEL}}})"
    return [
        dashboard.Row("Fleet: pods"),
        stat_panel(
            "Pods with a hung BLS call",
            "Pods where some BLS call is in flight past the library's deadline now.",
            f"count(sum by ({POD}) (triton_obs_bls_hung{{{EDGE}}}) > 0) or vector(0)",
        ),
        stat_panel(
            "Pods with callback errors",
            "Pods whose callbacks or tasks raised over the rate window.",
            f"count(sum by ({POD}) (increase(triton_obs_bls_callback_errors_total{{{SEL}}}"
            f"[{RATE}])) > 0) or vector(0)",
        ),
        table_panel(
            f"Top {TOP} pods by BLS calls in flight",
            "BLS calls in flight now per pod, most first (compare with the thread-pool "
            "capacity below).",
            f"topk({TOP}, {inflight})",
            span=12,
        ),
        timeseries_panel(
            f"BLS calls in flight, top {TOP} pods",
            "triton_obs_bls_inflight summed per pod.",
            [query(f"topk({TOP}, {inflight})", POD_LEGEND)],
            span=12,
        ),
    ]


def calls_row() -> list[dashboard.Row | object]:
    calls = f"rate(triton_obs_bls_calls_total{{{EDGE}}}[{RATE}])"
    return [
        dashboard.Row("BLS calls"),
        stat_panel(
            "BLS calls/s",
            "All finished BLS calls of the selected parents.",
            f"sum({calls})",
            unit="reqps",
        ),
        stat_panel(
            "Not ok",
            "Share of BLS calls whose outcome is not ok (error, exception, cancelled).",
            # `or vector(0)`: while every call succeeds no non-ok series exists at all, and
            # the share must read 0 %, not "No data" (seen on the live demo).
            f'(sum(rate(triton_obs_bls_calls_total{{{EDGE},outcome!="ok"}}[{RATE}])) or vector(0))'
            f" / sum({calls})",
            unit="percentunit",
        ),
        stat_panel(
            "Hung now",
            "BLS calls in flight past the library's deadline.",
            f"sum(triton_obs_bls_hung{{{EDGE}}})",
        ),
        stat_panel(
            "Callback errors (range)",
            "Exceptions in callbacks and tasks over the time range.",
            f"sum(increase(triton_obs_bls_callback_errors_total{{{SEL}}}[$__range]))",
        ),
        timeseries_panel(
            "Calls/s by parent -> child and outcome",
            "rate(triton_obs_bls_calls_total): one series per edge of the pipeline and outcome.",
            [
                query(
                    f"sum by (parent, child, outcome) ({calls})",
                    "{{parent}} -> {{child}} {{outcome}}",
                )
            ],
            unit="reqps",
            span=24,
        ),
    ]


def capacity_row() -> list[dashboard.Row | object]:
    return [
        dashboard.Row("In flight vs thread-pool capacity"),
        timeseries_panel(
            "In flight vs capacity per model instance",
            "Calls in flight (and the peak) against the threads they can hold: the python "
            "backend's thread-pool-size and asyncio's default executor. In flight at capacity "
            "= thread-pool exhaustion.",
            [
                query(
                    f"sum by (model, model_instance) (triton_obs_bls_inflight{{{SEL}}})",
                    "in flight {{model_instance}}",
                ),
                query(
                    f"max by (model, model_instance) (triton_obs_bls_inflight_peak{{{SEL}}})",
                    "peak {{model_instance}}",
                ),
                query(
                    f"min by (model, model_instance, pool) "
                    f"(triton_obs_bls_thread_pool_capacity{{{SEL}}})",
                    "capacity {{pool}} {{model_instance}}",
                ),
            ],
        ),
        timeseries_panel(
            "Executor: calls waiting now",
            "async_exec calls queued for an asyncio executor thread.",
            [
                query(
                    f"sum by (model) (triton_obs_bls_executor_waiting{{{SEL}}})",
                    "waiting {{model}}",
                ),
            ],
            span=6,
        ),
        timeseries_panel(
            "Executor: mean wait",
            "Rate of wait seconds over rate of measured waits: how long a call waits for a thread.",
            [
                query(
                    f"sum by (model) (rate(triton_obs_bls_executor_wait_seconds_total{{{SEL}}}"
                    f"[{RATE}])) / sum by (model) (rate(triton_obs_bls_executor_waits_total"
                    f"{{{SEL}}}[{RATE}]))",
                    "mean wait {{model}}",
                ),
            ],
            unit="s",
            span=6,
        ),
    ]


def errors_row() -> list[dashboard.Row | object]:
    hung = timeseries_panel(
        "Hung BLS calls by edge",
        "triton_obs_bls_hung now, and calls ever reported hung per window. The link opens "
        "the bls.call.hung spans (waiting stack, request ids) in Tempo.",
        [
            query(
                f"sum by (parent, child) (triton_obs_bls_hung{{{EDGE}}})",
                "hung {{parent}} -> {{child}}",
            ),
            query(
                "sum by (parent, child) "
                f"(increase(triton_obs_bls_hung_calls_total{{{EDGE}}}[{RATE}]))",
                "newly hung {{parent}} -> {{child}}",
            ),
        ],
    ).links(
        [
            dashboard.DashboardLink("Hung BLS calls in Tempo")
            .url(tempo_explore_url('{ name = "bls.call.hung" }'))
            .target_blank(True)
        ]
    )
    return [
        dashboard.Row("Hung calls, errors, dropped spans"),
        hung,
        timeseries_panel(
            "Callback and task errors",
            "increase(triton_obs_bls_callback_errors_total) by kind (callback, task, asyncio).",
            [
                query(
                    f"sum by (model, kind) (increase(triton_obs_bls_callback_errors_total{{{SEL}}}"
                    f"[{RATE}]))",
                    "{{model}} {{kind}}",
                )
            ],
        ),
        timeseries_panel(
            "Dropped spans/s",
            "Spans the library did not export, by reason. queue_full: the "
            "collector is slow; export_failed: it is down. The model never waits on it.",
            [
                query(
                    "sum by (model, reason) "
                    f"(rate(triton_obs_bls_dropped_spans_total{{{SEL}}}[{RATE}]))",
                    "{{model}} {{reason}}",
                )
            ],
            span=24,
        ),
    ]


def streams_row() -> list[dashboard.Row | object]:
    """Decoupled (streaming) models tracked by ``bls.response_sender``: Triton releases such a
    request before its responses, so only the library sees a stream that stops early."""
    return [
        dashboard.Row("Decoupled streams"),
        timeseries_panel(
            "Streams open and stalled now",
            "Response streams without their final flag yet, and those of them that sent "
            "nothing for longer than the library's stall deadline (a token stream that stopped "
            "half-way).",
            [
                query(
                    f"sum by (model) (triton_obs_bls_streams_open{{{SEL}}})",
                    "open {{model}}",
                ),
                query(
                    f"sum by (model) (triton_obs_bls_streams_stalled{{{SEL}}})",
                    "stalled {{model}}",
                ),
            ],
        ),
        timeseries_panel(
            "Stream responses/s",
            "Responses sent through tracked streams per second.",
            [
                query(
                    f"sum by (model) (rate(triton_obs_bls_stream_responses_total{{{SEL}}}"
                    f"[{RATE}]))",
                    "{{model}}",
                ),
            ],
            unit="reqps",
            span=6,
        ),
        timeseries_panel(
            "New stalls",
            "Stalls newly reported in each window.",
            [
                query(
                    f"sum by (model) (increase(triton_obs_bls_streams_stalled_total{{{SEL}}}"
                    f"[{RATE}]))",
                    "{{model}}",
                ),
            ],
            span=6,
        ),
    ]
