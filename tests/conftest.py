"""Shared test helpers. The real-Triton fixtures come from observability.lab.pytest_plugin."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.detectors.recording import RecordedRun, record

ECHO_CONFIG = """
name: "echo"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

ECHO_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            data = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
        return out
"""


def ctrl_c_as_from_a_terminal() -> None:
    """``preexec_fn`` for a child a test sends SIGINT: restore SIGINT's default action. A
    shell's background job ignores SIGINT and every child inherits that (Python then keeps it
    ignored: no KeyboardInterrupt), so a suite started with ``nohup ... &`` failed the Ctrl-C
    tests while the command under test was fine."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_model(repo: Path, name: str, config: str, model_py: str) -> Path:
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    (repo / name / "config.pbtxt").write_text(config.replace('name: "echo"', f'name: "{name}"'))
    (repo / name / "1" / "model.py").write_text(model_py)
    return repo


@pytest.fixture(scope="session")
def echo_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-model python repository: the smallest thing a real Triton can serve."""
    return write_model(tmp_path_factory.mktemp("echo-repo"), "echo", ECHO_CONFIG, ECHO_MODEL)


_SHARED_FIXTURE_GROUPS = {
    "faulty_run": "recordings",
    "healthy_run": "recordings",
    "triton_lab": "demo-lab",
    "security_run": "security",
}
"""Session fixtures that start a real Triton (or record a run): their tests share a worker."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), keep each expensive session fixture on one
    worker, and each module's tests together (module fixtures start labs too).

    ``tryfirst``: xdist's worker reads the ``xdist_group`` marks in its own hook of the same
    name, registered after this conftest and so called before it; marks added later were
    ignored, every worker recorded its own copy of each run, and the two recordings' labs
    competed for the CPU."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        group = next((g for f, g in _SHARED_FIXTURE_GROUPS.items() if f in names), None)
        item.add_marker(pytest.mark.xdist_group(group or item.nodeid.split("::", 1)[0]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Refuse to run when ``--dist loadgroup`` did not group (xdist marks a grouped test by
    suffixing its node id with ``@group``): two workers would each record the same run and
    start the same labs at once, and the timing-sensitive recordings would fail for a reason
    no test names."""
    config = getattr(node, "config", None)
    if config is None or config.getvalue("dist") != "loadgroup":
        return
    ungrouped = [i for i in ids if "@" not in i]
    if ungrouped:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {len(ungrouped)} tests (e.g. {ungrouped[0]}): "
            "this pytest-xdist does not work with this pytest (see pyproject.toml's pin)"
        )


def _recorded(name: str, tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    reuse = os.environ.get("TRITON_OBS_RECORDINGS")
    if reuse and (Path(reuse) / name / "recording.json").exists():
        return RecordedRun.load(Path(reuse) / name)
    return record(name, tmp_path_factory.mktemp(name), healthy=name == "healthy")


@pytest.fixture(scope="session")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """The demo's fault schedule on a real Triton, recorded once per session (detectors and
    the triage app read it)."""
    return _recorded("faulty", tmp_path_factory)


@pytest.fixture(scope="session")
def healthy_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """The same load with no fault: what every detector must stay silent on."""
    return _recorded("healthy", tmp_path_factory)
