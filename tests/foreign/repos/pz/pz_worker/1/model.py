"""pz_worker: score a query against one catalogue shard (20 ms a batch, sleeping: an index
lookup).

Fault, from a request parameter: ``pz_fault=die`` (the shard's index file is truncated and
the native lookup library segfaults): the stub process is killed by SIGKILL from inside
execute, with the whole batch it holds.
"""

import json
import os
import signal
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_INDEX = np.random.default_rng(11).standard_normal((16, 8)).astype(np.float32)


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def execute(self, requests):
        if any(_params(r).get("pz_fault") == "die" for r in requests):
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.020)
        responses = []
        for request in requests:
            shard = pb_utils.get_input_tensor_by_name(request, "SHARD").as_numpy()
            scores = np.tanh(shard.astype(np.float32) @ _INDEX).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORES", scores)]))
        return responses
