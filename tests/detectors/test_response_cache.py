"""Triton's response cache on real 2.51 recordings (tests/fixtures/foreign/doc_*, recorded by
``python -m tests.foreign.record`` with ``--cache-config local,size=1048576`` and
``response_cache { enable: true }`` on doc_extract; see their PROVENANCE.md).

A cache hit is admitted and answered without an execution (``prepared`` -> ``INITIALIZED to
PENDING`` -> ``add response output`` -> ``PENDING to RELEASED``) and counts as a success on
/metrics. Before, each hit stayed at the head of the model's queue of admitted requests, so
every later batch was joined to an older request, and the hits' successes hid a model that
failed every request it executed.
"""

from __future__ import annotations

from observability.detectors.instances import instances_of
from tests.foreign.parsed import analysis, window


def test_cache_hits_are_not_left_queued() -> None:
    w = window("doc_healthy")
    hits = [
        r
        for r in w.logs()
        if getattr(r, "from_state", "") == "PENDING" and getattr(r, "to_state", "") == "RELEASED"
    ]
    assert len(hits) >= 20, "the recording's cache hits"
    queued = instances_of(w).queued.get("doc_extract", [])
    # Only what was admitted at the capture's very end is still waiting (there were 43).
    assert all(w.until_ns - r.prepared_ns < 1_000_000_000 for r in queued), len(queued)


def test_a_model_failing_behind_its_cache_hits_is_found_and_says_so() -> None:
    for name in ("doc_extract_raises_cached", "doc_extract_raises_cached_quiet"):
        (found,) = [f for f in analysis(name).findings if f.kind == "model_failing"]
        assert found.model == "doc_extract"
        assert "answered from the response cache" in found.summary, found.summary
