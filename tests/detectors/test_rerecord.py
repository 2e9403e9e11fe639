"""The checked-in recordings still say what a fresh one says: record the faulty run anew on a
real Triton (about 2 minutes) and compare what ``analyze`` finds in each. A change to the demo
models, the load or the schedule that would make the fixtures stale fails here; re-make them
with ``python -m tests.fixtures.recordings.record`` (tests/fixtures/recordings/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from observability.analyze import analyze_bundle
from observability.findings import Severity
from tests.detectors.recording import RecordedRun, record

pytestmark = pytest.mark.lab


def _found(bundle: Path) -> dict[tuple[str, str], str]:
    """Each finding's kind and model, with its summary: a failure on a loaded CI machine
    must say what the fresh run saw (a Triton that stopped answering, a fault that ran late)."""
    return {
        (f.kind, f.model): f.summary
        for f in analyze_bundle(bundle).findings
        if f.severity.rank >= Severity.WARNING.rank
    }


def _told(found: dict[tuple[str, str], str], keys: set[tuple[str, str]]) -> str:
    return "".join(f"\n  {k}: {found[k]}" for k in sorted(keys))


def test_a_fresh_recording_finds_what_the_checked_in_one_finds(
    faulty_run: RecordedRun, tmp_path: Path
) -> None:
    fresh = record("faulty", tmp_path / "faulty", healthy=False)
    assert [i["fault"] for i in fresh.injections] == [i["fault"] for i in faulty_run.injections]
    now, then = _found(fresh.bundle), _found(faulty_run.bundle)
    log_tail = "\n    ".join(fresh.log.read_text(errors="replace").splitlines()[-15:])
    assert set(now) == set(then), (
        f"only in the fresh recording:{_told(now, set(now) - set(then))}\n"
        f"only in the checked-in one:{_told(then, set(then) - set(now))}\n"
        f"injections: {fresh.injections}\nthe end of Triton's log:\n    {log_tail}"
    )
