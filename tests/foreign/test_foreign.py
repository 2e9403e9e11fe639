"""The detectors on recordings of pipelines they were never tuned on (``tests/foreign``).

Each bundle in ``tests/fixtures/foreign/<scenario>/`` was recorded from a real tritonserver
2.51 by ``python -m tests.foreign.record`` (see its ``PROVENANCE.md``). A faulty scenario must
be reported as every ``(kind, model)`` of its ``expected.json`` with severity warning or above;
a healthy twin must yield nothing of warning or above; ``absent`` pairs (a model that is
not at fault) must not be reported. A scenario that fails today because of
a detector gap is marked ``xfail(strict=True)`` with the gap, so the suite stays green while
the gap stays visible (and the mark must go when the gap is closed).

No Triton is started here: these tests read checked-in bundles only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from observability.analyze import AnalysisResult, analyze_bundle
from observability.findings import Severity
from tests.foreign.parsed import analysis

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"

_NO_CONTRACT = (
    "output_contract reads a declared output answered in another type; an output answered "
    "under a name the config does not declare leaves no line at all (Triton drops it), so "
    "the log cannot tell it from an error response; "
)
GAPS: dict[str, str] = {
    "gen_llm_stall_http": "nothing reported: stream_stalled reads gRPC stream lines only "
    "(catalogue: 'an HTTP generate_stream stall needs the library'). The log has one "
    "http_server.cc:4599 'HTTP request: 2 /v2/models/gen_ensemble/generate_stream' line per "
    "stream (58 for gen_ensemble, 56 for gen_bls) and one 'HTTP using buffer for: "
    "text_output' per response, but no end of a stream; gen_ensemble's nv_inference_count "
    "stays below its generate_stream lines from 12:52:53 on (56 done of 58 at the last "
    "scrape). A detector would compare per-model generate_stream opens with completions "
    "(the decoupled ensemble's count moves at each stream's end) and report an open stream "
    "that outlives the stall deadline while later ones complete",
    "vid_detect_wrong_output_name": _NO_CONTRACT + "after vid_detect's reload its 240 "
    "responses write no 'add response output' line at all (147 'output: BOXES' before; the "
    "undeclared BOX, not requested by the BLS call, is dropped without a word), and "
    "vid_gateway raises AttributeError: 'NoneType' object has no attribute 'as_numpy' on "
    "every request. model_failing names vid_detect (from empty_answers.answering_empty) with "
    "vid_gateway as its relay, and says the empty answers may be an undeclared output, but "
    "cannot tell one from an error response: both leave the same log",
    # Round 24 (PyTriton): see tests/fixtures/foreign/README.md, "Round 24".
    # Round 25 (ops, 75-90 s windows, several faults): see the README, "Round 25".
    # Round 27 (bg, decoupled models answering from background threads): see the README.
    # bg_pool_exhausted: found (streams.py, the fourteenth session).
    # Round 28 (cx, clients that time out, cancel and retry): see the README, "Round 28".
    # Round 29 (pz, retail search): see the README, "Round 29".
    # Round 30 (zoo, a model zoo with sparse, uneven traffic): see the README, "Round 30".
    # Round 32 (hx, HTTP clients with many requests in flight): see the README, "Round 32".
    # Round 31 (ex, python_backend's own examples as users copy them): all found; see the
    # README, "Round 31".
    # Round 33 (sw, perf_analyzer-style concurrency sweeps and request rates): see the
    # README, "Round 33".
    # Round 34 (gs, gRPC streaming clients on models not all decoupled): see the README.
    # gs_spam_hang_quiet: found (lockstep.py, the fourteenth session).
    # Round 35 (day, a production day's noise around a healthy pipeline): see the README.
    "day_lang_hang_quiet": "nothing reported. --log-verbose 0 (86 log lines: the start and "
    "the model_lifecycle lines of the three repository-API operations, no request line): one "
    "day_lang call (29 s) never returned and held a day_lang and a day_classify instance to "
    "the end while the others served (239 of 240 good day_classify documents ok, one timeout; "
    "the garbled document timed out at 1 s). "
    "Unlike gs_spam_hang_quiet (lockstep.py) no counter lags: day_classify calls its "
    "children one after the other, so the hung call and its parent are both counted nowhere "
    "(at the end "
    "day_classify 253 successes, day_lang 249, the difference the 4 empty documents answered "
    "before any call; day_embed 525 = day_lang's 249 + day_triage's 276), and day_classify's "
    "pending gauge read 0 at every scrape but one (1 at 38 s). Nothing in this window shows "
    "the hang: the gap is of the signals (a hang that holds one instance of several is "
    "invisible at level 0 when no sibling call runs beside it); at most the coverage could "
    "say so",
    # Round 38 (dq, long batching delays, priorities and queue policies): see the README.
    # dq_child_hang_in_batch: found (ordering.py, the fifteenth session).
    # Round 36 (lz, --log-verbose 0: only /metrics and /v2/models/stats): see the README.
    "lz_route_hang_light_quiet": "nothing reported. --log-verbose 0: at 20 s one of 2 "
    "closed-loop slots sent a quote whose lz_route call never returned, holding one of "
    "lz_quote's 2 instances to the end; the other slot went on alone on the other instance. "
    "lz_quote's nv_inference_request_success rose 17-18 a second before (334, 352 at 19 s, "
    "20 s), 8-10 after (362, 371, 379, 388 at 21-24 s; 531 at 40 s), its compute per request "
    "110 ms before and after, but nv_inference_pending_request_count read 0 at every scrape "
    "of the window: capacity.py needs requests queued at every scrape (a model busy at its "
    "limit), so a hang under a light load, which leaves the queue empty, is not seen; with "
    "one completion per client answer a fall in completions is then the clients' own rate",
}
"""Scenario -> the precise detector gap that makes it fail today (see
tests/fixtures/foreign/README.md for the evidence)."""


def _scenarios() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "bundle.tar.gz").is_file())


def _analysis(name: str) -> AnalysisResult:
    return analysis(name)  # analyze's own analysis, of events parsed once (tests/foreign/parsed.py)


def _expected(name: str) -> dict[str, object]:
    return dict(json.loads((FIXTURES / name / "expected.json").read_text()))


def _serious(result: AnalysisResult) -> list[tuple[str, str, str]]:
    return [
        (f.kind, f.model or "", f.severity.value)
        for f in result.findings
        if f.severity.rank >= Severity.WARNING.rank
    ]


def _params() -> list[object]:
    out: list[object] = []
    for name in _scenarios():
        marks = []
        if name in GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=GAPS[name]))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_every_fixture_is_complete() -> None:
    names = _scenarios()
    assert names, f"no bundles under {FIXTURES}"
    for name in names:
        expected = _expected(name)
        assert (FIXTURES / name / "PROVENANCE.md").is_file(), name
        assert isinstance(expected["healthy"], bool), name
        assert expected["healthy"] == (not expected["findings"]), name
        assert (FIXTURES / name / "bundle.tar.gz").stat().st_size < 1_500_000, name


@pytest.mark.parametrize("name", _params())
def test_foreign_scenario(name: str) -> None:
    expected = _expected(name)
    result = _analysis(name)
    serious = _serious(result)
    if expected["healthy"]:
        assert serious == [], f"false positive(s) on the healthy twin {name}: {serious}"
        return
    found = {(kind, model) for kind, model, _severity in serious}
    missing = [tuple(p) for p in expected["findings"] if tuple(p) not in found]  # type: ignore[attr-defined]
    assert not missing, f"{name}: missing {missing}; analyze reported {serious}"
    # What must not be reported: a finding on a model that is not at fault.
    wrong = [tuple(p) for p in expected.get("absent", []) if tuple(p) in found]  # type: ignore[attr-defined]
    assert not wrong, f"{name}: reported {wrong}, which a user must not be told"
    # What a finding must name to be actionable (the child that broke, not only the caller).
    for kind, model, text in expected.get("mentions", []):  # type: ignore[attr-defined]
        summaries = [f.summary for f in result.findings if (f.kind, f.model) == (kind, model)]
        assert any(text in s for s in summaries), f"{name}: no {kind} on {model} says {text!r}"


@pytest.mark.parametrize("name", ["ch_leaf_hang", "rag_orchestrator_raises_quiet", "vis_healthy"])
def test_events_parsed_once_give_what_analyze_gives(name: str) -> None:
    """The cache of parsed events changes nothing of what ``analyze`` reports."""
    fresh = analyze_bundle(FIXTURES / name / "bundle.tar.gz")
    kept = _analysis(name)
    assert [(f.kind, f.model, f.summary) for f in kept.findings] == [
        (f.kind, f.model, f.summary) for f in fresh.findings
    ]
    assert kept.notes == fresh.notes
