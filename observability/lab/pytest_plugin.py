"""Pytest fixtures that start a real Triton once per session and stop it with nothing left.

Registered as a pytest plugin by the package, so a user's own test suite can ask for
``lab_factory`` to run their repository the same way ours does.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from observability.lab.repositories import demo_repository
from observability.lab.server import LabConfig, TritonLab

__all__ = ["lab_factory", "triton_lab"]

LabFactory = Callable[..., TritonLab]
_STARTED: list[TritonLab] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("triton-obs lab")
    group.addoption(
        "--lab-runs",
        default=None,
        help="keep the lab's run folders (log, traces, run.json) under this folder",
    )
    group.addoption(
        "--soak-minutes",
        type=float,
        default=None,
        help="run the soak test (-m soak) for this many minutes: its fault cycle repeated",
    )


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (``timeout``, a CI runner cancelling a job) stops a session like Ctrl-C does.

    By default SIGTERM ends the interpreter where it stands: no fixture teardown, no
    ``finally``, so each Triton the session started (and its python stubs) is left running
    with its ports held. As a KeyboardInterrupt, pytest tears everything down first. A
    handler someone else installed is left alone."""
    if threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


LAB_FIXTURES = frozenset({"lab_factory", "triton_lab"})
"""Fixtures that start a real Triton: a test whose fixture closure holds one is a lab test."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that starts a Triton through our fixtures ``lab``, directly or through
    fixtures of its own, so ``-m "not lab"`` never starts one whatever a test file forgot.
    Tests that start Triton another way (a ``triton-obs demo`` subprocess) mark themselves."""
    for item in items:
        if LAB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="session")
def lab_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabFactory]:
    """Start a lab for any repository: ``lab_factory(repo, name="x", **LabConfig fields)``."""
    keep = request.config.getoption("--lab-runs")
    labs: list[TritonLab] = []

    def start(model_repository: Path, name: str = "lab", **fields: Any) -> TritonLab:
        base = Path(keep) if keep else tmp_path_factory.getbasetemp()
        run_dir = base / f"{name}-{len(_STARTED)}"
        lab = TritonLab(LabConfig(model_repository=model_repository, run_dir=run_dir, **fields))
        labs.append(lab)
        _STARTED.append(lab)
        return lab.start()

    yield start
    for lab in labs:
        lab.stop()


@pytest.fixture(scope="session")
def triton_lab(lab_factory: LabFactory) -> TritonLab:
    """The demo pipeline on a real Triton, explicit model control, for the whole session."""
    return lab_factory(
        demo_repository(), name="demo", model_control="explicit", trace_log_frequency=50
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if any lab process outlived the session.

    Last, after pytest's own sessionfinish: an interrupted session (Ctrl-C, SIGTERM) tears
    its fixtures down there, and only what outlives that is left behind."""
    leftovers = {pid: cmd for lab in _STARTED for pid, cmd in lab.lab_processes().items()}
    if leftovers:
        for lab in _STARTED:
            lab.stop()
        lines = "\n".join(f"  {pid}: {cmd[:160]}" for pid, cmd in leftovers.items())
        message = f"triton-obs lab: processes left behind after the session:\n{lines}"
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:  # -p no:terminal
            sys.stderr.write(message + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
