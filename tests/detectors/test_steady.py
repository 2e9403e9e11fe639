"""A finding about something still stuck does not blink: once it is found, every later pass
finds it again until the stuck work ends. A blink restarts an alert's ``for`` (seen in the
Prometheus test: TritonStreamStalled pending 10 s for a 6 s ``for``) and reads as "resolved"
in the app. Two causes were fixed: a library gauge scraped before its report overruled the
report (stream_stalled), and a stuck batch's learned deadline grew with slow batches that
started after it (hung_request)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from observability.catalogue import FAULTS, kind_of_fault
from observability.detectors import Window
from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.stream_stalled import StreamStalled
from observability.findings import Severity
from observability.store import Store
from tests.detectors.recording import RecordedRun
from tests.judged import judged

STEP_NS = 500_000_000
AFTER = 16
"""Steps checked after the first find (8 s): the blinks seen lasted 1-3 s, within 6 s of it."""


@functools.cache
def _events(path: Path, since_ns: int) -> tuple[object, ...]:
    """The recording's events from ``since_ns`` on, read once per process: both detectors'
    cases of a recording replay the same ones (a window never changes what it is given)."""
    with Store(path, readonly=True) as store:
        return (
            *store.log_records(since_ns=since_ns),
            *store.metric_scrapes(since_ns),
            *store.otlp_spans(since_ns),
            *store.scrapes(since_ns),
        )


@pytest.mark.parametrize("run_name", ["faulty_run", "faulty_none_run"])
@pytest.mark.parametrize(
    ("fault", "detector"), [("stall", StreamStalled), ("hang", HungRequestDetector)]
)
def test_a_stuck_finding_stays_found(
    run_name: str, fault: str, detector: type, request: pytest.FixtureRequest
) -> None:
    run: RecordedRun = request.getfixturevalue(run_name)
    kind, model = kind_of_fault(fault), FAULTS[fault].finds_model
    # Some forty passes over the whole recording: judged again only when the package, the
    # store or this file changes (tests/judged.py), not in every session.
    seen = judged(
        f"steady-{run.name}-{fault}-{detector.__name__}",
        [run.store, Path(__file__)],
        lambda: _passes(run, fault, detector),
    )
    assert True in seen, f"{kind} on {model} never found"
    first = seen.index(True)
    assert all(seen[first:]), f"blinks after it was found: {seen}"


def _passes(run: RecordedRun, fault: str, detector: type) -> list[bool]:
    """Whether each pass, every 0.5 s from 1.5 s after the injection, found the fault's
    finding as critical; until :data:`AFTER` passes after the first that did."""
    (inj,) = [i for i in run.injections if i["fault"] == fault]
    kind, model = kind_of_fault(fault), FAULTS[fault].finds_model
    events = _events(run.store, run.since_ns)
    seen: list[bool] = []
    at = run.since_ns + int((float(inj["at_s"]) + 1.5) * 1e9)  # no deadline is below 2 s
    while at <= run.until_ns and (True not in seen or len(seen) - seen.index(True) <= AFTER):
        window = Window(run.since_ns, at, events=events, clock_offset_ns=run.clock_offset_ns)
        found = detector(deadline_s=5.0).detect(window)
        seen.append(
            any(
                (f.kind, f.model) == (kind, model) and f.severity is Severity.CRITICAL
                for f in found
            )
        )
        at += STEP_NS
    return seen
