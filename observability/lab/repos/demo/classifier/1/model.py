"""classifier: a single-instance scoring head with two faults.

* ``slow`` (request parameter ``fault=slow``, ``slow_s`` default 0.5): every request sleeps
  ``slow_s``. With ONE instance, concurrent callers queue behind it, which is what
  ``nv_inference_pending_request_count{model="classifier"}`` shows.
* cold start (model-config parameter ``cold_start_s``, default "0"): when > 0, initialisation is
  deferred to the first execute after (re)load, which then takes that long (lazy warm-up).
  With 0 the warm-up runs eagerly in ``initialize`` and every request is fast.
"""

from __future__ import annotations

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request) -> dict:
    """The request's parameters (JSON object) as a dict; {} when absent or malformed."""
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _knob(params: dict, name: str, default: float) -> float:
    """A numeric knob: int, float or numeric string (BLS children get floats as strings)."""
    try:
        return float(params.get(name, default))
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    """FEATURES FP32 [-1] -> SCORES FP32 [-1] (softmax of a fixed projection)."""

    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        raw = config.get("parameters", {}).get("cold_start_s", {}).get("string_value", "0")
        try:
            self._cold_start_s = max(0.0, float(raw))
        except ValueError:
            self._cold_start_s = 0.0
        self._weights: np.ndarray | None = None
        if self._cold_start_s == 0.0:
            self._warm_up(0.0)  # healthy: pay the initialisation cost before serving

    def _warm_up(self, seconds: float) -> None:
        """Simulated lazy initialisation (weights load / JIT / cache fill)."""
        if seconds > 0:
            time.sleep(seconds)
        self._weights = np.linspace(-1.0, 1.0, 10, dtype=np.float32)

    def execute(self, requests: list) -> list:
        if self._weights is None:
            self._warm_up(self._cold_start_s)  # cold start: the first request pays
        responses = []
        for request in requests:
            params = _params(request)
            if params.get("fault") == "slow":
                time.sleep(_knob(params, "slow_s", 0.5))
            features = pb_utils.get_input_tensor_by_name(request, "FEATURES").as_numpy()
            logits = self._weights * np.float32(features.max() if features.size else 0.0)
            scores = np.exp(logits - logits.max())
            scores /= scores.sum()
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("SCORES", scores.astype(np.float32))]
                )
            )
        return responses
