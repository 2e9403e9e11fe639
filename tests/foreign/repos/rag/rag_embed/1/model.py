"""rag_embed: the query embedder (plain python, dynamic batching, 3 instances).

Each request of a batch gets EMBEDDING [32] (a projection of its TOKEN ids). Faults:

* request parameter ``embed_hang_s=<s>`` (capped at 600): the batch holding it sleeps that
  long (a stuck forward pass); every request batched with it waits too.
* environment ``EMBED_COLD_START_S=<s>`` (capped at 30): the first execute of each instance
  after its load sleeps that long (weights loaded lazily).
"""

import contextlib
import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(11)
        self.proj = rng.standard_normal((16, 32)).astype(np.float32) / 3e4
        try:
            cold = float(os.environ.get("EMBED_COLD_START_S", "0"))
        except ValueError:
            cold = 0.0
        self.cold_s = min(max(cold, 0.0), 30.0)

    def execute(self, requests):
        if self.cold_s:
            time.sleep(self.cold_s)
            self.cold_s = 0.0
        hang = 0.0
        for request in requests:
            params = _params(request)
            with contextlib.suppress(TypeError, ValueError):
                hang = max(hang, min(max(float(params.get("embed_hang_s", 0)), 0.0), 600.0))
        if hang:
            time.sleep(hang)
        time.sleep(0.003)
        out = []
        for request in requests:
            ids = pb_utils.get_input_tensor_by_name(request, "QUERY_IDS").as_numpy()
            emb = np.tanh(ids.reshape(-1, 16).astype(np.float32) @ self.proj)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("EMBEDDING", emb)]))
        return out
