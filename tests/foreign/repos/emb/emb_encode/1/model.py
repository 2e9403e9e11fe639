"""emb_encode: the encoder (plain python, dynamic batching, 2 instances).

TOKENS [b, 32] -> STATES [b, 256]: a fixed random embedding table (30001 x 8) looked up per
token, scaled by position. A batch costs ``batch_ms`` plus ``request_ms`` per request (5 and
35 ms when absent: a CPU encoder gains little from batching).

``emb_encode_slow_queue_timeouts`` deploys ``request_ms=500`` through the repository API (a
heavier checkpoint): requests wait in the queue past the 200 ms timeout of the config's
``default_queue_policy`` and Triton rejects them.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _param(config, name, default):
    return float(config.get("parameters", {}).get(name, {}).get("string_value", default))


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.batch_s = _param(config, "batch_ms", 5) / 1000.0
        self.request_s = _param(config, "request_ms", 35) / 1000.0
        self.table = np.random.default_rng(7).standard_normal((30001, 8)).astype(np.float32)
        self.scale = (1.0 / np.arange(1, 33, dtype=np.float32)).reshape(1, 32, 1)

    def execute(self, requests):
        time.sleep(self.batch_s + self.request_s * len(requests))
        responses = []
        for request in requests:
            tokens = pb_utils.get_input_tensor_by_name(request, "TOKENS").as_numpy()
            states = self.table[tokens] * self.scale  # [b, 32, 8]
            out = states.reshape(tokens.shape[0], 256).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("STATES", out)]))
        return responses
