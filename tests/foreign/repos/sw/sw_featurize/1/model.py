"""sw_featurize: a batch of bid requests to feature vectors (250 ms a batch)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

_PROJECTION = np.random.default_rng(41).standard_normal((20, 10)).astype(np.float32) / 4.0


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.250)
        responses = []
        for request in requests:
            bid = pb_utils.get_input_tensor_by_name(request, "BID_REQUEST").as_numpy()
            feats = np.tanh(bid.astype(np.float32) @ _PROJECTION).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("FEATS", feats)]))
        return responses
