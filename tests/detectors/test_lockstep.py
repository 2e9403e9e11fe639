"""hung_request at ``--log-verbose 0`` from counters that ran level (``lockstep.py``).

The real reproduction is ``gs_spam_hang_quiet`` (tests/fixtures/foreign, recorded from Triton
2.51 by ``python -m tests.foreign.record``): gs_moderate calls gs_toxicity and gs_spam at once
per message; one gs_spam call sleeps 300 s under a light load, so nothing queues or stalls.
Its healthy twin ``gs_healthy_quiet`` ran the same repository and clients without the fault;
``gs_spam_hang`` is the same hang with the verbose log, which the log-based detectors own.
The rule's edges are checked on small event lists first.
"""

from __future__ import annotations

import pytest

from observability import events as ev
from observability.detectors import Window
from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.lockstep import lockstep_lags
from observability.detectors.model_stalled import logged_models
from observability.findings import Severity
from tests.foreign.parsed import analysis, window

S = 1_000_000_000
T0 = 1_790_000_000 * S
TARGET = "metrics http://127.0.0.1:8002/metrics"
SUCCESS = "nv_inference_request_success"
FAILURE = "nv_inference_request_failure"


def _scrape(at_s: int, counts: dict[str, tuple[int, int]]) -> ev.MetricsScrape:
    """One /metrics page: per model, (successes, failures)."""
    samples = []
    for model, (ok, failed) in counts.items():
        labels = (("model", model), ("version", "1"))
        samples.append(ev.MetricSample(SUCCESS, labels, ok, SUCCESS))
        samples.append(ev.MetricSample(FAILURE, labels, failed, FAILURE))
    return ev.MetricsScrape(T0 + at_s * S, TARGET, tuple(samples))


def _window(rows: list[dict[str, tuple[int, int]]]) -> Window:
    """A scrape a second, rows[i] at i s."""
    scrapes = [_scrape(i, counts) for i, counts in enumerate(rows)]
    return Window(T0, T0 + (len(rows) - 1) * S, events=scrapes)


def _fan_out(
    seconds: int = 40,
    hang_at: int = 10,
    rate: int = 5,
    lagging: tuple[str, ...] = ("parent", "child_b"),
    release_at: int | None = None,
    failed_b: bool = False,
) -> list[dict[str, tuple[int, int]]]:
    """``parent`` calls ``child_a`` and ``child_b`` at once, ``rate`` requests a second; from
    ``hang_at`` the models in ``lagging`` stay one request short (until ``release_at``).
    ``failed_b``: that request of child_b failed instead (it did finish)."""
    rows = []
    for t in range(seconds):
        done = rate * t
        short = 1 if hang_at <= t and (release_at is None or t < release_at) else 0
        row = {}
        for model in ("parent", "child_a", "child_b"):
            if failed_b and model == "child_b" and t >= hang_at:
                row[model] = (done - 1, 1)
            else:
                row[model] = (done - (short if model in lagging else 0), 0)
        rows.append(row)
    return rows


def test_a_child_and_its_caller_short_of_a_sibling_for_good_are_found() -> None:
    [lag] = lockstep_lags(_window(_fan_out()), frozenset())
    assert (lag.models, lag.sibling, lag.short) == (("child_b", "parent"), "child_a", 1)
    assert lag.at_ns == T0 + 10 * S and lag.level_since_ns == T0
    assert lag.sibling_done == 5 * 39 - 5 * 10


@pytest.mark.parametrize(
    "rows",
    [
        # One model short alone: a caller that skipped it for one request (it finished).
        _fan_out(lagging=("child_b",)),
        # The call finished 20 s later: slow, not hung.
        _fan_out(release_at=30),
        # The short request failed: a failure is a finished request.
        _fan_out(lagging=(), failed_b=True),
        # Short for only 8 s before the window ends: too soon to tell.
        _fan_out(seconds=18),
        # Never level before: counts that differ from the start are other calls' counts.
        [
            {m: (c + (3 if m == "child_a" else 0), 0) for m, (c, _) in row.items()}
            for row in _fan_out(hang_at=100)
        ],
        # Hardly any work after: 1 request a second gives 15 more, under 20.
        _fan_out(seconds=25, rate=1),
        # Two models reloaded together: their counters start again from 0, far "short".
        [
            {m: (c - (50 if m != "child_a" and i >= 10 else 0), 0) for m, (c, _) in row.items()}
            for i, row in enumerate(_fan_out(hang_at=100))
        ],
    ],
    ids=["alone", "released", "failed", "short-window", "never-level", "little-work", "reload"],
)
def test_what_is_not_a_call_that_never_returned(rows: list[dict[str, tuple[int, int]]]) -> None:
    assert lockstep_lags(_window(rows), frozenset()) == []


def test_models_the_verbose_log_covers_are_left_to_it() -> None:
    assert lockstep_lags(_window(_fan_out()), frozenset({"parent"})) == []


def test_the_quiet_hang_is_found_on_the_caller_and_the_hung_child() -> None:
    found = [f for f in analysis("gs_spam_hang_quiet").findings if f.severity.rank]
    assert [(f.kind, f.model, f.severity) for f in found] == [
        ("hung_request", "gs_moderate", Severity.CRITICAL),
        ("hung_request", "gs_spam", Severity.CRITICAL),
    ]
    for f in found:
        assert "1 request short of gs_toxicity" in f.summary, f.summary
        assert {e.source for e in f.evidence} == {"metrics"}
        assert any("gs_toxicity" in e.ref for e in f.evidence)


def test_the_healthy_twin_under_the_same_load_is_level() -> None:
    w = window("gs_healthy_quiet")
    assert lockstep_lags(w, logged_models(w)) == []
    assert [f for f in HungRequestDetector().detect(w) if f.severity.rank] == []


def test_the_verbose_twin_is_read_from_the_log() -> None:
    """gs_spam_hang: the log names the held instance; the counters add nothing."""
    w = window("gs_spam_hang")
    assert lockstep_lags(w, logged_models(w)) == []
    assert [f.model for f in analysis("gs_spam_hang").findings if f.kind == "hung_request"] == [
        "gs_moderate"
    ]
