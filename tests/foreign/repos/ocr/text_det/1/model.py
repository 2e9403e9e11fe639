"""text_det: BLS detector head (async execute, 2 instances) over det_backbone.

Each request calls det_backbone with ``async_exec`` (no request id, as
``pb_utils.InferenceRequest`` builds it) and turns the heatmap into boxes. The request
parameters ``ocr_fault``, ``hang_s`` and ``cycle_delay_s`` are forwarded to the backbone.
``ocr_fault=callback``: the heatmap is delivered by a done-callback in the shared ``ocrkit``
package that raises, so the awaited future is never resolved (bounded by ``callback_wait_s``,
default 300).
"""

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils

_PYLIB = Path(__file__).resolve().parents[4] / "pylib"
if str(_PYLIB) not in sys.path:
    sys.path.insert(0, str(_PYLIB))

from ocrkit.bls import gather_with_timeout, heatmap_future  # noqa: E402

_FORWARD = ("ocr_fault", "hang_s", "cycle_delay_s")


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    async def execute(self, requests):
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, request):
        params = _params(request)
        norm = pb_utils.get_input_tensor_by_name(request, "NORM").as_numpy()
        child = pb_utils.InferenceRequest(
            model_name="det_backbone",
            requested_output_names=["HEATMAP"],
            inputs=[pb_utils.Tensor("PIXELS", norm.reshape(1, -1).astype(np.float32))],
            parameters={k: str(params[k]) for k in _FORWARD if k in params},
        )
        if params.get("ocr_fault") == "callback":
            loop = asyncio.get_running_loop()
            task = asyncio.ensure_future(child.async_exec())
            future = heatmap_future(loop, task, strict_shape=True)
            try:
                wait_s = float(params.get("callback_wait_s", 300))
            except (TypeError, ValueError):
                wait_s = 300.0
            try:
                heat = await gather_with_timeout(future, min(max(wait_s, 0.0), 600.0))
            except asyncio.TimeoutError:
                return pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("text_det: backbone heatmap never delivered")
                )
        else:
            response = await child.async_exec()
            if response.has_error():
                return pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(f"text_det: {response.error().message()}")
                )
            heat = pb_utils.get_output_tensor_by_name(response, "HEATMAP").as_numpy()
            heat = heat.reshape(32, 48)
        rows = np.argsort(heat.max(axis=1))[-4:]
        boxes = np.stack([rows, rows + 2, np.zeros(4), np.full(4, 48.0)], axis=1)
        return pb_utils.InferenceResponse([pb_utils.Tensor("BOXES", boxes.astype(np.float32))])
