"""Two real recordings per session: the fault schedule and its healthy twin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from observability.detectors import Window
from observability.store import Store
from tests.detectors.recording import RecordedRun, record


def _recorded(name: str, tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    reuse = os.environ.get("TRITON_OBS_RECORDINGS")
    if reuse and (Path(reuse) / name / "recording.json").exists():
        return RecordedRun.load(Path(reuse) / name)
    return record(name, tmp_path_factory.mktemp(name), healthy=name == "healthy")


@pytest.fixture(scope="session")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    return _recorded("faulty", tmp_path_factory)


@pytest.fixture(scope="session")
def healthy_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    return _recorded("healthy", tmp_path_factory)


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
