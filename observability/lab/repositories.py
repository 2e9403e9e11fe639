"""The model repositories shipped with the package: the demo pipeline and its twins."""

from __future__ import annotations

from pathlib import Path

from observability.lab.errors import LabError

__all__ = ["IDS_MODES", "REPOSITORIES", "demo_env", "demo_repository", "repository"]

_ROOT = Path(__file__).resolve().parent / "repos"

REPOSITORIES = {
    "demo": "python-backend BLS pipeline with per-request fault knobs",
    "ensemble_fanout": "one ensemble tensor wired to two steps (works on 2.51)",
    "ensemble_fanout_broken": "the miswired ensemble Triton refuses with 'is not written'",
    "ensemble_fanout_fixed": "the fix: a python router copies the tensor for each consumer",
}


def repository(name: str) -> Path:
    path = _ROOT / name
    if name not in REPOSITORIES or not path.is_dir():
        raise LabError(f"no shipped model repository {name!r}; known: {', '.join(REPOSITORIES)}")
    return path


def demo_repository() -> Path:
    return repository("demo")


IDS_MODES = ("all", "client", "none")
"""Which requests of the demo carry ids: ``all`` (clients, and BLS children derive
``<parent>.<child>`` ids), ``client`` (clients only: children go without, as
``pb_utils.InferenceRequest`` sends them by default) or ``none`` (as tritonclient and
perf_analyzer send by default)."""


def demo_env(ids: str = "all") -> dict[str, str]:
    """The environment the demo's models read (their stubs inherit Triton's)."""
    if ids not in IDS_MODES:
        raise LabError(f"ids must be one of {', '.join(IDS_MODES)}, not {ids!r}")
    return {"TRITON_OBS_DEMO_CHILD_IDS": "1" if ids == "all" else "0"}
