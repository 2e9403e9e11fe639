"""hung_request on the recorded real runs (the hang and the deadlock are still open at the
window's end) and its healthy twin; also every detector of this family on the healthy twin."""

from __future__ import annotations

from dataclasses import replace

import pytest

from observability.detectors import Window
from observability.detectors.bls_deadlock import BlsDeadlockDetector
from observability.detectors.callback_error import CallbackErrorDetector
from observability.detectors.ensemble_fanout import EnsembleFanoutDetector
from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.shape_growth import ShapeGrowthDetector
from observability.detectors.stub_unhealthy import StubUnhealthyDetector
from observability.detectors.target_down import restarted_ns
from observability.findings import Severity
from tests.foreign.parsed import sliding_window


def test_hung_router_request_names_the_detector_call_it_waits_on(faulty: Window) -> None:
    findings = {f.request_id: f for f in HungRequestDetector().detect(faulty)}
    hang = findings["demo-hang-0"]
    assert (hang.kind, hang.model, hang.severity) == ("hung_request", "router", Severity.CRITICAL)
    assert hang.instance is not None and hang.instance.startswith("router_")
    assert "'demo-hang-0.detector' to detector" in hang.summary
    assert [e.ref.startswith("triton.log@") for e in hang.evidence] == [True, True]
    assert "asyncio.wait_for" in hang.advice


def test_deadlocked_parent_is_hung_and_its_child_is_not_reported_twice(faulty: Window) -> None:
    findings = HungRequestDetector().detect(faulty)
    ids = sorted(f.request_id or "" for f in findings)
    assert ids == ["demo-deadlock-0", "demo-hang-0"]  # children only inside their parent's
    deadlock = next(f for f in findings if f.request_id == "demo-deadlock-0")
    assert deadlock.model == "generate"
    assert "'demo-deadlock-0.generate' to generate, queued" in deadlock.summary


def test_deadline_is_configurable(faulty: Window) -> None:
    """``deadline_s`` is the ceiling and ``floor_s`` the floor of every learned deadline:
    both at an hour leave nothing hung in a 30 s window; so do per-model overrides."""
    assert HungRequestDetector(deadline_s=3600, floor_s=3600).detect(faulty) == []
    everyone = {m: 3600.0 for m in ("router", "detector", "generate", "classifier")}
    assert HungRequestDetector(deadlines=everyone).detect(faulty) == []
    assert HungRequestDetector(deadlines={"router": 3600.0}).detect(faulty) != []


def test_healthy_twin_has_no_hung_request(healthy: Window) -> None:
    assert HungRequestDetector().detect(healthy) == []


def test_every_detector_of_this_family_is_silent_on_the_healthy_twin(healthy: Window) -> None:
    detectors = [
        HungRequestDetector(),
        BlsDeadlockDetector(),
        CallbackErrorDetector(),
        ShapeGrowthDetector(),
        StubUnhealthyDetector(),
        EnsembleFanoutDetector(),
    ]
    findings = [f for d in detectors for f in d.detect(healthy)]  # run_detectors hides errors
    loud = [f.to_dict() for f in findings if f.severity.rank >= Severity.WARNING.rank]
    assert loud == []


def test_a_request_released_before_the_end_is_not_hung(faulty: Window) -> None:
    early = replace(faulty, until_ns=faulty.since_ns + 5_000_000_000)
    assert HungRequestDetector().detect(early) == []


def test_ids_a_client_reuses_and_a_client_side_chain() -> None:
    """pt_embed_hang (PyTriton): each pt_rank instance calls pt_embed through its own
    ModelClient, whose request ids count from 0 per client, so both '16's reach pt_embed: the
    one executing is not waiting on the other (no self-call), and pt_rank, whose every batch
    held a pt_embed request (a chain through the gRPC front end, not BLS), waits on it."""
    from tests.foreign.parsed import analysis

    found = {f.model: f for f in analysis("pt_embed_hang").findings if f.kind == "hung_request"}
    assert "its own execute is stuck" in found["pt_embed"].summary
    assert "waits on BLS call '16'" not in found["pt_embed"].summary
    assert "it waits on 2 BLS calls to pt_embed" in found["pt_rank"].summary
    assert not [f for f in analysis("pt_embed_hang").findings if f.kind == "bls_deadlock"]


def test_a_hang_that_ended_is_a_warning_and_a_plain_model_gets_no_step_as_its_call() -> None:
    """ops_enrich_hang_released: ops_enrich's only instance held one batch 40 s, then the
    queue drained. Nothing is open at the end; the hang is still told, as a warning. In
    ops_enrich_hang_classify_growth the ensemble's first steps (ops_classify, prepared
    0.1 ms after the ensemble's own request) are no BLS calls of the stuck ops_enrich."""
    from tests.foreign.parsed import analysis

    (ended,) = [f for f in analysis("ops_enrich_hang_released").findings if f.severity.rank]
    assert (ended.kind, ended.model, ended.severity) == (
        "hung_request",
        "ops_enrich",
        Severity.WARNING,
    )
    assert "held a batch for 40.0 s on ops_enrich_0_0" in ended.summary
    found = {
        f.model: f
        for f in analysis("ops_enrich_hang_classify_growth").findings
        if f.kind == "hung_request"
    }
    assert "it makes no BLS calls" in found["ops_enrich"].summary
    assert "it waits on a BLS call to ops_enrich" in found["ops_router"].summary
    # A caller released by its own guard after waiting on a hung child: the child's finding.
    img = [f for f in analysis("img_preprocess_hang").findings if f.kind == "hung_request"]
    assert [f.model for f in img] == ["img_preprocess"]


def test_a_level_0_hang_that_stalls_nothing_is_the_capacity_it_took() -> None:
    """At --log-verbose 0, one instance held by a BLS call that never returns while its
    sibling serves stalls nothing: the caller's completions halve at once while its queue
    never empties (hx_kb_hang_quiet, sw_pacing_hang_quiet, real Triton 2.51). The healthy
    twins under the same load, a closed loop and a concurrency sweep, stay silent."""
    from tests.foreign.parsed import analysis

    for name, model in (
        ("hx_kb_hang_quiet", "hx_dispatch"),
        ("sw_pacing_hang_quiet", "sw_auction"),
    ):
        (hung,) = [f for f in analysis(name).findings if f.kind == "hung_request"]
        assert (hung.model, hung.severity) == (model, Severity.CRITICAL)
        assert "part of its capacity stopped at once" in hung.summary
    for healthy in ("hx_healthy_quiet", "sw_healthy_sweep_quiet", "ex_healthy_quiet"):
        assert [f.summary for f in analysis(healthy).findings if f.severity.rank] == []


def test_executions_that_became_slower_are_not_capacity_lost() -> None:
    """The /metrics rule alone (capacity.py, as at --log-verbose 0): sw_pacing_leak's creep
    halves sw_auction's completions under the same closed loop too, but each request it
    still completes takes longer; the level-1 hang of sw_pacing_hang does not slow them."""
    from observability.detectors.capacity import capacity_drops
    from tests.foreign.parsed import window

    assert capacity_drops(window("sw_pacing_leak"), set()) == []
    assert capacity_drops(window("sw_pacing_leak"), set(), max_slower=1e9) != []
    (drop,) = capacity_drops(window("sw_pacing_hang"), set())
    assert drop.model == "sw_auction" and drop.rate_after < 0.6 * drop.rate_before


@pytest.mark.parametrize("at_s", [17, 19, 21])
def test_a_batch_open_when_triton_was_killed_and_restarted_is_no_hang(at_s: float) -> None:
    """emb_server_restart: Triton killed (kill -9) and started again 4 s later. ``watch``,
    17 s in: emb_encode_0_0's batch begun before the kill has no release line, and the new
    process loads emb_encode under the same instance names. Its scrapes fail while it logs
    those loads (21 s in: they answer again, its counters from zero): a new process, and the
    old one's batches died with it. They read as a hang for 6 passes."""
    window = sliding_window("emb_server_restart", at_s)
    assert restarted_ns(window) is not None
    assert HungRequestDetector().detect(window) == []


def test_no_restart_is_read_where_triton_kept_running() -> None:
    assert restarted_ns(sliding_window("rec_healthy_quiet", 20)) is None


@pytest.mark.parametrize("at_s", [10, 11])
def test_a_parent_waiting_on_a_cold_start_is_not_hung_when_a_newer_parent_also_called(
    at_s: float,
) -> None:
    """doc_extract_cold_start, ``watch`` 10 s in: doc_extract was reloaded and its first
    batch takes 4 s. Both doc_router instances wait on a call to it, the older's executing
    (the cold start), the newer's queued behind. Both calls came after both parents started,
    so the newer was each call's likeliest sender, and the older, waiting on no call of its
    own, read as hung. A batch none of whose calls is likeliest its own waits on them all."""
    assert HungRequestDetector().detect(sliding_window("doc_extract_cold_start", at_s)) == []


@pytest.mark.parametrize("at_s", [14, 15])
def test_a_parent_waiting_on_an_ensembles_first_step_in_its_cold_start_is_not_hung(
    at_s: float,
) -> None:
    """fr_parse_cold_start, ``watch`` 14 and 15 s in: fr_gateway calls the ensemble
    fr_features, whose first step fr_parse was reloaded and takes 4 s over its first batch.
    A first step is never learned as a callee (its requests come with the ensemble's, at
    the caller's call), so both gateways waited on no call of theirs and read as hung,
    critical, for 2 passes. A model that calls an ensemble (it was learned to call the
    ensemble's later steps) now waits on the first steps admitted after its batch began."""
    assert HungRequestDetector().detect(sliding_window("fr_parse_cold_start", at_s)) == []


def test_a_hang_in_an_ensembles_later_step_is_still_its_callers() -> None:
    """fr_enrich_hang: the ensemble's second step hangs; the gateway calling the ensemble is
    found hung, as before (its first steps, now its possible calls, have ended)."""
    found = HungRequestDetector().detect(sliding_window("fr_enrich_hang", 25))
    assert "fr_gateway" in {f.model for f in found}
