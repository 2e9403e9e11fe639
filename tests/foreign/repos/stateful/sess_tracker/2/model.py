"""sess_tracker version 2: the same code as version 1 (``../1/model.py``), which reads
``model_version`` to smooth its trail and to honour ``STATE_V2_COLD_START_S``."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "sess_tracker_v1", Path(__file__).resolve().parent.parent / "1" / "model.py"
)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

TritonPythonModel = _module.TritonPythonModel
