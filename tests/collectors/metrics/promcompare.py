"""Put our parser's output and prometheus_client's side by side in one comparable shape.

prometheus_client renames a counter's samples ``X`` to ``X_total`` and names a
``X_total`` counter family ``X``; Triton's counters have no suffix. Both sides are
normalised here, never in the parser: a counter's ``_total`` is dropped on either side.
"""

from __future__ import annotations

import math
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from observability.events import MetricFamily

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "metrics"

Canon = tuple[str, str, str, tuple[tuple[str, tuple[tuple[str, str], ...], object, object], ...]]


def _value(v: float) -> object:
    v = float(v)
    return "nan" if math.isnan(v) else v


def _name(name: str, typ: str) -> str:
    return name[:-6] if typ == "counter" and name.endswith("_total") else name


def canon_ours(families: list[MetricFamily] | tuple[MetricFamily, ...]) -> list[Canon]:
    out: list[Canon] = []
    for f in families:
        typ = f.type.value
        samples = tuple(
            (
                _name(s.name, typ),
                s.labels,
                _value(s.value),
                None if s.timestamp_ms is None else s.timestamp_ms / 1000,
            )
            for s in f.samples
        )
        out.append((_name(f.name, typ), typ, f.help, samples))
    return out


def canon_prometheus(text: str) -> list[Canon]:
    out: list[Canon] = []
    for f in text_string_to_metric_families(text):
        samples = tuple(
            (
                _name(s.name, "counter" if f.type == "counter" else ""),
                tuple(s.labels.items()),
                _value(s.value),
                None if s.timestamp is None else float(s.timestamp),
            )
            for s in f.samples
        )
        typ = "untyped" if f.type == "unknown" else f.type  # its Metric renames untyped
        out.append((_name(f.name, typ), typ, f.documentation, samples))
    return out
