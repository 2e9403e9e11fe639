"""Triton overview rows: GPU, CPU, pinned memory and the response cache.

GPU series need DCGM and are absent on CPU-only hosts; the panels then say "No data", which is
the truth. Server-wide gauges carry no model label, so they use the job/instance selector only.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard

from dashboards.grafana.common import RATE, SEL, SRV, query, timeseries_panel

__all__ = ["cache_row", "resources_row"]


def resources_row() -> list[dashboard.Row | object]:
    return [
        dashboard.Row("GPU, CPU and memory"),
        timeseries_panel(
            "GPU utilisation",
            "nv_gpu_utilization per device (DCGM).",
            [query(f"nv_gpu_utilization{{{SRV}}}", "{{gpu_uuid}}")],
            unit="percentunit",
            span=8,
        ),
        timeseries_panel(
            "GPU memory",
            "Used vs total per device (every process on the GPU).",
            [
                query(f"nv_gpu_memory_used_bytes{{{SRV}}}", "used {{gpu_uuid}}"),
                query(f"nv_gpu_memory_total_bytes{{{SRV}}}", "total {{gpu_uuid}}"),
            ],
            unit="bytes",
            span=8,
        ),
        timeseries_panel(
            "GPU power",
            "Draw vs limit per device; rate(nv_energy_consumption) is the same draw.",
            [
                query(f"nv_gpu_power_usage{{{SRV}}}", "usage {{gpu_uuid}}"),
                query(f"nv_gpu_power_limit{{{SRV}}}", "limit {{gpu_uuid}}"),
                query(f"rate(nv_energy_consumption{{{SRV}}}[{RATE}])", "from energy {{gpu_uuid}}"),
            ],
            unit="watt",
            span=8,
        ),
        timeseries_panel(
            "CPU utilisation",
            "nv_cpu_utilization: the whole host, not only Triton.",
            [query(f"nv_cpu_utilization{{{SRV}}}", "{{instance}}")],
            unit="percentunit",
            span=8,
        ),
        timeseries_panel(
            "Host memory",
            "nv_cpu_memory_used_bytes vs total (whole host).",
            [
                query(f"nv_cpu_memory_used_bytes{{{SRV}}}", "used {{instance}}"),
                query(f"nv_cpu_memory_total_bytes{{{SRV}}}", "total {{instance}}"),
            ],
            unit="bytes",
            span=8,
        ),
        timeseries_panel(
            "Pinned memory pool",
            "CUDA pinned host memory used vs the pool size.",
            [
                query(f"nv_pinned_memory_pool_used_bytes{{{SRV}}}", "used {{instance}}"),
                query(f"nv_pinned_memory_pool_total_bytes{{{SRV}}}", "total {{instance}}"),
            ],
            unit="bytes",
            span=8,
        ),
    ]


def cache_row() -> list[dashboard.Row | object]:
    hits = f"sum by (model) (rate(nv_cache_num_hits_per_model{{{SEL}}}[{RATE}]))"
    misses = f"sum by (model) (rate(nv_cache_num_misses_per_model{{{SEL}}}[{RATE}]))"
    return [
        dashboard.Row("Response cache"),
        timeseries_panel(
            "Cache hit ratio by model",
            "hits / (hits + misses); only models with a cache.",
            [query(f"{hits} / ({hits} + {misses})", "{{model}}")],
            unit="percentunit",
        ),
        timeseries_panel(
            "Cache time per lookup by model",
            "Hit time per hit and miss (lookup + insert) time per miss.",
            [
                query(
                    f"sum by (model) (rate(nv_cache_hit_duration_per_model{{{SEL}}}[{RATE}]))"
                    f" / {hits}",
                    "hit {{model}}",
                ),
                query(
                    f"sum by (model) (rate(nv_cache_miss_duration_per_model{{{SEL}}}[{RATE}]))"
                    f" / {misses}",
                    "miss {{model}}",
                ),
            ],
            unit="µs",
        ),
    ]
