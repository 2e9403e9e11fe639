"""The demo's live view: per model, from Triton's own counters, once a second.

Rates and per-request times come from counter increases between two scrapes (reset-safe via
``observability.rates``), never from raw counters; pending is Triton's instantaneous gauge.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from rich.table import Table

from collectors.metrics.parser import parse_metrics_lenient
from observability.rates import counter_increase

__all__ = ["LiveMetrics", "ModelRow"]

_COUNTERS = (
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
    "nv_inference_exec_count",
    "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us",
)


@dataclass(frozen=True)
class ModelRow:
    model: str
    req_per_s: float
    fail_per_s: float
    queue_ms: float | None
    """Mean queue time per request over the last interval."""
    compute_ms: float | None
    """Mean compute (input + infer + output) per inference over the last interval."""
    pending: float


def _model_totals(text: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per model: each counter summed over versions and reasons; and the pending gauge."""
    totals: dict[str, dict[str, float]] = {}
    pending: dict[str, float] = {}
    for family in parse_metrics_lenient(text).families:
        if family.name not in _COUNTERS and family.name != "nv_inference_pending_request_count":
            continue
        for sample in family.samples:
            model = sample.label("model")
            if not model:
                continue
            if family.name == "nv_inference_pending_request_count":
                pending[model] = pending.get(model, 0.0) + sample.value
            else:
                per = totals.setdefault(model, {})
                per[family.name] = per.get(family.name, 0.0) + sample.value
    return totals, pending


class LiveMetrics:
    """Scrapes one /metrics URL and keeps the last two scrapes to derive per-interval rows."""

    def __init__(self, url: str, timeout_s: float = 2.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._prev: tuple[float, dict[str, dict[str, float]]] | None = None
        self.rows: list[ModelRow] = []
        self.error: str = ""

    def scrape(self) -> list[ModelRow]:
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout_s) as resp:
                text = resp.read().decode("utf-8", errors="replace")
        except (urllib.error.URLError, OSError) as err:
            self.error = f"scrape failed: {err}"
            return self.rows
        self.error = ""
        now = time.monotonic()
        totals, pending = _model_totals(text)
        if self._prev is not None:
            self.rows = self.rows_between(self._prev, (now, totals), pending)
        self._prev = (now, totals)
        return self.rows

    @staticmethod
    def rows_between(
        prev: tuple[float, dict[str, dict[str, float]]],
        cur: tuple[float, dict[str, dict[str, float]]],
        pending: dict[str, float],
    ) -> list[ModelRow]:
        (t0, before), (t1, after) = prev, cur
        dt = max(t1 - t0, 1e-9)
        rows = []
        for model in sorted(after):
            a, b = after[model], before.get(model, {})

            def inc(name: str, a: dict[str, float] = a, b: dict[str, float] = b) -> float:
                # A series first seen in this scrape has no interval yet.
                if name not in b or name not in a:
                    return 0.0
                return counter_increase(b[name], a[name])

            ok, failed = inc("nv_inference_request_success"), inc("nv_inference_request_failure")
            infers = inc("nv_inference_count")
            compute = sum(
                inc(f"nv_inference_compute_{part}_duration_us")
                for part in ("input", "infer", "output")
            )
            requests = ok + failed
            rows.append(
                ModelRow(
                    model=model,
                    req_per_s=ok / dt,
                    fail_per_s=failed / dt,
                    queue_ms=inc("nv_inference_queue_duration_us") / requests / 1000
                    if requests
                    else None,
                    compute_ms=compute / infers / 1000 if infers else None,
                    pending=pending.get(model, 0.0),
                )
            )
        return rows

    def table(self) -> Table:
        table = Table(title="per model (last second)", title_justify="left")
        for col in ("model", "req/s", "fail/s", "queue ms/req", "compute ms/inf", "pending"):
            table.add_column(col, justify="left" if col == "model" else "right")
        for r in self.rows:
            table.add_row(
                r.model,
                f"{r.req_per_s:.1f}",
                f"{r.fail_per_s:.1f}",
                "-" if r.queue_ms is None else f"{r.queue_ms:.1f}",
                "-" if r.compute_ms is None else f"{r.compute_ms:.1f}",
                f"[red]{r.pending:.0f}[/]" if r.pending else "0",
            )
        if self.error:
            table.caption = self.error
        return table
