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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from observability.events import Labels, MetricFamily, MetricType

__all__ = [
    "CounterTracker",
    "Delta",
    "Point",
    "SeriesKey",
    "counter_increase",
    "increase",
    "rate",
]

Point = tuple[float, float]
"""``(timestamp_s, value)``."""

SeriesKey = tuple[str, Labels]
"""A sample's name as written (``X_sum`` for a summary's sum) and its labels."""

_CUMULATIVE_SUFFIXES: dict[MetricType, tuple[str, ...]] = {
    MetricType.SUMMARY: ("_sum", "_count"),
    MetricType.HISTOGRAM: ("_sum", "_count", "_bucket"),
}


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


@dataclass(frozen=True, slots=True)
class Delta:
    """A series' change between its last two observations."""

    start_s: float
    end_s: float
    increase: float

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    @property
    def per_second(self) -> float:
        return self.increase / self.seconds


class CounterTracker:
    """Remembers the last two observations of each counter series, scrape after scrape.

    The live view calls :meth:`observe_page` with each parsed page and then asks for
    per-second rates (requests/s) or for ratios of two deltas over the same interval, e.g.
    ``nv_inference_queue_duration_us`` over ``nv_inference_request_success`` = mean queue
    time per request in that interval.
    """

    def __init__(self) -> None:
        self._points: dict[SeriesKey, tuple[Point | None, Point]] = {}

    def observe(self, key: SeriesKey, at_s: float, value: float) -> None:
        point = (at_s, value)
        if not _usable(point):
            return
        known = self._points.get(key)
        if known is None:
            self._points[key] = (None, point)
        elif at_s > known[1][0]:
            self._points[key] = (known[1], point)

    def observe_page(self, at_s: float, families: Iterable[MetricFamily]) -> None:
        """Track every cumulative series on a page: counters, summary and histogram sums,
        counts and buckets. Gauges and quantiles are not counters and are skipped."""
        for family in families:
            if family.type is MetricType.COUNTER:
                for sample in family.samples:
                    self.observe((sample.name, sample.labels), at_s, sample.value)
                continue
            suffixes = _CUMULATIVE_SUFFIXES.get(family.type)
            if suffixes is None:
                continue
            for sample in family.samples:
                if sample.name != family.name and sample.name.endswith(suffixes):
                    self.observe((sample.name, sample.labels), at_s, sample.value)

    def keys(self, name: str) -> list[Labels]:
        """Label sets seen for a sample name, in first-seen order."""
        return [labels for (n, labels) in self._points if n == name]

    def delta(self, key: SeriesKey) -> Delta | None:
        known = self._points.get(key)
        if known is None or known[0] is None:
            return None
        (t0, v0), (t1, v1) = known[0], known[1]
        return Delta(t0, t1, counter_increase(v0, v1))

    def rate(self, key: SeriesKey) -> float | None:
        """Per-second rate over the last interval; None before the second observation."""
        found = self.delta(key)
        return None if found is None else found.per_second

    def ratio(self, numerator: SeriesKey, denominator: SeriesKey) -> float | None:
        """Increase of one series over the increase of another in the same interval.

        None when either has no interval yet, the two were last seen at different times
        (one was missing from a scrape), or the denominator did not move (no requests:
        "mean latency" is undefined, not zero).
        """
        top = self.delta(numerator)
        bottom = self.delta(denominator)
        if top is None or bottom is None:
            return None
        if (top.start_s, top.end_s) != (bottom.start_s, bottom.end_s):
            return None
        if bottom.increase == 0:
            return None
        return top.increase / bottom.increase

    def rates(self, name: str) -> dict[Labels, float]:
        """Per-second rate of every series of one sample name that has an interval."""
        found: dict[Labels, float] = {}
        for labels in self.keys(name):
            value = self.rate((name, labels))
            if value is not None:
                found[labels] = value
        return found

    def ratios(self, numerator: str, denominator: str) -> dict[Labels, float]:
        """:meth:`ratio` for every label set the two names share (e.g. per model)."""
        found: dict[Labels, float] = {}
        for labels in self.keys(numerator):
            value = self.ratio((numerator, labels), (denominator, labels))
            if value is not None:
                found[labels] = value
        return found
