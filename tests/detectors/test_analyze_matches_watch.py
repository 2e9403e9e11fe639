"""``analyze`` on the bundle captured during a run finds what the live store found."""

from __future__ import annotations

from observability.analyze import analyze_bundle, analyze_store
from observability.bundle import open_bundle
from observability.findings import Severity, parse_iso
from observability.store import Store
from tests.detectors.recording import RecordedRun


def _keys(findings) -> set[tuple[str, str, str | None]]:
    return {(f.kind, f.model, f.request_id) for f in findings if f.severity is not Severity.INFO}


def test_bundle_analysis_equals_the_live_store(faulty_run: RecordedRun) -> None:
    # Both evaluated at the same instant (the end of the capture): a request 9 s into a
    # 10 s deadline is not hung yet, wherever its lines were read from.
    until = parse_iso(open_bundle(faulty_run.bundle).meta.ended_at)
    with Store(faulty_run.store, readonly=True) as store:
        live = analyze_store(store, faulty_run.since_ns, until, faulty_run.clock_offset_ns)
    offline = analyze_bundle(faulty_run.bundle)
    assert _keys(live)
    assert _keys(offline.findings) == _keys(live)


def test_every_injected_fault_is_found(faulty_run: RecordedRun, healthy_run: RecordedRun) -> None:
    expected = {
        ("cold_start", "classifier"), ("hung_request", "router"),
        ("instance_saturation", "classifier"), ("thread_pool_exhaustion", "router"),
        ("callback_error", "router"), ("shape_growth", "decoder"), ("bls_deadlock", "generate"),
    }  # fmt: skip
    found = analyze_bundle(faulty_run.bundle).findings
    assert expected <= {(f.kind, f.model) for f in found}
    quiet = analyze_bundle(healthy_run.bundle).findings
    assert [f.to_dict() for f in quiet if f.severity is not Severity.INFO] == []
