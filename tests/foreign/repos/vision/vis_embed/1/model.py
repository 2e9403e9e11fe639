"""vis_embed: an 'embedding tower' (2 instances, dynamic batching), ~20 ms per batch.

Fault, read from each request's parameters (the ensemble passes the client's request
parameters to every step):

* ``vis_fault=embed_hang``: the batch holding the request never returns (``hang_s``,
  default 300, capped at 600): a stuck forward pass inside a plain ensemble step. Every
  request batched with it is stuck too; the other instance keeps serving.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _num(params, name, default, high):
    try:
        return min(max(float(params.get(name, default)), 0.0), high)
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(11)
        self.proj = rng.standard_normal((3 * 12 * 20, 64)).astype(np.float32) / 30.0

    def execute(self, requests):
        params = [_params(r) for r in requests]
        hang = [p for p in params if p.get("vis_fault") == "embed_hang"]
        if hang:
            time.sleep(_num(hang[0], "hang_s", 300.0, 600.0))
        responses = []
        for request in requests:
            img = pb_utils.get_input_tensor_by_name(request, "IMG").as_numpy()
            emb = np.tanh(img.reshape(img.shape[0], -1) @ self.proj)
            norm = np.linalg.norm(emb, axis=1, keepdims=True) + 1e-6
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("EMBEDDING", (emb / norm).astype(np.float32))]
                )
            )
        time.sleep(0.02)
        return responses
