"""rl_score: a fraud scorer behind a licensed engine (python, ~50 ms a call).

The score is a logistic of the view's weighted sum; the sleep stands for the engine's time.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

_WEIGHTS = np.linspace(-1.0, 1.0, 16, dtype=np.float32)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            view = pb_utils.get_input_tensor_by_name(request, "VIEW").as_numpy().reshape(16)
            time.sleep(0.05)
            score = 1.0 / (1.0 + np.exp(-float(view @ _WEIGHTS)))
            out = np.array([[score]], dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORE", out)]))
        return responses
