"""Windows over the two real recordings (``faulty_run``, ``healthy_run`` in tests/conftest.py)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from observability.detectors import Window, run_detectors
from observability.detectors.registry import default_detectors
from observability.findings import Finding
from observability.store import Store
from tests.detectors.recording import RecordedRun
from tests.judged import judged


def window_of(run: RecordedRun) -> Window:
    """The recording's window, evaluated at its end, backed by its store (read-only).

    One window per recording and process: detectors are pure over a window (``run_detectors``
    hands every detector the same one), and the window keeps what it derived (its records,
    the request and instance lifecycles), so each test file re-reading the same recording
    builds them once instead of once per test. A test wanting another instant uses
    ``dataclasses.replace``, which gives a fresh window."""
    return _window(run.store, run.since_ns, run.until_ns, run.clock_offset_ns)


@functools.cache
def _window(store: Path, since_ns: int, until_ns: int, clock_offset_ns: int) -> Window:
    return Window(
        since_ns=since_ns,
        until_ns=until_ns,
        store=Store(store, readonly=True),
        clock_offset_ns=clock_offset_ns,
    )


def findings_at_end(run: RecordedRun) -> tuple[Finding, ...]:
    """The findings ``analyze_store`` gives on the recording at its end (every default
    detector over the window above), once per recording and process: the end-to-end test
    (test_analyze_matches_watch) and the triage app's stores read the same ones, and the
    window's lifecycles, derived once, serve them and the detector tests alike (a fresh
    window derived them again: 0.9 s for faulty, 2 s for healthy)."""
    return _findings(run.store, run.since_ns, run.until_ns, run.clock_offset_ns)


@functools.cache
def _findings(store: Path, since_ns: int, until_ns: int, offset: int) -> tuple[Finding, ...]:
    """Kept on disk until the package or the store changes (tests/judged.py)."""
    window = _window(store, since_ns, until_ns, offset)
    return judged(
        f"findings-at-end-{store.parent.name}-{since_ns}-{until_ns}-{offset}",
        [store],
        lambda: tuple(run_detectors(default_detectors(), window)),
    )


@pytest.fixture(scope="session")
def faulty(faulty_run: RecordedRun) -> Window:
    return window_of(faulty_run)


@pytest.fixture(scope="session")
def healthy(healthy_run: RecordedRun) -> Window:
    return window_of(healthy_run)
