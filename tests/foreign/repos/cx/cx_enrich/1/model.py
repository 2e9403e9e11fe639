"""cx_enrich: the margin of a price (2 to 4 ms of work per request). Logs nothing."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.rng = np.random.default_rng(7)

    def execute(self, requests):
        responses = []
        for request in requests:
            price = pb_utils.get_input_tensor_by_name(request, "PRICE").as_numpy()
            time.sleep(float(self.rng.uniform(0.002, 0.004)))
            margin = (price * 0.12 + 0.5).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("MARGIN", margin)]))
        return responses
