"""cold_start on the real recordings: classifier reloaded with a lazy warm-up, and the twin
(the same reload with eager initialisation)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from observability import events as ev
from observability.detectors import Window
from observability.detectors.cold_start import ColdStart
from observability.findings import Severity
from tests.detectors.test_signals import VERBOSE_ONLY
from tests.foreign.parsed import window


def test_first_execution_after_reload_is_a_cold_start(faulty: Window) -> None:
    findings = ColdStart().detect(faulty)
    assert [f.model for f in findings] == ["classifier"], [f.to_dict() for f in findings]
    found = findings[0]
    assert found.severity is Severity.WARNING
    assert found.instance == "classifier_0_0"
    # The request that paid for the warm-up is named when the log lets it be joined to the
    # execution (one fresh CI recording could not): then it is a classifier request.
    assert found.request_id is None or found.request_id.endswith(".classifier")
    assert "model_warmup" in found.advice and "initialize" in found.advice


def test_eager_reload_is_not_a_cold_start(healthy: Window) -> None:
    findings = ColdStart().detect(healthy)
    assert [f for f in findings if f.severity.rank >= Severity.WARNING.rank] == []


def test_the_replaced_copys_last_batch_does_not_hide_the_cold_one(faulty: Window) -> None:
    """A fresh recording (CI, 2026-11-26) logged, 0.8 ms after the reload's 'successfully
    loaded', a 0.6 ms batch on classifier_0_0 (the replaced copy's, same instance name), then
    the 4.04 s cold one. The recorded window with such a batch put in at the same place."""
    records = list(faulty.logs())
    at = next(
        i
        for i, r in enumerate(records)
        if isinstance(r, ev.ModelStateChange) and r.model == "classifier" and r.state == "loaded"
    )
    load_ns = records[at].header.at_ns
    start = next(
        r for r in records[at:] if isinstance(r, ev.InstanceExecuting) and r.model == "classifier"
    )
    end = next(
        r
        for r in records[records.index(start) :]
        if isinstance(r, ev.InstanceReleased) and r.instance == start.instance
    )

    def moved(r: ev.InstanceExecuting | ev.InstanceReleased, ns: int) -> object:
        return replace(r, header=replace(r.header, at_ns=load_ns + ns, offset=-ns))

    stale = [moved(start, 800_000), moved(end, 1_400_000)]
    window = Window(faulty.since_ns, faulty.until_ns, events=[*records, *stale])
    (found,) = ColdStart().detect(window)
    assert (found.model, found.instance) == ("classifier", "classifier_0_0")
    assert "took 4." in found.summary or "took 3." in found.summary, found.summary


def _without_verbose_log(name: str) -> Window:
    """A foreign recording (Triton 2.51) as a server without --log-verbose leaves it: the
    same /metrics and stats, the log without its verbose-only lines (tests/detectors/
    test_signals.VERBOSE_ONLY)."""
    w = window(name)
    events = [e for e in w.events if not isinstance(e, VERBOSE_ONLY)]
    return Window(w.since_ns, w.until_ns, events=events, clock_offset_ns=w.clock_offset_ns)


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("rag_cold_start", "rag_embed"),
        ("fr_parse_cold_start", "fr_parse"),
        ("rec_cold_start_midrun", "rec_scorer"),
    ],
)
def test_without_the_verbose_log_the_first_executions_show_in_metrics(
    name: str, model: str
) -> None:
    (found,) = ColdStart().detect(_without_verbose_log(name))
    assert found.model == model and found.instance is None
    assert "from /metrics" in found.summary and found.evidence[1].source == "metrics"


@pytest.mark.parametrize(
    "name",
    [
        "rag_healthy",
        "asr_healthy_growing",
        "asr_encoder_hang_bounded",
        "ch_leaf_hang",
        "emb_server_restart",
        "llm_healthy",
        "kws_healthy",
    ],
)
def test_without_the_verbose_log_slow_start_up_batches_are_no_cold_start(name: str) -> None:
    """Start-up executions of a few hundred ms (asr_router 0.28 s over 4, 15x its steady)
    are not a set-up paid by a caller."""
    assert ColdStart().detect(_without_verbose_log(name)) == []


def test_from_metrics_the_caller_that_waited_gives_way_to_its_traced_child() -> None:
    """xl_translate_cold_start_quiet (--log-verbose 0, Triton's opentelemetry trace mode):
    at one scrape xl_translate's first batch (4.06 s per execution) and xl_gateway's waits
    on it (1.38 s on average) both show; the spans say the gateway calls the translator,
    so the set-up is the translator's alone. Without the spans both would stay."""
    found = ColdStart().detect(window("xl_translate_cold_start_quiet"))
    assert [(f.model, f.evidence[1].source) for f in found] == [("xl_translate", "metrics")]
    assert "took 4.06 s on average" in found[0].summary


def test_an_ensemble_reloaded_with_its_cold_step_is_not_a_cold_start() -> None:
    """ops_router_callback_classify_cold: reloading ops_classify reloaded ops_ensemble too;
    the ensemble's first request waited on its step's 4 s set-up, which the log tells on
    ops_classify. /metrics alone would read the ensemble as cold."""
    found = ColdStart().detect(window("ops_router_callback_classify_cold"))
    assert [f.model for f in found] == ["ops_classify"]
