"""pz_rank: score the cleaned query against 8 fixed facet vectors (5 ms a batch)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

_FACETS = np.random.default_rng(7).standard_normal((16, 8)).astype(np.float32)


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.005)
        responses = []
        for request in requests:
            clean = pb_utils.get_input_tensor_by_name(request, "CLEAN").as_numpy()
            scores = (clean.astype(np.float32) @ _FACETS).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORES", scores)]))
        return responses
