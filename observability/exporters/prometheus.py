"""Findings and request health as Prometheus gauges on ``triton-obs watch``'s /metrics.

Labels are bounded by construction: kind (a fixed list), model (the repository's models),
severity (three values). Request ids never become labels; they live in the findings.

Two more bounds, because model names come from what Triton logged and from OTLP spans that
anything on the host may post: a label set that is no longer current is shown as 0 for
``RETIRE_AFTER_S`` (so a scrape sees the drop and graphs do not just stop) and then removed,
so models that come and go do not pile up; and at most ``MAX_MODELS`` model names are
labels at once, the rest are summed under ``model="_other"``. A series count is therefore
at most ``(MAX_MODELS + 1) * (len(KINDS) * 3 + 5) + 6``, and in practice
``models * (kinds seen + 5) + 6``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client import Counter as PromCounter

from observability.detectors.requests import requests_of
from observability.detectors.signals import IDLE, PARTLY, PRESENT, Coverage
from observability.detectors.window import Window
from observability.detectors.work import ModelWork
from observability.findings import Finding

__all__ = ["MAX_MODELS", "OTHER_MODEL", "RETIRE_AFTER_S", "FindingsExporter"]

MAX_MODELS = 1000
"""Distinct model labels at once; a Triton serving more is rare, a flood of names is not."""
OTHER_MODEL = "_other"
RETIRE_AFTER_S = 300.0
"""How long a label set stays at 0 before it is removed: several scrape intervals."""

Labels = tuple[str, ...]


class _Series:
    """One gauge's label sets: current values, and those at 0 since a time (retiring)."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge = gauge
        self.zero_since: dict[Labels, int] = {}
        self.live: set[Labels] = set()

    def publish(self, values: dict[Labels, float], now_ns: int) -> None:
        for labels, value in values.items():
            self.gauge.labels(*labels).set(value)
            self.zero_since.pop(labels, None)
        for labels in self.live - values.keys():
            self.zero_since.setdefault(labels, now_ns)
            self.gauge.labels(*labels).set(0)
        limit = int(RETIRE_AFTER_S * 1e9)
        for labels, since in list(self.zero_since.items()):
            if now_ns - since >= limit:
                self.gauge.remove(*labels)
                del self.zero_since[labels]
        self.live = set(values) | set(self.zero_since)


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
            "triton_obs_bls_children_inflight",
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
        self.busy = Gauge(
            "triton_obs_busy_instances",
            "Instances executing a batch now, by model (verbose log; ids not needed)",
            ["model"],
            registry=registry,
        )
        self.queued = Gauge(
            "triton_obs_queued_requests",
            "Requests admitted and not yet executing, by model (verbose log; ids not needed)",
            ["model"],
            registry=registry,
        )
        self.signal = Gauge(
            "triton_obs_signal_present",
            "Whether the detectors had this signal in their last window (1 yes, 0.5 for "
            "request ids on some requests only, 0 no; unchanged while idle)",
            ["signal"],
            registry=registry,
        )
        self.detector_failures = PromCounter(
            "triton_obs_detector_failures",
            "Detection passes in which a detector raised, by detector: its findings are "
            "missing from them (the watch's log has the traceback)",
            ["detector"],
            registry=registry,
        )
        self._series = [_Series(g) for g in (self.findings, self.hung, self.bls_inflight)]
        self._series += [_Series(self.oldest), _Series(self.busy), _Series(self.queued)]

    def detectors(self, kinds: Sequence[str]) -> None:
        """Start each detector's failure count at 0, so the first failure is an increase
        (a counter first seen at 1 has no rise for ``increase()`` to see)."""
        for kind in kinds:
            self.detector_failures.labels(kind)

    def detector_failed(self, kind: str) -> None:
        self.detector_failures.labels(kind).inc()

    def _labelled(self) -> set[str]:
        """Model names that hold a label now (current or retiring)."""
        models = {labels[1] for labels in self._series[0].live}
        for series in self._series[1:]:
            models.update(labels[0] for labels in series.live)
        return models

    def update(
        self,
        findings: Sequence[Finding],
        window: Window,
        hung: Sequence[Finding] | None = None,
        work: Sequence[ModelWork] = (),
        signals: Coverage | None = None,
    ) -> None:
        """``findings`` are the active ones; ``hung`` those the detectors see *now* (default:
        all), since a hang that aged out of the window is history, not a hung request.
        ``work`` (``detectors/work.py``) adds what requests without ids hold."""
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
        hung_now = Counter(
            f.model for f in (findings if hung is None else hung) if f.kind == "hung_request"
        )
        for m in work:
            if m.active:
                oldest[m.model] = max(oldest.get(m.model, 0.0), m.oldest_s)
        models = set(requests.instances) | set(oldest) | set(hung_now) | {m.model for m in work}

        # Names already labelled (retiring ones too) keep their label; new ones get one while
        # fewer than MAX_MODELS names are labelled.
        labelled = self._labelled()
        admitted = set(labelled)
        for name in sorted((models | {f.model for f in findings}) - labelled):
            if len(admitted) >= MAX_MODELS:
                break
            admitted.add(name)

        def label(model: str) -> str:
            return model if model in admitted else OTHER_MODEL

        counts: Counter[Labels] = Counter(
            (f.kind, label(f.model), f.severity.value) for f in findings
        )
        hung_by: Counter[Labels] = Counter()
        inflight_by: Counter[Labels] = Counter()
        oldest_by: dict[Labels, float] = {}
        busy_by: Counter[Labels] = Counter()
        queued_by: Counter[Labels] = Counter()
        for m in work:
            busy_by[(label(m.model),)] += len(m.busy)
            queued_by[(label(m.model),)] += m.queued or 0
        for model in models:
            key = (label(model),)
            hung_by[key] += hung_now.get(model, 0)
            inflight_by[key] += inflight.get(model, 0)
            oldest_by[key] = max(oldest_by.get(key, 0.0), oldest.get(model, 0.0))
        now = window.until_ns
        self._series[0].publish(dict(counts), now)
        self._series[1].publish(dict(hung_by), now)
        self._series[2].publish(dict(inflight_by), now)
        self._series[3].publish(oldest_by, now)
        self._series[4].publish(dict(busy_by), now)
        self._series[5].publish(dict(queued_by), now)
        for sig in signals.signals if signals is not None else ():
            if sig.state != IDLE:
                value = {PRESENT: 1.0, PARTLY: 0.5}.get(sig.state, 0.0)
                self.signal.labels(sig.name).set(value)
