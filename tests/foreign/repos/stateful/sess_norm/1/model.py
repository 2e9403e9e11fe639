"""sess_norm: a non-batched sensor normaliser (max_batch_size 0), ~2 ms per request.

It exists so that the family has a model whose tensors carry no batch dimension: its
response output shape is ``[6]``, not ``[1, 6]``.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.scale = np.array([1.0, 2.0, 0.5, 4.0, 1.5, 3.0], dtype=np.float32)

    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "RAW").as_numpy()
            reading = np.clip(raw / self.scale, -5.0, 5.0).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("READING", reading)]))
        time.sleep(0.002)
        return responses
