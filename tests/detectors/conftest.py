"""Windows over the two real recordings (``faulty_run``, ``healthy_run`` in tests/conftest.py)."""

from __future__ import annotations

import pytest

from observability.detectors import Window
from observability.store import Store
from tests.detectors.recording import RecordedRun


def window_of(run: RecordedRun) -> Window:
    """The recording's window, evaluated at its end, backed by its store (read-only)."""
    return Window(
        since_ns=run.since_ns,
        until_ns=run.until_ns,
        store=Store(run.store, readonly=True),
        clock_offset_ns=run.clock_offset_ns,
    )


@pytest.fixture
def faulty(faulty_run: RecordedRun) -> Window:
    return window_of(faulty_run)


@pytest.fixture
def healthy(healthy_run: RecordedRun) -> Window:
    return window_of(healthy_run)
