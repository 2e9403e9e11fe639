"""No detector raises on a real window damaged the ways real logs are: lines lost, times
repeated (a copied log, whole-second ISO8601 times, two threads in one microsecond), records
out of order by a little, a window cut anywhere.

``run_detectors`` logs a detector that raises and goes on, so a crash reads as "nothing
found". Five detectors did raise on a log where two requests of a model were prepared in the
same microsecond, one queued and one taken (``waits.callees``); no recording had it, so the
recordings are damaged here, from real Triton 2.51 recordings of the foreign corpus
(``tests/fixtures/foreign``).
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from observability import events as ev
from observability.detectors import DetectorFailure, Window, run_detectors
from observability.detectors.registry import default_detectors
from tests.foreign.parsed import parsed
from tests.hypothesis_profiles import examples

RECORDINGS = [
    "ch_leaf_hang",
    "rl_resource_deadlock",
    "nz_callback_error",
    "gen_llm_stall",
    "doc_layout_hang_iso",
    "gs_mixed_stream_crash",
    "pz_ensemble_miswired",
]
"""Small ones, of different shapes: a BLS chain's hang, a rate-limiter deadlock, callback
errors and prints, a decoupled generation stall, whole-second ISO8601 times, gRPC streams and
a crash, a miswired ensemble."""


def _is_log(e: object) -> bool:
    return hasattr(e, "header") or isinstance(e, ev.StubOutput)


def _at(e: object) -> int | None:
    header = getattr(e, "header", None)
    if header is not None:
        return int(header.at_ns)
    return getattr(e, "at_ns", None)


def _retimed(e: object, at_ns: int) -> object:
    header = getattr(e, "header", None)
    if header is not None:
        return dataclasses.replace(e, header=dataclasses.replace(header, at_ns=at_ns))  # type: ignore[type-var]
    if isinstance(e, ev.StubOutput):
        return dataclasses.replace(e, at_ns=at_ns)
    return e


@pytest.mark.detector_may_raise  # this test reads the failures itself, to name them
@given(
    name=st.sampled_from(RECORDINGS),
    seed=st.integers(0, 2**32),
    drop=st.floats(0, 0.3),
    repeat=st.sampled_from([0.0, 0.1, 0.5, 1.0]),  # 1: every line at its predecessor's time
    swap=st.floats(0, 0.05),
    cut=st.floats(0.05, 1.0),
    logs_only=st.booleans(),
)
# CI, 2026-11-27: streams.py's _stalled_together read past a stretch's arrivals when lost
# lines left fewer streams at a count than it would take out (IndexError).
@example(
    name="gen_llm_stall", seed=185442, drop=0.125, repeat=0.0, swap=0.0, cut=0.8125,
    logs_only=False,
)  # fmt: skip
@settings(max_examples=examples(200), deadline=None)
def test_no_detector_raises_on_a_damaged_real_window(
    name: str, seed: int, drop: float, repeat: float, swap: float, cut: float, logs_only: bool
) -> None:
    """``logs_only``: the log alone, as ``analyze triton.log`` reads it."""
    rnd = random.Random(seed)
    p = parsed(name)
    logs = [e for e in p.events if _is_log(e)]
    others = [] if logs_only else [e for e in p.events if not _is_log(e)]
    kept = [e for e in logs if rnd.random() >= drop]
    for i in range(1, len(kept)):
        if rnd.random() < repeat:
            kept[i] = _retimed(kept[i], _at(kept[i - 1]) or 0)  # the previous line's time
    for i in range(len(kept) - 1):
        if rnd.random() < swap:
            kept[i], kept[i + 1] = kept[i + 1], kept[i]
    stamps = [t for e in kept if (t := _at(e)) is not None]
    if not stamps:
        return
    since, until = min(stamps), max(stamps)
    until = since + int((until - since) * cut)
    offset = p.meta.epoch_minus_monotonic_ns
    window = Window(since, until, events=[*kept, *others], clock_offset_ns=offset)
    failed: list[DetectorFailure] = []
    run_detectors(default_detectors(), window, failed)
    assert failed == []


@pytest.mark.detector_may_raise
def test_a_detector_that_raises_costs_its_findings_only_and_analyze_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other detectors still report, and ``analyze``'s notes name the one that raised,
    so a user does not read its silence as a clean bill."""
    from observability import analyze
    from observability.detectors.hung_request import HungRequestDetector

    def boom(self: object, window: Window) -> list[object]:
        raise KeyError("a bug")

    whole = analyze.analyze_events(parsed("ch_leaf_hang"))
    monkeypatch.setattr(HungRequestDetector, "detect", boom)
    broken = analyze.analyze_events(parsed("ch_leaf_hang"))
    assert {f.kind for f in whole.findings} - {f.kind for f in broken.findings} == {"hung_request"}
    assert broken.failed == ["hung_request: KeyError: 'a bug'"]
    assert broken.notes[0].startswith("detector hung_request: KeyError")
    assert whole.failed == [] and not [n for n in whole.notes if n.startswith("detector ")]
