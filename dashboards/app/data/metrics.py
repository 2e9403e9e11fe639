"""Metric series per model from the stored scrapes: gauges as they are, counters as increases.

Counter increases go through ``observability.rates.counter_increase`` (the project's one
reset rule), per label set, before summing per model: summing first would hide a reset of
one version behind the growth of another.
"""

from __future__ import annotations

from collections import defaultdict

from observability.rates import counter_increase
from observability.store import Store

__all__ = ["Series", "counter_increases", "gauge"]

Series = dict[str, list[tuple[int, float]]]
"""Model -> ``(at_ns, value)`` in time order."""


def gauge(
    store: Store, name: str, since_ns: int, until_ns: int, model: str | None = None
) -> Series:
    """A gauge summed per model (over versions and instances) at each scrape."""
    sums: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for _target, at_ns, sample in store.metric_samples(name, since_ns, until_ns + 1):
        who = sample.label("model")
        if model is not None and who != model:
            continue
        sums[who][at_ns] += sample.value
    return {m: sorted(points.items()) for m, points in sums.items()}


def counter_increases(
    store: Store, name: str, since_ns: int, until_ns: int, model: str | None = None
) -> dict[str, list[tuple[int, float, float]]]:
    """Per model ``(at_ns, increase, seconds)`` between consecutive scrapes."""
    last: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, float]] = {}
    sums: dict[str, dict[int, list[float]]] = defaultdict(dict)
    for target, at_ns, sample in store.metric_samples(name, since_ns, until_ns + 1):
        who = sample.label("model")
        if model is not None and who != model:
            continue
        key = (target, sample.labels)
        prev = last.get(key)
        last[key] = (at_ns, sample.value)
        if prev is None or at_ns <= prev[0]:
            continue
        cell = sums[who].setdefault(at_ns, [0.0, (at_ns - prev[0]) / 1e9])
        cell[0] += counter_increase(prev[1], sample.value)
    return {
        m: [(t, inc, dt) for t, (inc, dt) in sorted(cells.items())] for m, cells in sums.items()
    }
