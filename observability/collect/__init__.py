"""``triton-obs collect``: run every collector live into the store, with self-metrics."""

from observability.collect.config import CollectConfig
from observability.collect.runner import CollectRunner
from observability.collect.selfmetrics import SelfMetrics
from observability.collect.sources import SOURCES, Source

__all__ = ["SOURCES", "CollectConfig", "CollectRunner", "SelfMetrics", "Source"]
