"""requests_rejected on real Triton 2.51 recordings (tests/fixtures/foreign, recorded by
``python -m tests.foreign.record``; see each PROVENANCE.md and README Round 11).

``tts_queue_full_untraced`` and ``tts_queue_full_child_untraced``: a burst of twelve clients
on a text-to-speech pipeline whose BLS frontend fans out to ``tts_acoustic``, which has a
queue bounded at 4; Triton refuses thousands of the calls (``PENDING to FAILED_ENQUEUE``).
``tts_healthy`` ran the same pipeline under its usual load; ``tts_queue_full_quiet`` is the
burst without ``--log-verbose``, where nothing is left to read.
"""

from __future__ import annotations

import pytest

from observability.findings import Finding, Severity
from tests.foreign.parsed import analysis


def _rejected(name: str) -> list[Finding]:
    return [f for f in analysis(name).findings if f.kind == "requests_rejected"]


@pytest.mark.parametrize("name", ["tts_queue_full_untraced", "tts_queue_full_child_untraced"])
def test_refusals_of_a_full_queue_name_the_model(name: str) -> None:
    (found,) = _rejected(name)
    assert (found.model, found.severity) == ("tts_acoustic", Severity.CRITICAL)
    refused = int(found.summary.split("refused ", 1)[1].split(" ", 1)[0])
    assert refused >= 1000


@pytest.mark.parametrize("name", ["tts_healthy", "tts_queue_full_quiet", "doc_healthy"])
def test_no_refusal_no_finding(name: str) -> None:
    assert _rejected(name) == []


def test_the_refusals_that_were_bls_calls_are_counted() -> None:
    """dq_queue_full_rejects: 35 refusals at dq_rank, 25 of a burst of direct clients (each
    followed by its frontend's 'Infer failed' line) and 10 of dq_gateway's BLS calls. The
    finding once said "most of them BLS calls" whenever the model had a caller."""
    (found,) = [
        f for f in analysis("dq_queue_full_rejects").findings if f.kind == "requests_rejected"
    ]
    assert "refused 35 requests to dq_rank" in found.summary
    assert "10 of them BLS calls from dq_gateway" in found.summary
