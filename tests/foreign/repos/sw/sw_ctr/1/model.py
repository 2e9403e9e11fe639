"""sw_ctr: the click-through rate of a batch of feature vectors (8 ms a batch plus 1 ms a
request).

Server environment ``SW_CTR_COLD_S``: the instance's first execute sleeps that long before
its work (the model's weights fetched on first use).
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_WEIGHTS = np.random.default_rng(37).standard_normal((10, 1)).astype(np.float32)


class TritonPythonModel:
    def initialize(self, args):
        self.cold_s = float(os.environ.get("SW_CTR_COLD_S") or 0)

    def execute(self, requests):
        if self.cold_s:
            time.sleep(self.cold_s)
            self.cold_s = 0.0
        time.sleep(0.008 + 0.001 * len(requests))
        responses = []
        for request in requests:
            feats = pb_utils.get_input_tensor_by_name(request, "FEATS").as_numpy()
            ctr = 1.0 / (1.0 + np.exp(-(feats.astype(np.float32) @ _WEIGHTS)))
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("CTR", ctr.astype(np.float32))])
            )
        return responses
