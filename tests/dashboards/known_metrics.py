"""Every metric name a panel or a rule may use, from the three sources that define them.

Why from the code and not a hand list: Triton's catalogue (``collectors/metrics/catalogue.csv``),
the BLS library's ``CATALOGUE`` and the registry ``triton-obs watch`` serves are the truth; a
renamed metric must fail the linter, not silently empty a panel.
"""

from __future__ import annotations

import csv
from pathlib import Path

from prometheus_client import CollectorRegistry

__all__ = ["PROMETHEUS_SYNTHETIC", "bls_names", "known_names", "triton_names", "watch_names"]

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "ALERTS"}
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}


def triton_names() -> set[str]:
    """Triton's families as exposed: counters without ``_total``, histogram/summary series."""
    names = set()
    with (ROOT / "collectors" / "metrics" / "catalogue.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            names.update(row["name"] + s for s in _SUFFIXES.get(row["type"], ("",)))
    return names


def bls_names() -> set[str]:
    """The in-model library's families, published through Triton (no ``_total`` either)."""
    from observability.bls import CATALOGUE

    return {spec.name for spec in CATALOGUE}


def watch_names() -> set[str]:
    """What ``triton-obs watch`` serves: its SelfMetrics and FindingsExporter, built in-process,
    with prometheus_client's wire names (counters gain ``_total``)."""
    from observability.collect import SelfMetrics
    from observability.exporters.prometheus import FindingsExporter

    registry = CollectorRegistry()
    SelfMetrics(registry)
    FindingsExporter(registry)
    names = set()
    for family in registry.collect():
        if family.type == "counter":
            names.update({family.name + "_total", family.name + "_created"})
        elif family.type in ("histogram", "summary"):
            names.update(family.name + s for s in ("_bucket", "_sum", "_count", "_created"))
        elif family.type == "info":
            names.add(family.name + "_info")
        else:
            names.add(family.name)
    return names


def known_names() -> set[str]:
    return triton_names() | bls_names() | watch_names() | PROMETHEUS_SYNTHETIC
