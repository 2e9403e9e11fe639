"""A plain model of the zoo: the template every one of them serves, in
``tests/foreign/pylib/zoo_model.py`` (its latency is its config's ``latency_ms``)."""

import sys
from pathlib import Path

_PYLIB = Path(__file__).resolve().parents[4] / "pylib"
if str(_PYLIB) not in sys.path:
    sys.path.insert(0, str(_PYLIB))

from zoo_model import TritonPythonModel  # noqa: E402

__all__ = ["TritonPythonModel"]
