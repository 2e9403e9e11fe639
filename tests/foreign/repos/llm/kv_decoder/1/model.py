"""kv_decoder: one decode step; PRESENT = PAST + this step's key/value ([2, seq, 8]).

Faults, from the server's environment:

* ``KV_LEAK=1``: the custom decoder keeps its own cache on the instance and appends each
  step's key/value to it instead of to the request's PAST, so PRESENT never resets between
  requests: it grows by one row (16 elements) per step for the life of the instance
  (capped at 8192 rows).
* ``KV_COLD_START_S=<s>``: the first execute after load builds the 'weights' lazily and takes
  that long (capped at 30 s).
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_CAP_ROWS = 8192


class TritonPythonModel:
    def initialize(self, args):
        self.leak = os.environ.get("KV_LEAK") == "1"
        try:
            self.cold_s = min(max(float(os.environ.get("KV_COLD_START_S", "0")), 0.0), 30.0)
        except ValueError:
            self.cold_s = 0.0
        self.weights = None
        self.cache = np.zeros((2, 0, 8), dtype=np.float32)

    def _load_weights(self):
        if self.weights is None:
            time.sleep(self.cold_s)
            self.weights = np.linspace(0.1, 1.0, 8, dtype=np.float32)

    def execute(self, requests):
        self._load_weights()
        responses = []
        for request in requests:
            token = int(pb_utils.get_input_tensor_by_name(request, "TOKEN").as_numpy()[0])
            past_t = pb_utils.get_input_tensor_by_name(request, "PAST")
            past = past_t.as_numpy() if past_t is not None else np.zeros((2, 0, 8), np.float32)
            kv = np.stack([self.weights * (token % 7), self.weights * (token % 11)])[:, None, :]
            if self.leak:
                self.cache = np.concatenate([self.cache, kv.astype(np.float32)], axis=1)
                self.cache = self.cache[:, -_CAP_ROWS:, :]
                present = self.cache
            else:
                present = np.concatenate([past, kv.astype(np.float32)], axis=1)
            next_token = np.array([(token * 31 + present.shape[1]) % 32000], dtype=np.int64)
            time.sleep(0.003)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("NEXT_TOKEN", next_token),
                        pb_utils.Tensor("PRESENT", np.ascontiguousarray(present)),
                    ]
                )
            )
        return responses
