"""Findings and request health as Prometheus gauges on ``triton-obs watch``'s /metrics.

Labels are bounded by construction: kind (a fixed list), model (the repository's models),
severity (three values). Request ids never become labels; they live in the findings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Gauge

from observability.detectors.requests import requests_of
from observability.detectors.window import Window
from observability.findings import Finding

__all__ = ["FindingsExporter"]


class FindingsExporter:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.findings = Gauge(
            "triton_obs_findings",
            "Active findings by kind, model and severity",
            ["kind", "model", "severity"],
            registry=registry,
        )
        self.hung = Gauge(
            "triton_obs_hung_requests", "Requests hung past their deadline now", ["model"],
            registry=registry,
        )  # fmt: skip
        self.bls_inflight = Gauge(
            "triton_obs_bls_inflight",
            "BLS child requests in flight, by the calling (parent) model",
            ["model"],
            registry=registry,
        )
        self.oldest = Gauge(
            "triton_obs_oldest_inflight_seconds",
            "Age of the oldest request still in Triton, by model",
            ["model"],
            registry=registry,
        )
        self._models: set[str] = set()
        self._finding_labels: set[tuple[str, str, str]] = set()

    def update(self, findings: Sequence[Finding], window: Window) -> None:
        counts = Counter((f.kind, f.model, f.severity.value) for f in findings)
        for labels in self._finding_labels - set(counts):
            self.findings.labels(*labels).set(0)
        for labels, n in counts.items():
            self.findings.labels(*labels).set(n)
        self._finding_labels |= set(counts)

        hung = Counter(f.model for f in findings if f.kind == "hung_request")
        requests = requests_of(window)
        oldest: dict[str, float] = {}
        inflight: Counter[str] = Counter()
        for cycle in requests.lifecycles:
            if not cycle.open or not cycle.model or cycle.started_ns is None:
                continue
            age = (window.until_ns - cycle.started_ns) / 1e9
            oldest[cycle.model] = max(oldest.get(cycle.model, 0.0), age)
            parent = requests.parent_id(cycle.request_id)
            if parent is not None:
                caller = requests.outermost(parent)
                if caller is not None and caller.model:
                    inflight[caller.model] += 1
        models = set(requests.instances) | set(oldest) | set(hung) | self._models
        self._models = models
        for model in models:
            self.hung.labels(model).set(hung.get(model, 0))
            self.oldest.labels(model).set(oldest.get(model, 0.0))
            self.bls_inflight.labels(model).set(inflight.get(model, 0))
