"""The detectors on recordings of pipelines they were never tuned on (``tests/foreign``).

Each bundle in ``tests/fixtures/foreign/<scenario>/`` was recorded from a real tritonserver
2.51 by ``python -m tests.foreign.record`` (see its ``PROVENANCE.md``). A faulty scenario must
be reported as every ``(kind, model)`` of its ``expected.json`` with severity warning or above;
a healthy twin must yield nothing of warning or above. A scenario that fails today because of
a detector gap is marked ``xfail(strict=True)`` with the gap, so the suite stays green while
the gap stays visible (and the mark must go when the gap is closed).

No Triton is started here: these tests read checked-in bundles only.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from observability.analyze import AnalysisResult, analyze_bundle
from observability.findings import Severity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"

GAPS: dict[str, str] = {
    "ocr_cycle_deadlock": (
        "bls_deadlock without ids sees only a call into the caller's own model: "
        "waits.analyse gives a stuck batch possible calls only to its learned callees, and "
        "det_backbone never called text_det in a healthy batch, so the queued call back to "
        "text_det has no caller; _held_by_blocked also drops a holder whose call is executing "
        "(text_det's calls are held by det_backbone's stuck batch): A -> B -> A is reported "
        "only as hung_request on text_det waiting on det_backbone"
    ),
    "ocr_callback_error": (
        "callback_error takes the model only from a /<model>/<version>/*.py frame; a "
        "done-callback in a shared helper package outside the model repository gives "
        "model 'unknown' (warning, no request), although text_det_0_1 started waiting "
        "18 ms before the traceback and its det_backbone child was released just before it"
    ),
    "ocr_callback_error_quiet": (
        "callback_error takes the model only from a /<model>/<version>/*.py frame; a "
        "done-callback in a shared helper package gives model 'unknown' (and without the "
        "verbose log nothing else names it)"
    ),
    "llm_stream_stall": (
        "streams.log_streams gives a response of index N to the OLDEST open stream that has "
        "sent N-1: every later healthy stream passing index 4 is matched to the stalled "
        "stream (stuck at 3), so the stall is handed on to a live stream and its quiet time "
        "is 0.3 s instead of 25 s at the window's end (read 105 streams, 104 final flags)"
    ),
    "llm_kv_leak": (
        "shape_growth reports constant-step growth ('carried') only when the points carry "
        "request ids (a '' root disqualifies it); without ids only geometric growth counts, "
        "so kv_decoder PRESENT [2,1,8] -> [2,1040,8] by 16 elements per step over 104 "
        "id-less streams, never reset, is missed"
    ),
}
"""Scenario -> the precise detector gap that makes it fail today (see
tests/fixtures/foreign/README.md for the evidence)."""


def _scenarios() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "bundle.tar.gz").is_file())


@cache
def _analysis(name: str) -> AnalysisResult:
    return analyze_bundle(FIXTURES / name / "bundle.tar.gz")


def _expected(name: str) -> dict[str, object]:
    return dict(json.loads((FIXTURES / name / "expected.json").read_text()))


def _serious(result: AnalysisResult) -> list[tuple[str, str, str]]:
    return [
        (f.kind, f.model or "", f.severity.value)
        for f in result.findings
        if f.severity.rank >= Severity.WARNING.rank
    ]


def _params() -> list[object]:
    out = []
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
