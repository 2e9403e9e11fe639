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
    "vid_detect_wrong_output_name": _NO_CONTRACT + "after vid_detect's reload its 240 "
    "responses write no 'add response output' line at all (147 'output: BOXES' before; the "
    "undeclared BOX, not requested by the BLS call, is dropped without a word), and "
    "vid_gateway raises AttributeError: 'NoneType' object has no attribute 'as_numpy' on "
    "every request. model_failing names vid_detect (from empty_answers.answering_empty) with "
    "vid_gateway as its relay, and says the empty answers may be an undeclared output, but "
    "cannot tell one from an error response: both leave the same log",
    "img_preprocess_latency_creep": "instance_saturation on img_gateway is found (warning, "
    "'All 2 instances of img_gateway were busy for 20.9 s while its queue grew from 1 to 4 "
    "requests (fed by clients)') but names no cause: every img_gateway execute waits on its "
    "requests' img_preprocess BLS calls (matched by timing), and img_preprocess's own "
    "executes ('executing N requests' -> 'released N requests') grew steadily from a mean of "
    "44 ms (batches of 1.15, 12:16:52-55) to 373 ms (batches of 1.53, 12:17:19-22), with "
    "all 4 of its instances busy for only 0.1 s of the 30 (2 busy for 21.9 s): the caller is "
    "saturated because a callee keeps getting slower. instance_saturation.py would have to "
    "read the busy stretch's callees (waits.callees) and name the one whose execution time "
    "rose across the stretch",
    "xl_translate_hang": "hung_request on xl_gateway is found but explains the hang backwards: "
    "'it waits on 8 BLS calls to xl_gateway (no request id): 8 queued for up to 24.7 s and "
    "never started, issued by xl_translate_0_1 of xl_translate'. The log: xl_gateway_0_1 "
    "'executing 1 requests' 12:15:26.648041 and xl_gateway_0_0 .650827 prepare 2 + 3 "
    "xl_translate requests (.650445-.651973), batched as 'model xl_translate, instance "
    "xl_translate_0_1, executing 5 requests' at .653739 and never released. The 8 requests "
    "queued after it (xl_gateway 'prepared:' lines 12:15:27.054-47.859, none executed, 7 "
    "'Issuing cancellation' when the clients' 10 s deadlines passed) are client gRPC "
    "requests, each right after an infer_handler.cc:675 'New request handler for "
    "ModelInferHandler' line, not BLS calls; xl_translate issues no call at all. But "
    "waits.callees learns, from the window's completed batches, {'xl_gateway': "
    "['xl_detok', 'xl_translate'], 'xl_translate': ['xl_gateway'], 'xl_detok': []}: client "
    "requests for xl_gateway admitted while xl_translate batches ran (three clients, each "
    "sending again 0.4 s after its answer) count as xl_translate's calls, origins.py's "
    "CLIENT tag (their frontend line) being read only for self-calls; so the 8 queued "
    "client requests become calls of the stuck batch. The finding must say that both "
    "xl_gateway instances wait on BLS calls to xl_translate, stuck in xl_translate_0_1's "
    "batch of 5",
    "xl_translate_cold_start_quiet": "cold_start is reported on xl_gateway (the BLS parent "
    "that waited: 'took 1.38 s on average (6 ending in the scrape interval to 12:22:05 "
    "UTC)') instead of xl_translate, whose first executions paid the 4 s set-up. At the "
    "scrape of 12:22:05.302 xl_translate's nv_inference_exec_count rose 0 -> 5, "
    "request_success 0 -> 15 and nv_inference_compute_infer_duration_us 0 -> 20,324,676 "
    "(its first batch: 5 requests of 4.055 s each), xl_gateway's 0 -> 6, 6 and 8,288,647 "
    "(it waited). ColdStart._from_metrics builds both findings (each "
    "spans its model's 'successfully loaded' line to that scrape: xl_translate "
    "12:22:00.082261, xl_gateway 12:22:00.128048), and the filter meant to drop a BLS parent "
    "that merely waited on its child (_within in cold_start.py) drops the finding that "
    "encloses another: the child's, because the child was loaded 46 ms earlier. On the "
    "metrics path first_seen is the load, not the execution, so the enclosing test is "
    "backwards; it should prefer the model with the larger per-execution mean (4.06 s "
    "against 1.38 s) or the callee. The OTLP spans say it outright: five xl_translate spans "
    "of 4.06 s from 12:22:00.307 and three of 4.05 s from 12:22:04.412 inside xl_gateway "
    "spans of 4.12, 4.12 and 8.17 s",
    "xl_detok_leak": "shape_growth is found on xl_detok (TEXT_IDS [25] to [45632] over 12 "
    "responses, x2.0 each) and also, twice, on xl_gateway ('state is leaking across "
    "responses', xl_gateway_0_1 x4.5 and xl_gateway_0_0 x3.5), which keeps no state: its TGT "
    "is the TEXT_IDS of the xl_detok call its execute just made, relayed (every 'add "
    "response output: output: TEXT_IDS, ... shape: [n]' is followed 1-4 ms later by 'output: "
    "TGT, ... shape: [n]', e.g. [45632] at 12:17:25.739858 and .743614, both "
    "infer_response.cc:174, so requests._forwarded, which wants another source line, does "
    "not see the copy). shape_growth.py should drop a series whose every size equals the "
    "output of a BLS child released inside the same execution (the gateway relays xl_detok), "
    "or say so instead of reporting the relay as a leak",
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
