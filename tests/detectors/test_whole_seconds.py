"""A log of whole-second times (``--log-format ISO8601``) is known as such, and no finding on
it quotes a sub-second duration it cannot measure.

The foreign recordings made with ``--log-format ISO8601`` on a real Triton 2.51 (their
PROVENANCE.md says so) against those made with the default glog format: before, their
summaries read "799998x its steady 0.0 ms", "p99 of 0 ms" and "admitted 0 ms after its
caller started", where the log cannot tell a microsecond from 900 ms.
"""

from __future__ import annotations

import re

import pytest

from observability.detectors.thread_pool_exhaustion import _plateau
from tests.foreign.parsed import FIXTURES, analysis, window

ISO = sorted(
    p.name
    for p in FIXTURES.iterdir()
    if (p / "PROVENANCE.md").is_file()
    and "--log-format ISO8601" in (p / "PROVENANCE.md").read_text()
)
GLOG = ["ocr_cycle_deadlock", "nz_rank_hang", "ch_self_deadlock", "nz_healthy"]
_SUB_SECOND = re.compile(r"\b0(\.0)? ms\b|\d{4,}x its steady")


def test_the_corpus_has_whole_second_recordings() -> None:
    assert len(ISO) >= 6, ISO


@pytest.mark.parametrize("name", ISO)
def test_an_iso8601_log_is_whole_seconds_and_no_summary_quotes_what_it_cannot_measure(
    name: str,
) -> None:
    assert window(name).whole_seconds
    quoted = [f.summary for f in analysis(name).findings if _SUB_SECOND.search(f.summary)]
    assert quoted == []


@pytest.mark.parametrize("name", GLOG)
def test_a_glog_log_is_not_whole_seconds(name: str) -> None:
    assert not window(name).whole_seconds


def test_a_thread_pool_is_read_from_the_order_of_whole_second_lines() -> None:
    """rec_thread_pool_exhaustion_iso: the fan-out's children are logged in one second; a
    capped pool shows as children arriving only after others were released (waves of 6),
    where the glog original showed 0.91 s of waiting."""
    (found,) = [
        f
        for f in analysis("rec_thread_pool_exhaustion_iso").findings
        if f.kind == "thread_pool_exhaustion"
    ]
    assert found.model == "rec_orchestrator"
    assert "only about 6 ran at once" in found.summary
    assert "whole seconds" in found.summary and " 0.00 s" not in found.summary


@pytest.mark.parametrize(
    ("sizes", "peak", "plateau"),
    [
        ([1, 6, 6, 2, 1, 6, 4, 2, 1], 6, 6),  # the recording's waves: a pool of 6
        ([1, 2, 1, 1, 2, 1, 2], 2, None),  # a slow loop's calls pairing up by chance
        ([2, 3, 2, 3, 2], 5, None),  # never that many back to back: not a pool's waves
    ],
)
def test_by_order_the_pool_is_the_most_in_flight_seen_arriving_at_once(
    sizes: list[int], peak: int, plateau: int | None
) -> None:
    assert _plateau(sizes, peak, by_order=True) == plateau
