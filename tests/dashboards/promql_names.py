"""Metric names used by a PromQL expression, without a PromQL parser.

Good enough for our own expressions (the linter's input), not for arbitrary PromQL: strings,
label matchers, ranges and grouping clauses are removed, then every identifier that is not a
function call, a keyword or a Grafana variable is a metric name.
"""

from __future__ import annotations

import re

__all__ = ["metric_names"]

_KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
    "offset", "bool", "inf", "nan", "sum", "min", "max", "avg", "count", "topk", "bottomk",
    "quantile", "stddev", "stdvar", "count_values", "group",
}  # fmt: skip
_STRIP = [
    re.compile(r'"(?:[^"\\]|\\.)*"'),  # strings (label values, label_replace arguments)
    re.compile(r"\{[^{}]*\}"),  # label matchers
    re.compile(r"\[[^\]]*\]"),  # range and subquery windows
    re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"),
    re.compile(r"\$\{?\w+\}?"),  # Grafana variables
]
_IDENT = re.compile(r"(?<![\w.])([A-Za-z_:][\w:]*)(\s*\()?")


def metric_names(expr: str) -> set[str]:
    text = expr
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    names = set()
    for match in _IDENT.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _KEYWORDS or re.fullmatch(r"\d+\w*", name):
            continue
        names.add(name)
    return names
