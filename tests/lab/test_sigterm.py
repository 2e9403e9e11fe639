"""A pytest session killed with SIGTERM (``timeout``, a cancelled CI job) leaves no Triton behind.

Found by hand during the soak: SIGTERM ended pytest without teardown, and the lab's
tritonserver and python stubs kept running with their ports held until killed one by one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from observability.lab.processes import processes_mentioning
from tests.conftest import ECHO_CONFIG, ECHO_MODEL, write_model

pytestmark = pytest.mark.lab

HELD = """
import os
import time
from pathlib import Path


def test_hold(lab_factory):
    lab = lab_factory(Path(os.environ["ECHO_REPO"]), name="held")
    Path(os.environ["MARK"]).write_text(str(lab.backend_dir))
    time.sleep(120)
"""


def test_sigterm_tears_the_lab_down(tmp_path: Path) -> None:
    repo = write_model(tmp_path / "repo", "echo", ECHO_CONFIG, ECHO_MODEL)
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "test_held.py").write_text(HELD)
    mark = tmp_path / "started"
    env = {**os.environ, "ECHO_REPO": str(repo), "MARK": str(mark)}
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts="]
    proc = subprocess.Popen(
        [sys.executable, *args, "--basetemp", str(tmp_path / "base"), str(inner)],
        cwd=inner,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert mark.exists(), proc.communicate(timeout=30)[0].decode(errors="replace")[-3000:]
        backend_dir = mark.read_text()
        assert processes_mentioning(backend_dir), "the lab should be running before the signal"
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = processes_mentioning(backend_dir)
    for pid in left:  # do not leave them to the next test either way
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"left running after SIGTERM: {left}\n{output[-2000:]}"
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output[-2000:]
