"""hung_request on a model whose responses wait, in order, on a batch that never returns.

The real reproduction is ``dq_child_hang_in_batch`` (tests/fixtures/foreign, recorded from
Triton 2.51 by ``python -m tests.foreign.record``): dq_rank batches with
``preserve_ordering: true``; a dq_gateway request's BLS call makes dq_rank_0_1's batch of 6
sleep 300 s, and the bulk client's later requests straight to dq_rank, run on dq_rank_0_0 and
released in 30 ms, are never answered. ``dq_child_hang_unordered`` is the same fault without
``preserve_ordering`` (the bulk client served to the end), ``dq_healthy_long_delay`` the same
ordered repository and load without the fault.
"""

from __future__ import annotations

from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.ordering import held_responses, ordered_models
from observability.detectors.waits import waits_of
from observability.findings import Severity
from tests.foreign.parsed import analysis, window


def _held(name: str) -> list[tuple[str, str, int]]:
    w = window(name)
    stuck = waits_of(w, HungRequestDetector().policy).stuck
    return [(h.model, h.behind.instance, len(h.held)) for h in held_responses(w, stuck)]


def test_the_ordered_models_clients_are_owed_a_finding_on_it() -> None:
    found = [f for f in analysis("dq_child_hang_in_batch").findings if f.model == "dq_rank"]
    assert [(f.kind, f.severity, f.instance) for f in found] == [
        ("hung_request", Severity.CRITICAL, "dq_rank_0_1")
    ]
    text = found[0].summary
    assert "no response to the 3 requests it finished since 21:45:59 UTC" in text, text
    assert "preserve_ordering" in text and "dq_rank_0_0 executed and released them" in text
    assert any("preserve_ordering true" in e.detail for e in found[0].evidence)
    assert _held("dq_child_hang_in_batch") == [("dq_rank", "dq_rank_0_1", 3)]


def test_the_caller_keeps_its_own_finding() -> None:
    kinds = {(f.kind, f.model) for f in analysis("dq_child_hang_in_batch").findings}
    assert ("hung_request", "dq_gateway") in kinds


def test_the_same_hang_without_ordering_holds_nothing() -> None:
    assert ordered_models(window("dq_child_hang_unordered")) == {}
    assert not [f for f in analysis("dq_child_hang_unordered").findings if f.model == "dq_rank"]


def test_an_ordered_model_with_nothing_stuck_holds_nothing() -> None:
    assert set(ordered_models(window("dq_healthy_long_delay"))) == {"dq_rank"}
    assert _held("dq_healthy_long_delay") == []
    assert not [f for f in analysis("dq_healthy_long_delay").findings if f.severity.rank]
