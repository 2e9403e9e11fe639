"""Counter-to-rate: resets, first sample, zero and backwards intervals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from observability.events import MetricFamily, MetricSample, MetricType
from observability.rates import CounterTracker, counter_increase, increase, rate

M = (("model", "m"), ("version", "1"))


@pytest.mark.parametrize(
    ("prev", "cur", "expected"),
    [
        (10.0, 15.0, 5.0),
        (10.0, 10.0, 0.0),
        (10.0, 3.0, 3.0),  # reset: 3 since the restart, never -7
        (10.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
    ],
)
def test_counter_increase(prev: float, cur: float, expected: float) -> None:
    assert counter_increase(prev, cur) == expected


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([], None),
        ([(0.0, 5.0)], None),  # first sample: no rate yet
        ([(0.0, 0.0), (10.0, 50.0)], 5.0),
        ([(0.0, 100.0), (10.0, 120.0), (20.0, 10.0)], 30.0 / 20.0),  # reset in the middle
        ([(0.0, 1.0), (0.0, 9.0)], None),  # zero interval
        ([(5.0, 1.0), (5.0, 2.0), (5.0, 3.0)], None),
        ([(10.0, 1.0), (5.0, 2.0), (20.0, 11.0)], 1.0),  # time went back: point skipped
        ([(0.0, 1.0), (1.0, math.nan), (2.0, 3.0)], 1.0),
        ([(0.0, 1.0), (math.inf, 5.0)], None),
    ],
)
def test_rate(points: list[tuple[float, float]], expected: float | None) -> None:
    assert rate(points) == expected


def test_increase_reports_span() -> None:
    assert increase([(1.0, 0.0), (3.0, 4.0), (7.0, 2.0)]) == (6.0, 6.0)


@given(
    st.lists(
        st.tuples(
            st.floats(0, 1e6, allow_nan=False),
            st.floats(0, 1e12, allow_nan=False),
        ),
        max_size=30,
    )
)
def test_rate_is_never_negative(points: list[tuple[float, float]]) -> None:
    found = rate(points)
    assert found is None or found >= 0.0


def _page(success: float, queue_us: float, extra: bool = True) -> list[MetricFamily]:
    def counter(name: str, value: float) -> MetricFamily:
        return MetricFamily(name, MetricType.COUNTER, "", (MetricSample(name, M, value, name),))

    families = [
        counter("nv_inference_request_success", success),
        counter("nv_inference_queue_duration_us", queue_us),
        MetricFamily(
            "nv_inference_pending_request_count",
            MetricType.GAUGE,
            "",
            (MetricSample("nv_inference_pending_request_count", M, 3.0, "x"),),
        ),
    ]
    if extra:
        s = "nv_inference_queue_summary_us"
        families.append(
            MetricFamily(
                s,
                MetricType.SUMMARY,
                "",
                (
                    MetricSample(f"{s}_count", M, success, s),
                    MetricSample(f"{s}_sum", M, queue_us, s),
                    MetricSample(s, (*M, ("quantile", "0.5")), 7.0, s),
                ),
            )
        )
    return families


def test_tracker_first_scrape_has_no_rate() -> None:
    tracker = CounterTracker()
    tracker.observe_page(100.0, _page(10, 1000))
    assert tracker.rate(("nv_inference_request_success", M)) is None
    assert tracker.rates("nv_inference_request_success") == {}


def test_tracker_rates_and_ratio() -> None:
    tracker = CounterTracker()
    tracker.observe_page(100.0, _page(10, 1000))
    tracker.observe_page(102.0, _page(30, 5000))
    assert tracker.rate(("nv_inference_request_success", M)) == 10.0
    # mean queue time per request over the interval: 4000 us / 20 requests
    ratio = tracker.ratios("nv_inference_queue_duration_us", "nv_inference_request_success")
    assert ratio == {M: 200.0}
    assert (
        tracker.ratio(
            ("nv_inference_queue_summary_us_sum", M), ("nv_inference_queue_summary_us_count", M)
        )
        == 200.0
    )
    assert tracker.keys("nv_inference_pending_request_count") == []  # gauges are not counters
    assert tracker.keys("nv_inference_queue_summary_us") == []  # nor are quantiles


def test_tracker_reset_is_not_negative() -> None:
    tracker = CounterTracker()
    tracker.observe_page(0.0, _page(1000, 50_000))
    tracker.observe_page(10.0, _page(20, 800))  # Triton restarted in between
    delta = tracker.delta(("nv_inference_request_success", M))
    assert delta is not None
    assert delta.increase == 20.0
    assert tracker.rate(("nv_inference_request_success", M)) == 2.0
    assert tracker.ratios("nv_inference_queue_duration_us", "nv_inference_request_success") == {
        M: 40.0
    }


def test_tracker_zero_interval_and_backwards_time_are_ignored() -> None:
    tracker = CounterTracker()
    key = ("c", ())
    tracker.observe(key, 10.0, 1.0)
    tracker.observe(key, 10.0, 5.0)  # same instant
    tracker.observe(key, 9.0, 7.0)  # clock went back
    assert tracker.rate(key) is None
    tracker.observe(key, 12.0, 9.0)
    assert tracker.rate(key) == 4.0


def test_tracker_ratio_needs_movement_and_a_shared_interval() -> None:
    tracker = CounterTracker()
    tracker.observe_page(0.0, _page(10, 100))
    tracker.observe_page(5.0, _page(10, 100))
    # no request in the interval: mean latency is undefined, not zero
    assert tracker.ratios("nv_inference_queue_duration_us", "nv_inference_request_success") == {}
    tracker.observe(("nv_inference_queue_duration_us", M), 6.0, 200.0)
    assert (
        tracker.ratio(("nv_inference_queue_duration_us", M), ("nv_inference_request_success", M))
        is None
    )
