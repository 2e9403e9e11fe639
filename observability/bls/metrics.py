"""``triton_obs_bls_*`` metrics: counted locally on the hot path, published to Triton's /metrics.

Why local counting: every ``pb_utils`` metric operation is a blocking round trip from the stub
to the Triton process, far too slow for each BLS call; so calls only bump Python dicts and the
watchdog thread pushes the deltas about once a second. Why a ``model_instance`` label
everywhere: all instances of a model share a metric family in Triton, and a label set shared
by two stubs would be one series that the first stub to finalize deletes for everyone. Not
``instance``: Prometheus keeps that name for the scrape target (and renames ours
``exported_instance``). Counters end in ``_total`` on the wire, as Prometheus's conventions
ask (Triton writes the name it is given).
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["CATALOGUE", "MAX_CHILDREN", "OTHER_CHILD", "BlsMetrics", "MetricSpec", "Publisher"]

MAX_CHILDREN = 64
"""Distinct ``child`` label values per instance. The child's name is read from the child's
request id when Triton does not expose it (``<parent id>.<model>``); a model that builds ids
like ``<parent id>.<uuid>`` would otherwise make one series per request."""
OTHER_CHILD = "other"


@dataclass(frozen=True)
class MetricSpec:
    """One published family: its name, kind (``COUNTER``/``GAUGE``), labels and meaning."""

    name: str
    kind: str
    labels: tuple[str, ...]
    help: str


CATALOGUE: tuple[MetricSpec, ...] = (
    MetricSpec(
        "triton_obs_bls_calls_total",
        "COUNTER",
        ("parent", "model_instance", "child", "outcome"),
        "BLS calls finished, by parent->child edge and outcome (ok|error|exception|cancelled)",
    ),
    MetricSpec(
        "triton_obs_bls_inflight",
        "GAUGE",
        ("model", "model_instance"),
        "BLS calls in flight in this instance (waiting for or holding an executor thread)",
    ),
    MetricSpec(
        "triton_obs_bls_inflight_peak",
        "GAUGE",
        ("model", "model_instance"),
        "Most BLS calls ever in flight at once in this instance (survives short bursts)",
    ),
    MetricSpec(
        "triton_obs_bls_executor_waiting",
        "GAUGE",
        ("model", "model_instance"),
        "async_exec calls queued for an asyncio executor thread right now",
    ),
    MetricSpec(
        "triton_obs_bls_executor_wait_seconds_total",
        "COUNTER",
        ("model", "model_instance"),
        "Total seconds async_exec calls waited for an asyncio executor thread",
    ),
    MetricSpec(
        "triton_obs_bls_executor_waits_total",
        "COUNTER",
        ("model", "model_instance"),
        "async_exec calls whose executor wait was measured (divide the seconds by this)",
    ),
    MetricSpec(
        "triton_obs_bls_thread_pool_capacity",
        "GAUGE",
        ("model", "model_instance", "pool"),
        "Threads BLS calls can hold: pool=python_backend (thread-pool-size) or asyncio_executor",
    ),
    MetricSpec(
        "triton_obs_bls_hung",
        "GAUGE",
        ("parent", "model_instance", "child"),
        "BLS calls in flight past the deadline right now",
    ),
    MetricSpec(
        "triton_obs_bls_hung_calls_total",
        "COUNTER",
        ("parent", "model_instance", "child"),
        "BLS calls that were ever reported hung",
    ),
    MetricSpec(
        "triton_obs_bls_streams_open",
        "GAUGE",
        ("model", "model_instance"),
        "Decoupled response streams open (no final flag sent yet) in this instance",
    ),
    MetricSpec(
        "triton_obs_bls_streams_stalled",
        "GAUGE",
        ("model", "model_instance"),
        "Open decoupled streams that sent nothing for longer than the stall deadline, now",
    ),
    MetricSpec(
        "triton_obs_bls_streams_stalled_total",
        "COUNTER",
        ("model", "model_instance"),
        "Stalls of decoupled streams ever reported (a stream that stalls twice counts twice)",
    ),
    MetricSpec(
        "triton_obs_bls_stream_responses_total",
        "COUNTER",
        ("model", "model_instance"),
        "Responses sent through tracked decoupled streams (the final-flag-only send excluded)",
    ),
    MetricSpec(
        "triton_obs_bls_callback_errors_total",
        "COUNTER",
        ("model", "model_instance", "kind"),
        "Exceptions raised by callbacks and tasks (kind=callback|task|asyncio)",
    ),
    MetricSpec(
        "triton_obs_bls_dropped_spans_total",
        "COUNTER",
        ("model", "model_instance", "reason"),
        "Spans not exported (reason=queue_full|export_failed|shutdown)",
    ),
)
_SPECS = {spec.name: spec for spec in CATALOGUE}


class BlsMetrics:
    """Hot-path counters and gauges: plain dict updates under a lock, no I/O."""

    def __init__(self, model: str, instance: str) -> None:
        self.model = model
        self.instance = instance
        self._lock = threading.Lock()
        self.counters: dict[tuple[str, tuple[str, ...]], float] = {}
        self.gauges: dict[tuple[str, tuple[str, ...]], float] = {}
        self._call_keys: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        self._children: set[str] = set()

    def add(self, name: str, labels: tuple[str, ...], value: float = 1.0) -> None:
        key = (name, labels)
        with self._lock:
            self.counters[key] = self.counters.get(key, 0.0) + value

    def add_call(self, child: str, outcome: str) -> None:
        """``triton_obs_bls_calls_total`` + 1: :meth:`add` without building its key each call."""
        key = self._call_keys.get((child, outcome))
        if key is None:
            key = ("triton_obs_bls_calls_total", self.edge(child, outcome))
            if key[1][2] == child:  # cache admitted children only: the cache stays bounded
                self._call_keys[(child, outcome)] = key
        with self._lock:
            self.counters[key] = self.counters.get(key, 0.0) + 1.0

    def set(self, name: str, labels: tuple[str, ...], value: float) -> None:
        self.gauges[(name, labels)] = value

    def own(self, *extra: str) -> tuple[str, ...]:
        """Labels ``(model, instance, *extra)``."""
        return (self.model, self.instance, *extra)

    def edge(self, child: str, *extra: str) -> tuple[str, ...]:
        """Labels ``(parent, instance, child, *extra)``; past ``MAX_CHILDREN`` distinct
        children, new ones are counted as ``child="other"``."""
        if child not in self._children:
            with self._lock:
                if len(self._children) < MAX_CHILDREN:
                    self._children.add(child)
                else:
                    child = OTHER_CHILD
        return (self.model, self.instance, child, *extra)

    def snapshot(self) -> tuple[dict, dict]:
        with self._lock:
            return dict(self.counters), dict(self.gauges)


class Publisher:
    """Pushes :class:`BlsMetrics` to ``pb_utils.MetricFamily``; a no-op outside Triton.

    Called from one thread only (the watchdog). Any failure of the metrics API disables
    publishing for good, with one line on stderr, rather than disturbing the model.
    """

    def __init__(self, metrics: BlsMetrics, pb_utils: Any | None) -> None:
        self._metrics = metrics
        self._pb: Any = pb_utils  # None disables publishing (see enabled)
        self._families: dict[str, Any] = {}
        self._series: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._published: dict[tuple[str, tuple[str, ...]], float] = {}
        self.enabled = pb_utils is not None and hasattr(pb_utils, "MetricFamily")

    def _series_for(self, name: str, labels: tuple[str, ...]) -> Any:
        key = (name, labels)
        series = self._series.get(key)
        if series is None:
            spec = _SPECS[name]
            family = self._families.get(name)
            if family is None:
                kind = getattr(self._pb.MetricFamily, spec.kind)
                family = self._pb.MetricFamily(name=name, description=spec.help, kind=kind)
                self._families[name] = family
            series = family.Metric(labels=dict(zip(spec.labels, labels, strict=True)))
            self._series[key] = series
        return series

    def publish(self) -> None:
        if not self.enabled:
            return
        counters, gauges = self._metrics.snapshot()
        try:
            for key, total in counters.items():
                delta = total - self._published.get(key, 0.0)
                if delta > 0:
                    self._series_for(*key).increment(delta)
                    self._published[key] = total
            for key, value in gauges.items():
                if self._published.get(key) != value:
                    self._series_for(*key).set(value)
                    self._published[key] = value
        except Exception as exc:  # the metrics API must never hurt the model
            self.enabled = False
            print(f"triton-obs bls: metrics disabled: {exc!r}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Drop the series and families (Triton removes them from /metrics)."""
        self._series.clear()
        self._families.clear()
