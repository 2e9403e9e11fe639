"""A model seen only a few times gets a deadline of its own (``deadlines.py``): a hang right
after a start is told at the model's pace, not only at the 10 s ceiling.

Real Triton 2.51 recordings (``tests/fixtures/foreign``): each hang was injected 5 s after its
clients started, when the stuck model had finished 5 to 13 executions (fewer than the 20 its
p99 needs). Cut 8 s after the injection, the window held the hang 8 s: before, both were found
only at 12 s. Their healthy twins, cut at the same point, report nothing.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from observability import events as ev
from observability.analyze import _bounds, _event_range, _time_of
from observability.detectors import run_detectors
from observability.detectors.deadlines import DeadlinePolicy
from observability.detectors.registry import default_detectors
from observability.detectors.window import Window
from observability.findings import Severity
from tests.foreign.parsed import FIXTURES, parsed

CUT_AFTER_S = 8


def _injected_s(name: str) -> float:
    """When the recording's first fault was sent, in seconds after its start (PROVENANCE.md's
    schedule: ``| at s | count | ...``)."""
    text = (FIXTURES / name / "PROVENANCE.md").read_text()
    return min(float(m[1]) for m in re.finditer(r"^\| (\d+(?:\.\d+)?) \| \d+ \|", text, re.M))


def _serious_at(name: str, after_start_s: float) -> set[tuple[str, str | None]]:
    """What every detector reports of warning or above on ``name`` cut ``after_start_s`` after
    its start, as a live window would hold it then."""
    p = parsed(name)
    offset = p.meta.epoch_minus_monotonic_ns
    since, until = _bounds(p.meta.started_at, p.meta.ended_at, _event_range(p.events, offset))
    assert since is not None and until is not None
    cut = int(datetime.fromisoformat(p.meta.started_at).timestamp() * 1e9 + after_start_s * 1e9)
    assert cut < until, f"{name} ends before {after_start_s} s"
    events = []
    for e in p.events:
        if isinstance(e, ev.TraceSpan):
            stamps = [ns for _, ns in e.timestamps]
            if not stamps or offset is None or max(stamps) + offset <= cut:
                events.append(e)
        elif _time_of(e) <= cut:
            events.append(e)
    window = Window(since, cut, events=events, clock_offset_ns=offset, log_read=p.log_read)
    return {
        (f.kind, f.model)
        for f in run_detectors(default_detectors(), window)
        if f.severity.rank >= Severity.WARNING.rank
    }


@pytest.mark.parametrize(
    ("faulty", "healthy", "kind", "model"),
    [
        ("vis_step_hang", "vis_healthy", "hung_request", "vis_embed"),
        ("doc_layout_hang_quiet", "doc_healthy_quiet", "model_stalled", "doc_layout"),
    ],
)
def test_a_hang_soon_after_the_start_is_found_before_the_ceiling(
    faulty: str, healthy: str, kind: str, model: str
) -> None:
    at = _injected_s(faulty) + CUT_AFTER_S
    assert (kind, model) in _serious_at(faulty, at)
    assert _serious_at(healthy, at) == set()


def test_the_deadline_of_a_model_seen_a_few_times_is_its_slowest_at_twice_the_multiple() -> None:
    policy = DeadlinePolicy()
    assert policy.deadline_s("m", [0.05] * (policy.few_samples - 1)) == policy.ceiling_s
    assert policy.deadline_s("m", [0.05] * (policy.few_samples - 1) + [0.2]) == pytest.approx(4.0)
    assert policy.deadline_s("m", [0.01] * policy.few_samples) == policy.floor_s
    assert policy.deadline_s("m", [4.0] + [0.01] * 10) == policy.ceiling_s  # a cold start
    assert "20 x its slowest of 200 ms over 5 executions" in policy.explain("m", [0.2] * 5)
