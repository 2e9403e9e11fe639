"""output_contract on real Triton 2.51 recordings (tests/fixtures/foreign, recorded by
``python -m tests.foreign.record``; see each PROVENANCE.md and README Round 13).

``vid_detect_wrong_dtype``: after a reload, vid_detect answers BOXES as FP64 where its config
declares TYPE_FP32; Triton serves it, and vid_track, the gateway's next BLS call, refuses it
in errors no log line or counter shows (and ``ex_bls_decoupled_verbatim``: python_backend's
bls_decoupled example as published, answering SUM as INT64 where its config says INT32).
``vid_healthy`` ran the same load; every other recording of the corpus (their configs
declare what they answer, TYPE_STRING as BYTES) must stay silent too, though the join gives
BLS parents their children's output lines.
"""

from __future__ import annotations

import json

import pytest

from observability.detectors.output_contract import breaches
from observability.findings import Severity
from tests.foreign.parsed import FIXTURES, analysis, window


def test_a_declared_output_in_another_type_is_found_on_its_model() -> None:
    found = analysis("vid_detect_wrong_dtype").findings
    (breach,) = [f for f in found if f.kind == "output_contract"]
    assert (breach.model, breach.severity) == ("vid_detect", Severity.CRITICAL)
    assert "BOXES as FP64" in breach.summary and "declares FP32" in breach.summary
    assert not [f for f in found if f.kind == "model_failing" and f.model == "vid_gateway"]


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in FIXTURES.iterdir() if (p / "bundle.tar.gz").is_file()),
)
def test_no_other_recording_breaks_its_config(name: str) -> None:
    """Read from the analysis the foreign tests already made (cached per process): the
    detector's own thresholds, at no second pass over 126 recordings."""
    expected = json.loads((FIXTURES / name / "expected.json").read_text())
    if any(kind == "output_contract" for kind, _model in expected["findings"]):
        pytest.skip("a breach itself (vid_detect_wrong_dtype, ex_bls_decoupled_verbatim)")
    assert [f.summary for f in analysis(name).findings if f.kind == "output_contract"] == []


def test_the_breach_is_read_from_the_logged_config() -> None:
    (breach,) = breaches(window("vid_detect_wrong_dtype"))
    assert (breach.output, breach.dtype, breach.declared) == ("BOXES", "FP64", "FP32")
    assert dict(breach.config.outputs)["BOXES"] == "FP32"
    assert breach.responses == breach.answered >= 100
