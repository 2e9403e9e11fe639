"""Find the real ``tritonserver`` shipped in the nvidia-pytriton wheel.

The wheel carries the server, the python backend and one stub per Python version. The stub
must match the interpreter that runs the models (it embeds libpython), so we pick it by the
running interpreter's version and check its shared libraries before starting anything: a
missing libpython otherwise shows up as a model that silently never loads.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from observability.lab.errors import LabError

__all__ = ["TritonInstall", "find_install"]

_STUB = "triton_python_backend_stub"


@dataclass(frozen=True)
class TritonInstall:
    root: Path
    """``site-packages/pytriton/tritonserver``."""
    server: Path
    python_backend: Path
    """The wheel's ``backends/python`` folder (libtriton_python.so and the utils module)."""
    stub: Path
    """The stub built for the running interpreter's Python version."""
    libs: Path
    """``nvidia_pytriton.libs``: the bundled shared libraries the server and stub need."""
    pytriton_version: str
    python_version: str


def _pytriton_root() -> Path:
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        raise LabError(
            "nvidia-pytriton is not installed, so there is no tritonserver to run. "
            "Install the lab extra: pip install 'triton-observability[lab]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _missing_libraries(binary: Path, libs: Path) -> list[str]:
    """Libraries the dynamic loader cannot resolve for ``binary`` (empty when ldd is absent)."""
    try:
        out = subprocess.run(
            ["ldd", str(binary)],
            capture_output=True,
            text=True,
            timeout=20,
            env={"LD_LIBRARY_PATH": str(libs)},
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split("=>")[0].strip() for line in out.splitlines() if "not found" in line]


def find_install(python_version: tuple[int, int] | None = None) -> TritonInstall:
    """Locate the server and the stub for ``python_version`` (default: this interpreter)."""
    major, minor = python_version or sys.version_info[:2]
    pytriton = _pytriton_root()
    root = pytriton / "tritonserver"
    server = root / "bin" / "tritonserver"
    python_backend = root / "backends" / "python"
    stub = root / "python_backend_stubs" / f"{major}.{minor}" / _STUB
    libs = pytriton.parent / "nvidia_pytriton.libs"
    if not server.exists():
        raise LabError(f"nvidia-pytriton is installed but has no server at {server}; reinstall it")
    if not stub.exists():
        have = sorted(p.name for p in (root / "python_backend_stubs").glob("*"))
        raise LabError(
            f"nvidia-pytriton ships no python backend stub for Python {major}.{minor} "
            f"(it has {', '.join(have) or 'none'}); run the lab under one of those versions"
        )
    missing = _missing_libraries(stub, libs)
    if missing:
        libpython = [m for m in missing if m.startswith("libpython")]
        if libpython:
            raise LabError(
                f"the python backend stub needs {libpython[0]}, which is not installed. "
                f"On Debian/Ubuntu: apt-get install libpython{major}.{minor}"
            )
        raise LabError(f"the python backend stub cannot load: missing {', '.join(missing)}")
    missing = _missing_libraries(server, libs)
    if missing:
        raise LabError(f"tritonserver cannot load: missing {', '.join(missing)}")
    return TritonInstall(
        root=root,
        server=server,
        python_backend=python_backend,
        stub=stub,
        libs=libs,
        pytriton_version=importlib.metadata.version("nvidia-pytriton"),
        python_version=f"{major}.{minor}",
    )
