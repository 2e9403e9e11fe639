"""Triton's /metrics page: a fast pure parser and a catalogue of the families Triton writes."""

from collectors.metrics.catalogue import CatalogueEntry, catalogue, describe
from collectors.metrics.parser import (
    MetricsParseError,
    ParsedPage,
    ParseProblem,
    iter_metric_families,
    parse_metrics,
    parse_metrics_lenient,
)

__all__ = [
    "CatalogueEntry",
    "MetricsParseError",
    "ParseProblem",
    "ParsedPage",
    "catalogue",
    "describe",
    "iter_metric_families",
    "parse_metrics",
    "parse_metrics_lenient",
]
