"""What each metric family on Triton's /metrics page means, read from a checked-in CSV.

Why a data file: names, types and help strings are Triton's (``src/metrics.cc`` in
triton-inference-server/core, checked against pages recorded from tritonserver 2.51), and
a reviewer should be able to diff them against a new release without reading code.
``labels`` lists the label names Triton adds besides ``namespace`` (model namespacing),
``gpu_uuid`` on per-model series of GPU instances and ``_<tag>`` model metric tags.
``since`` is the first release carrying the family, ``<2.40`` for older ones; releases
after 2.51 are inferred from the date of the core commit that added the family.
Families a model publishes itself (python backend ``pb_utils.MetricFamily``) are not here.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from observability.events import MetricType

__all__ = ["CATALOGUE_PATH", "CatalogueEntry", "catalogue", "describe"]

CATALOGUE_PATH = Path(__file__).with_name("catalogue.csv")
_SERIES_SUFFIXES: dict[str, tuple[MetricType, ...]] = {
    "_bucket": (MetricType.HISTOGRAM,),
    "_count": (MetricType.HISTOGRAM, MetricType.SUMMARY),
    "_sum": (MetricType.HISTOGRAM, MetricType.SUMMARY),
}


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    name: str
    type: MetricType
    unit: str
    labels: tuple[str, ...]
    since: str
    help: str
    """Triton's ``# HELP`` text, verbatim."""
    meaning: str
    """What an operator should read into it, including known traps."""


@cache
def catalogue() -> dict[str, CatalogueEntry]:
    """Every catalogued family by name, in the CSV's order."""
    with CATALOGUE_PATH.open(newline="", encoding="utf-8") as handle:
        return {
            row["name"]: CatalogueEntry(
                name=row["name"],
                type=MetricType(row["type"]),
                unit=row["unit"],
                labels=tuple(row["labels"].split()),
                since=row["since"],
                help=row["help"],
                meaning=row["meaning"],
            )
            for row in csv.DictReader(handle)
        }


def describe(name: str) -> CatalogueEntry | None:
    """The entry for a family name, or for one of its series (``X_sum``, ``X_bucket``...)."""
    entries = catalogue()
    entry = entries.get(name)
    if entry is not None:
        return entry
    for suffix, types in _SERIES_SUFFIXES.items():
        if name.endswith(suffix):
            parent = entries.get(name[: -len(suffix)])
            if parent is not None and parent.type in types:
                return parent
    return None
