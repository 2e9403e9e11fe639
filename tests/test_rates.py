"""Counter-to-rate: resets, first sample, zero and backwards intervals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from observability.rates import counter_increase, increase, rate


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
