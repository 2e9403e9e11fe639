"""pz_clean: clip each query's term weights to [-3, 3] and L2-normalise them (3 ms a batch)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.003)
        responses = []
        for request in requests:
            q = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy().astype(np.float32)
            q = np.clip(q, -3.0, 3.0)
            norm = np.linalg.norm(q, axis=-1, keepdims=True) + 1e-6
            clean = pb_utils.Tensor("CLEAN", (q / norm).astype(np.float32))
            responses.append(pb_utils.InferenceResponse([clean]))
        return responses
