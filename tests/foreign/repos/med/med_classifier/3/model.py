"""med_classifier version 3: the current finding classifier (plain python, 2 instances,
batched up to 8, no dynamic batcher), pinned by med_gateway with ``model_version=3``.

NORMED [n, 64, 64] FP16 -> LOGITS [n, 5] FP32: 8x8 average pooling, a fixed random
projection (seed 3) and an age-independent bias. About 5 ms per request.

Request parameter ``hang_s=<s>`` (capped at 600, passed by med_gateway): the request's
execute sleeps that long (a stuck forward pass).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(max(float(params.get("hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        self.weights = np.random.default_rng(3).standard_normal((64, 5)).astype(np.float32)
        self.bias = np.array([0.5, 0.0, 0.0, -0.2, -0.3], dtype=np.float32)

    def execute(self, requests):
        responses = []
        for request in requests:
            hang = _hang_s(request)
            if hang:
                time.sleep(hang)
            time.sleep(0.005)
            normed = pb_utils.get_input_tensor_by_name(request, "NORMED").as_numpy()
            pooled = normed.astype(np.float32).reshape(-1, 8, 8, 8, 8).mean(axis=(2, 4))
            logits = (pooled.reshape(-1, 64) @ self.weights + self.bias).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LOGITS", logits)]))
        return responses
