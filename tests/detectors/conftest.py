"""Windows over the two real recordings (``faulty_run``, ``healthy_run`` in tests/conftest.py)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from observability.detectors import Window
from observability.store import Store
from tests.detectors.recording import RecordedRun


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


@pytest.fixture(scope="session")
def faulty(faulty_run: RecordedRun) -> Window:
    return window_of(faulty_run)


@pytest.fixture(scope="session")
def healthy(healthy_run: RecordedRun) -> Window:
    return window_of(healthy_run)
