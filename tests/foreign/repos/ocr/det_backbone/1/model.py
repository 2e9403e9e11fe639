"""det_backbone: a batched 'backbone' (dynamic batching, 2 instances), ~15 ms per batch.

Faults, read from each request's parameters (text_det forwards them):

* ``ocr_fault=backbone_hang``: the batch holding the request never returns (``hang_s``,
  default 300, capped at 600): a stuck forward pass. Every request batched with it is stuck
  too.
* ``ocr_fault=cycle``: the backbone calls ``text_det`` back through BLS (an A -> B -> A
  cycle: a 'refinement' pass) after ``cycle_delay_s`` (default 0.5). When every text_det
  instance is held by a request waiting on this backbone, the call can never start.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _num(params, name, default, high):
    try:
        return min(max(float(params.get(name, default)), 0.0), high)
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    def initialize(self, args):
        self.weights = np.linspace(-1.0, 1.0, 1536, dtype=np.float32)

    def execute(self, requests):
        params = [_params(r) for r in requests]
        hang = [p for p in params if p.get("ocr_fault") == "backbone_hang"]
        if hang:
            time.sleep(_num(hang[0], "hang_s", 300.0, 600.0))
        responses = []
        for request, p in zip(requests, params, strict=True):
            pixels = pb_utils.get_input_tensor_by_name(request, "PIXELS").as_numpy()
            if p.get("ocr_fault") == "cycle":
                time.sleep(_num(p, "cycle_delay_s", 0.5, 5.0))
                refine = pb_utils.InferenceRequest(
                    model_name="text_det",
                    requested_output_names=["BOXES"],
                    inputs=[pb_utils.Tensor("NORM", pixels.reshape(32, 48).astype(np.float32))],
                )
                refine.exec()  # blocks until a text_det instance is free: maybe never
            heat = np.tanh(pixels * self.weights)
            for _ in range(20):
                heat = np.tanh(heat * 1.01 + 0.01)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("HEATMAP", heat.astype(np.float32))])
            )
        time.sleep(0.01)
        return responses
