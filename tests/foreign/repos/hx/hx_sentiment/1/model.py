"""hx_sentiment: how upset a ticket's writer is (10 ms a batch plus a per-request cost).

Server environment: ``HX_MOOD_MS_PER_ITEM`` (default 1): the ms each request of a batch
adds (a model that does not gain from batching); ``HX_MOOD_COLD_S``: the instance's first
execute sleeps that long before its work (weights loaded on first use).
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.per_item_s = float(os.environ.get("HX_MOOD_MS_PER_ITEM") or 1) / 1000.0
        self.cold_s = float(os.environ.get("HX_MOOD_COLD_S") or 0)

    def execute(self, requests):
        if self.cold_s:
            time.sleep(self.cold_s)
            self.cold_s = 0.0
        time.sleep(0.010 + self.per_item_s * len(requests))
        responses = []
        for request in requests:
            vec = pb_utils.get_input_tensor_by_name(request, "VEC").as_numpy()
            mood = np.tanh(vec.astype(np.float32).sum(axis=-1, keepdims=True)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("MOOD", mood)]))
        return responses
