"""model_failing on real Triton 2.51 recordings of a pipeline it was not tuned on.

``rag_orchestrator_raises`` (tests/fixtures/foreign, recorded by ``python -m
tests.foreign.record``; see its PROVENANCE.md): from a few seconds in, the BLS step of a RAG
ensemble raises on every request, with and without the verbose log. Its healthy twin
``rag_healthy`` ran the same load. ``rec_stub_killed`` is the other cause of the same
/metrics picture, a stub killed with SIGKILL: it must stay ``stub_unhealthy``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.logs.parser import parse_bytes
from observability.analyze import AnalysisResult, analyze_bundle
from observability.detectors import Window
from observability.detectors.backend_failures import raised
from observability.findings import Finding, Severity
from tests.foreign.parsed import analysis

FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def _analysis(name: str) -> AnalysisResult:
    return analysis(name)  # analyze's own analysis, of events parsed once (tests/foreign/parsed.py)


def _of(name: str, kind: str) -> list[Finding]:
    return [f for f in _analysis(name).findings if f.kind == kind]


def _exception(name: str) -> str:
    """The exception the scenario raises, as its expected.json ``mentions`` names it."""
    expected = json.loads((FOREIGN / name / "expected.json").read_text())
    return str(expected["mentions"][0][-1])


@pytest.mark.parametrize("name", ["rag_orchestrator_raises", "rag_orchestrator_raises_quiet"])
def test_a_model_whose_execute_raises_is_named_with_its_exception(name: str) -> None:
    (found,) = _of(name, "model_failing")
    assert found.model == "rag_orchestrator" and found.severity is Severity.CRITICAL
    assert _exception(name) in found.summary
    assert "raised at " in found.summary and "model.py(" in found.summary, "where it was raised"
    assert "The stub is alive" in found.summary
    kinds = {e.source for e in found.evidence}
    assert kinds == {"log", "metrics"}, found.evidence
    assert not _of(name, "stub_unhealthy"), "a raising execute is not a dead stub"


def test_a_caller_that_passes_the_error_up_is_named_in_the_childs_finding() -> None:
    """``fr_score_raises``: fr_score raises KeyError; fr_gateway re-raises its error as a
    RuntimeError that embeds fr_score's message and traceback. Both fail every request on
    /metrics; one bug is one finding, at fr_score's frame, naming the caller."""
    (found,) = _of("fr_score_raises", "model_failing")
    assert found.model == "fr_score"
    assert "KeyError" in found.summary and "fr_score/1/model.py(32): _weights" in found.summary
    assert "Its BLS callers fail with it" in found.summary and "fr_gateway" in found.summary


def test_the_healthy_twin_under_the_same_load_has_no_finding() -> None:
    assert not _of("rag_healthy", "model_failing")
    serious = [f for f in _analysis("rag_healthy").findings if f.severity.rank >= 1]
    assert not serious, [f.summary for f in serious]


def test_a_killed_stub_stays_a_dead_stub() -> None:
    """The same counters with no raised exception in the log: stub_unhealthy, not this."""
    assert not _of("rec_stub_killed", "model_failing")
    assert [f.model for f in _of("rec_stub_killed", "stub_unhealthy")] == ["rec_scorer"]


@pytest.mark.parametrize("log", ["glog_2.51_stub_death.log", "iso8601_2.51_stub_death.log"])
def test_a_dead_childs_error_told_by_its_parent_is_not_a_raise(log: str) -> None:
    """``Failed to process ... message: TritonModelException: Stub process 'plain_0_0' is not
    healthy``: the parent reports a dead child, whose stub_unhealthy finding tells it."""
    events = parse_bytes((LOGS / log).read_bytes(), year=2026)
    window = Window(since_ns=0, until_ns=2**62, events=events)
    assert raised(window) == {}


def test_the_stored_path_finds_the_same(tmp_path: Path) -> None:
    """``analyze --store`` and ``watch`` read the error lines back from the store: the
    exception text and its frames survive the store's codec."""
    stored = analyze_bundle(FOREIGN / "fr_score_raises" / "bundle.tar.gz", tmp_path / "s.db")
    assert [(f.kind, f.model, f.summary) for f in stored.findings if f.kind == "model_failing"] == [
        (f.kind, f.model, f.summary) for f in _of("fr_score_raises", "model_failing")
    ]


def test_a_model_raising_on_some_batches_is_a_warning_with_its_exception() -> None:
    """tts_acoustic_partial_errors: tts_acoustic raises KeyError on about one batch in five
    and serves the rest (/metrics: failures and successes both rise). One warning, on it
    alone: not a page, not a dead stub, not its BLS caller."""
    found = [f for f in _analysis("tts_acoustic_partial_errors").findings if f.severity.rank]
    failing = [f for f in found if f.kind == "model_failing"]
    assert [(f.model, f.severity) for f in failing] == [("tts_acoustic", Severity.WARNING)]
    assert "KeyError" in failing[0].summary and "failed" in failing[0].summary
    assert not [f for f in found if f.kind == "stub_unhealthy"]


def test_a_model_raising_on_a_few_percent_of_its_batches_is_a_warning() -> None:
    """img_tagger_intermittent_errors: img_tagger raises RuntimeError on 28 of its 759
    batches (3.7%) through the whole window; its BLS caller relays the errors. A steady few
    percent of requests failing is a warning on the model that raises, not on its caller."""
    found = [f for f in _analysis("img_tagger_intermittent_errors").findings if f.severity.rank]
    assert [(f.kind, f.model, f.severity) for f in found] == [
        ("model_failing", "img_tagger", Severity.WARNING)
    ]
    assert "raised on 28 of its 759 batches" in found[0].summary
    assert "RuntimeError" in found[0].summary


def test_an_ensemble_failing_part_of_its_streams_with_reason_other_is_a_warning() -> None:
    """gen_llm_kv_errors: gen_llm sends an error response mid-stream on 18 of 56 ensemble
    streams; only the decoupled ensemble counts them (reason OTHER), and gen_llm's own
    counters show successes. Ensembles that count a failing step's failures again stay
    silent: the step's finding is the cause (rag_orchestrator_raises, emb_pool_stub_oom)."""
    found = [f for f in _analysis("gen_llm_kv_errors").findings if f.severity.rank]
    assert [(f.kind, f.model, f.severity) for f in found] == [
        ("model_failing", "gen_ensemble", Severity.WARNING)
    ]
    assert "failed 18 of its 56 requests" in found[0].summary
    for name, ensemble in (
        ("rag_orchestrator_raises", "rag_pipeline"),
        ("emb_pool_stub_oom", "emb_ensemble"),
    ):
        assert ensemble not in {
            f.model for f in _analysis(name).findings if f.kind == "model_failing"
        }


def test_an_exception_a_serving_layer_wraps_is_told_by_the_users_own() -> None:
    """pt_tag_raises: PyTriton's proxy re-raises the infer_func's KeyError as
    'TritonModelException: Model execute error: Traceback ...', and its 'At:' frame is the
    same generated model.py for every PyTriton model. The finding names the user's exception
    and the line of the user's code that raised it."""
    (found,) = [f for f in _analysis("pt_tag_raises").findings if f.kind == "model_failing"]
    assert found.model == "pt_tag"
    assert "its execute raises KeyError: 'pt_tag: token" in found.summary
    assert "pytriton_app.py(102): tag" in found.summary
    assert "TritonModelException" not in found.summary
