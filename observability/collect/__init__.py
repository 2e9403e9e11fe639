"""``triton-obs collect``: run every collector live into the store, with self-metrics."""

from observability.collect.runner import CollectConfig, CollectRunner
from observability.collect.selfmetrics import SelfMetrics

__all__ = ["CollectConfig", "CollectRunner", "SelfMetrics"]
