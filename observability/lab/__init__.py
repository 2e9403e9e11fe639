"""A real Triton on this machine: start, wait ready, stop with nothing left behind."""

from observability.lab.errors import LabError, PortInUseError
from observability.lab.install import TritonInstall, find_install
from observability.lab.repositories import (
    IDS_MODES,
    REPOSITORIES,
    demo_env,
    demo_repository,
    repository,
)
from observability.lab.server import LabConfig, TritonLab

__all__ = [
    "IDS_MODES",
    "REPOSITORIES",
    "LabConfig",
    "LabError",
    "PortInUseError",
    "TritonInstall",
    "TritonLab",
    "demo_env",
    "demo_repository",
    "find_install",
    "repository",
]
