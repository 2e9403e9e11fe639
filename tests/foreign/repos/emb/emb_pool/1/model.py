"""emb_pool: mean pooling and L2 normalisation (plain python, 1 instance, about 1 ms)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            states = pb_utils.get_input_tensor_by_name(request, "STATES").as_numpy()
            pooled = states.reshape(states.shape[0], 32, 8).mean(axis=2)
            norm = np.linalg.norm(pooled, axis=1, keepdims=True) + 1e-6
            out = (pooled / norm).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("POOLED", out)]))
        return responses
