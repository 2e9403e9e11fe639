"""``analyze`` on the bundle captured during a run finds what the live store found."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from observability.analyze import AnalysisResult, analyze_bundle, analyze_store
from observability.bundle import open_bundle
from observability.catalogue import FAULTS, kind_of_fault
from observability.findings import Severity, parse_iso
from observability.store import Store
from tests.detectors.conftest import findings_at_end
from tests.detectors.recording import RecordedRun
from tests.fixtures.recordings import session_recording
from tests.judged import judged


@functools.cache
def _analysed(bundle: Path) -> AnalysisResult:
    """``analyze`` of a checked-in recording's bundle, once per package change
    (tests/judged.py)."""
    return judged(f"analyze-{bundle.parent.name}", [bundle], lambda: analyze_bundle(bundle))


def _keys(findings) -> set[tuple[str, str, str | None]]:
    return {(f.kind, f.model, f.request_id) for f in findings if f.severity is not Severity.INFO}


def test_bundle_analysis_equals_the_live_store(faulty_run: RecordedRun) -> None:
    # Both evaluated at the same instant (the end of the capture): a request 9 s into a
    # 10 s deadline is not hung yet, wherever its lines were read from.
    until = parse_iso(open_bundle(faulty_run.bundle).meta.ended_at)
    with Store(faulty_run.store, readonly=True) as store:
        live = analyze_store(store, faulty_run.since_ns, until, faulty_run.clock_offset_ns).findings
    offline = _analysed(faulty_run.bundle)
    assert _keys(live)
    assert _keys(offline.findings) == _keys(live)


@pytest.mark.parametrize(
    ("faulty", "healthy"),
    [("faulty", "healthy"), ("faulty-ids-none", "healthy-ids-none")],
    ids=["ids-all", "ids-none"],
)
def test_every_injected_fault_is_found(
    faulty: str, healthy: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each fault the recording injected owes the finding its catalogue row names (kind and
    model, warning or above), with request ids on every request and with none at all; the
    healthy twin of each gives nothing above info.

    Both are read as stores ingested from their checked-in archives by the product's ingest
    (cached between sessions, see tests/fixtures/recordings), judged at their end by every
    default detector as ``analyze_store`` judges them (the window shared with the detector
    tests: tests/detectors/conftest.py); that a bundle analysed whole gives what its store
    gives is the test above."""
    run = session_recording(faulty, tmp_path_factory)
    owed = {(kind_of_fault(i["fault"]), FAULTS[i["fault"]].finds_model) for i in run.injections}
    assert len(owed) >= 8, owed
    found = findings_at_end(run)
    loud = {(f.kind, f.model) for f in found if f.severity.rank >= Severity.WARNING.rank}
    assert owed - loud == set(), sorted(owed - loud)
    quiet = findings_at_end(session_recording(healthy, tmp_path_factory))
    assert [f.to_dict() for f in quiet if f.severity is not Severity.INFO] == []
