"""med_classifier version 1: the previous finding classifier (plain python, 2 instances,
batched up to 8, no dynamic batcher), still served for the viewer that pins it.

NORMED [n, 64, 64] FP16 -> LOGITS [n, 5] FP32: 8x8 average pooling and a fixed random
projection (seed 1). About 4 ms per request.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.weights = np.random.default_rng(1).standard_normal((64, 5)).astype(np.float32)

    def execute(self, requests):
        responses = []
        for request in requests:
            time.sleep(0.004)
            normed = pb_utils.get_input_tensor_by_name(request, "NORMED").as_numpy()
            pooled = normed.astype(np.float32).reshape(-1, 8, 8, 8, 8).mean(axis=(2, 4))
            logits = (pooled.reshape(-1, 64) @ self.weights).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LOGITS", logits)]))
        return responses
