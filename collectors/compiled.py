"""The collectors' optional C extensions, found in one place.

Why: each parser with a compiled path (the log's hot path, the trace file scan, the OTLP span
maker) finds its extension the same way and honours the same switch: where the extension was
not built (setup.py's extensions are optional) or ``TRITON_OBS_PURE_PARSER=1`` is set, the
parser runs its Python path, the reference its tests compare the compiled one against.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["extension"]


def extension(name: str) -> ModuleType | None:
    """The extension module ``collectors.<name>`` (``logs._hotpath``), or None: not built, or
    ``TRITON_OBS_PURE_PARSER=1``."""
    if os.environ.get("TRITON_OBS_PURE_PARSER") == "1":
        return None
    try:
        return importlib.import_module(f"collectors.{name}")
    except ImportError:
        return None
