"""instance_saturation on the real recordings: the slow classifier behind router, and the twin."""

from __future__ import annotations

import json

import pytest

from observability import events as ev
from observability.detectors import Window
from observability.detectors.instance_saturation import InstanceSaturation, all_busy_stretches
from observability.findings import Severity
from tests.foreign.parsed import FIXTURES, analysis, log_findings


def test_slow_single_instance_child_is_saturated_and_names_its_caller(faulty: Window) -> None:
    findings = InstanceSaturation().detect(faulty)
    by_model = {f.model: f for f in findings}
    assert "classifier" in by_model, [f.to_dict() for f in findings]
    found = by_model["classifier"]
    assert found.severity is Severity.WARNING
    assert found.instance == "classifier_0_0"
    assert "router" in found.summary  # the upstream BLS caller feeding it
    assert any(e.source == "metrics" and 'model="classifier"' in e.ref for e in found.evidence)
    # A hang or deadlock holding one instance is not saturation: other detectors own them.
    assert "generate" not in by_model


def test_healthy_twin_is_not_saturated(healthy: Window) -> None:
    findings = InstanceSaturation().detect(healthy)
    assert [f for f in findings if f.severity.rank >= Severity.WARNING.rank] == []


def test_all_five_detectors_find_nothing_on_the_healthy_twin(healthy: Window) -> None:
    from observability.detectors.bls_call_hung import BlsCallHung
    from observability.detectors.cold_start import ColdStart
    from observability.detectors.target_down import TargetDown
    from observability.detectors.thread_pool_exhaustion import ThreadPoolExhaustion

    detectors = [
        InstanceSaturation(),
        ThreadPoolExhaustion(),
        ColdStart(),
        TargetDown(),
        BlsCallHung(),
    ]
    findings = [f for d in detectors for f in d.detect(healthy)]  # run_detectors hides errors
    assert [f.to_dict() for f in findings if f.severity.rank >= Severity.WARNING.rank] == []


def test_an_instance_held_by_a_hung_request_counts_as_one_long_execution() -> None:
    """Two instances: one hung from the start, the other busy with short executions. The
    model is all busy, but because one request holds an instance (hung_request's finding),
    not because work flows too slowly (a stray warning in a recorded run, 2026-11-23)."""
    s = 1_000_000_000
    records: list[object] = []

    def log(at: int, cls: type, *args: object) -> None:
        records.append(cls(ev.LogRecord(at, ev.LogLevel.INFO, "x.cc", 1, len(records)), *args))

    log(0, ev.InstanceExecuting, "detector", "detector_0_0", 1)
    for i in range(100):
        log(s + i * s // 10, ev.InstanceExecuting, "detector", "detector_0_1", 1)
        log(s + (i + 1) * s // 10 - 1_000, ev.InstanceReleased, "detector_0_1", 1)
    (stretch,) = all_busy_stretches(records, until_ns=30 * s)
    assert stretch.seconds >= 9.9
    assert stretch.longest_s >= 10.9, "the hung execution, not the 0.1 s ones"


def test_a_closed_loop_saturation_is_read_from_the_queue_wait() -> None:
    """med_normalize_slow_saturation (tests/fixtures/foreign, Triton 2.51, README Round 18):
    three gateway instances each wait on their one call to med_normalize, whose batches slowed
    to 2 s: both instances busy for 20 s, the pending count never above 1, each call queued
    0.7 s. med_healthy ran the same load with 6 ms batches."""
    (found,) = [
        f
        for f in analysis("med_normalize_slow_saturation").findings
        if f.kind == "instance_saturation"
    ]
    assert found.model == "med_normalize" and "waited 0.69 s in its queue" in found.summary
    assert [f for f in analysis("med_healthy").findings if f.kind == "instance_saturation"] == []


@pytest.mark.parametrize(
    "name, model",
    [
        ("asr_cancelled_keep_running", "asr_router"),
        ("doc_layout_rate_saturation", "doc_layout"),
        ("emb_encode_saturated", "emb_encode"),
        ("geo_lookup_saturated", "geo_lookup"),
        ("med_normalize_slow_saturation", "med_normalize"),
        ("rec_instance_saturation", "rec_scorer"),
        ("vid_gateway_bls_timeout", "vid_track"),
    ],
)
def test_a_log_alone_tells_the_queue_from_its_prepared_lines(name: str, model: str) -> None:
    """Without /metrics the pending count is the log's: each request from its ``prepared:``
    line to the batch that took it, read once a second as a scrape would."""
    found = [f for f in log_findings(name) if f.kind == "instance_saturation"]
    assert [f.model for f in found] == [model], [f.summary for f in found]
    assert not [e for e in found[0].evidence if e.source == "metrics"]


@pytest.mark.parametrize(
    "name",
    sorted(
        p.parent.name
        for p in FIXTURES.glob("*/expected.json")
        if json.loads(p.read_text()).get("healthy")
    ),
)
def test_a_log_alone_of_a_healthy_pipeline_is_not_saturated(name: str) -> None:
    found = [f.summary for f in log_findings(name) if f.kind == "instance_saturation"]
    assert found == []


@pytest.mark.parametrize(
    "name",
    [
        "emb_tokenize_cold_start_iso",  # whole seconds: a burst after a cold start
        "rec_stub_killed",  # a dead stub's 1 s batches are no work
        "emb_pool_stub_oom",
    ],
)
def test_a_log_alone_of_what_is_no_work_is_not_saturated(name: str) -> None:
    found = [f.summary for f in log_findings(name) if f.kind == "instance_saturation"]
    assert found == []


def test_a_caller_saturated_by_a_callee_that_keeps_slowing_names_it() -> None:
    """img_preprocess_latency_creep: each img_preprocess execute took 5 ms more than the
    last; its four instances were never all busy, so the queue built at img_gateway, whose
    batches wait on those calls. The gateway's finding names the slowing callee."""
    found = [f for f in analysis("img_preprocess_latency_creep").findings if f.severity.rank]
    assert [(f.kind, f.model) for f in found] == [("instance_saturation", "img_gateway")]
    assert "BLS calls to 'img_preprocess', whose executions slowed" in found[0].summary
    healthy = [f for f in analysis("img_healthy").findings if f.severity.rank]
    assert healthy == []
