"""model_load_failed and model_load_stuck on real Triton 2.51 recordings (tests/fixtures/foreign,
recorded by ``python -m tests.foreign.record``; see each PROVENANCE.md and README Round 15),
and on a user's published log (tests/fixtures/wild).

``kws_classifier_reload_fails``: a reload of kws_classifier whose new checkpoint does not fit
(its initialize raises); the copy loaded at start-up keeps serving. ``kws_classifier_load_hangs``:
a reload whose initialize sleeps 60 s; the log ends 21 s later. ``kws_healthy`` ran the same
pipeline and load with no reload.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from observability import events as ev
from observability.analyze import analyze_bundle
from observability.detectors import run_detectors
from observability.detectors.live import LiveWindow
from observability.detectors.model_load_failed import ModelLoadFailed
from observability.detectors.model_load_stuck import ModelLoadStuck
from observability.detectors.registry import default_detectors
from observability.detectors.window import Window
from observability.findings import Severity
from tests.foreign.parsed import analysis, window

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"


def _states(w: Window, model: str, state: str) -> list[ev.ModelStateChange]:
    return [r for r in w.logs(ev.ModelStateChange) if r.model == model and r.state == state]


def test_a_failed_reload_is_found_and_says_the_old_copy_serves() -> None:
    (found,) = [
        f
        for f in analysis("kws_classifier_reload_fails").findings
        if f.kind.startswith("model_load")
    ]
    assert (found.kind, found.model, found.severity) == (
        "model_load_failed",
        "kws_classifier",
        Severity.WARNING,
    )
    assert "cannot load checkpoint kws-v2.bin" in found.summary
    assert "keeps serving" in found.summary and "after 1.7 s" in found.summary
    assert any(
        e.detail.startswith("failed to load 'kws_classifier' version 2: ") for e in found.evidence
    )


def test_before_the_failure_line_nothing_is_told() -> None:
    w = window("kws_classifier_reload_fails")
    (failed,) = [r for r in _states(w, "kws_classifier", "failed") if r.version is not None]
    early = Window(w.since_ns, failed.header.at_ns - 1, events=w.events)
    assert ModelLoadFailed().detect(early) == []
    assert ModelLoadStuck().detect(early) == []


def test_a_first_load_that_failed_leaves_the_model_unavailable() -> None:
    """A user's log (clearml-serving#3): the model file is missing; nothing else loaded."""
    found = [
        f
        for f in analyze_bundle(
            WILD / "27-load-failed-missing-file-21xx-glog" / "triton.log"
        ).findings
        if f.kind == "model_load_failed"
    ]
    assert [(f.model, f.severity) for f in found] == [("cub200_resnet34", Severity.CRITICAL)]
    assert "unable to find" in found[0].summary and "No copy" in found[0].summary


def test_a_load_that_never_ends_is_found_past_five_times_the_models_load() -> None:
    w = window("kws_classifier_load_hangs")
    (found,) = ModelLoadStuck().detect(w)
    assert (found.model, found.severity) == ("kws_classifier", Severity.WARNING)
    assert "against 1.7 s" in found.summary and "keeps serving" in found.summary
    # The bar is five times the start-up load (1.7 s), at least 10 s: not yet at 9 s, found
    # at 11 s; with a start-up load of 3 s it would be 15 s (ModelLoadStuck.ratio).
    (reload,) = _states(w, "kws_classifier", "loading")[1:]
    at = reload.header.at_ns
    assert ModelLoadStuck().detect(Window(w.since_ns, at + 9 * 10**9, events=w.events)) == []
    assert ModelLoadStuck().detect(Window(w.since_ns, at + 11 * 10**9, events=w.events))
    assert (
        ModelLoadStuck(ratio=10.0).detect(Window(w.since_ns, at + 16 * 10**9, events=w.events))
        == []
    )


def test_a_stuck_first_load_waits_the_unknown_bar_and_is_critical() -> None:
    """The same recording with the start-up load's lines taken out: no baseline, no copy."""
    w = window("kws_classifier_load_hangs")
    first = _states(w, "kws_classifier", "loading")[0]
    loaded = _states(w, "kws_classifier", "loaded")[0]
    events = [e for e in w.events if e is not first and e is not loaded]
    (reload,) = _states(w, "kws_classifier", "loading")[1:]
    at = reload.header.at_ns
    assert ModelLoadStuck().detect(Window(w.since_ns, w.until_ns, events=events)) == []
    (found,) = ModelLoadStuck().detect(Window(w.since_ns, at + 121 * 10**9, events=events))
    assert found.severity is Severity.CRITICAL and "No copy" in found.summary


def test_a_load_cut_off_by_a_restart_is_ended_by_the_next_load() -> None:
    """A server killed while loading, started again: the new process's load ends both."""
    w = window("kws_healthy")
    loading = _states(w, "kws_classifier", "loading")[0]
    killed = replace(loading, header=replace(loading.header, at_ns=w.since_ns, offset=-1))
    later = Window(w.since_ns, w.until_ns + 600 * 10**9, events=[killed, *w.events])
    assert ModelLoadStuck().detect(later) == []


def test_the_healthy_twin_has_no_load_finding() -> None:
    w = window("kws_healthy")
    assert ModelLoadFailed().detect(w) == []
    assert (
        ModelLoadStuck().detect(Window(w.since_ns, w.until_ns + 600 * 10**9, events=w.events)) == []
    )


def test_watch_keeps_an_open_load_past_its_evidence_window() -> None:
    """``watch`` detects over a live window of ``evidence_s`` (here 5 s) plus what is still
    open: a load that never ended stays in it, a completed one does not."""
    w = window("kws_classifier_load_hangs")
    live = LiveWindow(evidence_s=5, lookback_s=600)
    logs = [e for e in w.events if getattr(e, "header", None) is not None]
    for i in range(0, len(logs), 500):
        live.add("triton.log", logs[i : i + 500])
    now = w.until_ns + 120 * 10**9  # the start-up load it took 1.7 s has gone: 120 s
    seen = live.window(now)
    loads = [(r.model, r.state) for r in seen.logs(ev.ModelStateChange)]
    assert loads == [("kws_classifier", "loading")]
    (found,) = ModelLoadStuck().detect(seen)
    assert found.model == "kws_classifier" and "against" not in found.summary


def test_a_failed_reload_read_without_the_first_load_still_says_the_old_copy_serves() -> None:
    """A log that begins after the model's first load (a paste, a rotated log, ``watch`` once
    that load left its evidence window) has no ``successfully loaded`` line before the failed
    reload; the requests admitted after it still say a copy serves: a model with no copy
    refuses them before they are admitted."""
    w = window("kws_classifier_reload_fails")
    (loaded,) = _states(w, "kws_classifier", "loaded")[:1]
    at = loaded.header.at_ns
    later = [e for e in w.events if (h := getattr(e, "header", None)) is None or h.at_ns > at]
    (found,) = ModelLoadFailed().detect(Window(w.since_ns, w.until_ns, events=later))
    assert found.severity == Severity.WARNING
    assert "keeps serving, and answered" in found.summary and "No copy" not in found.summary


def test_watch_keeps_a_failed_first_load_while_the_model_stays_unavailable() -> None:
    """pz_ensemble_miswired: the ensemble is refused at load ('is not written') and never
    serves. ``watch`` keeps that load's lines past its evidence window: the ensemble is still
    unavailable. A refused reload while the old copy serves (kws_classifier_reload_fails)
    goes with its evidence."""
    for name, kind, model, kept in (
        ("pz_ensemble_miswired", "ensemble_fanout", "pz_ensemble_broken", True),
        ("kws_classifier_reload_fails", "model_load_failed", "kws_classifier", False),
    ):
        w = window(name)
        live = LiveWindow(evidence_s=5, lookback_s=600)
        for i in range(0, len(w.events), 500):
            live.add("triton.log", w.events[i : i + 500])
        seen = live.window(w.until_ns + 60 * 10**9)
        assert bool(_states(seen, model, "failed")) == kept, name
        found = {(f.kind, f.model) for f in run_detectors(default_detectors(), seen)}
        assert ((kind, model) in found) == kept, name
