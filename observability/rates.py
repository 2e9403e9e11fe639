"""Counter to rate: the one place in the project where it happens.

Why one place: every consumer of Triton counters (live view, detectors, exporters) must
treat a counter that goes down the same way. A decrease means the counter was reset
(Triton restarted, a model was unloaded and loaded again), never that work was undone, so
the new value is the increase since the reset, as Prometheus' ``rate()`` does; a rate is
never negative.

Timestamps are seconds from any clock, but feed a monotonic one (``time.monotonic()``):
a point whose time is not after the previous point's is ignored rather than turned into a
division by zero or a negative interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["Point", "counter_increase", "increase", "rate"]

Point = tuple[float, float]
"""``(timestamp_s, value)``."""


def counter_increase(prev: float, cur: float) -> float:
    """How much a counter grew from ``prev`` to ``cur``; a drop is a reset to zero."""
    if cur >= prev:
        return cur - prev
    return cur


def _usable(point: Point) -> bool:
    return math.isfinite(point[0]) and math.isfinite(point[1])


def increase(points: Sequence[Point]) -> tuple[float, float] | None:
    """Total increase and the time it spans, over points in scrape order.

    Non-finite points and points not later than the last accepted one are skipped.
    Returns None when fewer than two points remain.
    """
    total = 0.0
    first: Point | None = None
    last: Point | None = None
    for point in points:
        if not _usable(point):
            continue
        if last is None:
            first = last = point
            continue
        if point[0] <= last[0]:
            continue
        total += counter_increase(last[1], point[1])
        last = point
    if first is None or last is None or last is first:
        return None
    return total, last[0] - first[0]


def rate(points: Sequence[Point]) -> float | None:
    """Per-second increase over the points, or None without two usable points."""
    found = increase(points)
    if found is None:
        return None
    total, span = found
    return total / span
