"""bg_embed: the chunk embedder (plain python, dynamic batching up to 8, 2 instances).

CHUNK [b, 8] INT32 -> EMB [b, 16] FP32 (a fixed random projection, L2-normalised), about 4 ms
a batch. Fault, request parameter ``hang_s`` (set by bg_stream on one child call): the batch
holding that request sleeps that long (at most 600 s) before answering: a stuck index shard.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(float(params.get("hang_s", 0)), 600.0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(7)
        self.proj = rng.standard_normal((8, 16)).astype(np.float32)

    def execute(self, requests):
        hang = max(_hang_s(r) for r in requests)
        if hang > 0:
            time.sleep(hang)
        time.sleep(0.004)
        responses = []
        for request in requests:
            chunk = pb_utils.get_input_tensor_by_name(request, "CHUNK").as_numpy()
            emb = (chunk.astype(np.float32) % 97.0) @ self.proj
            emb /= np.linalg.norm(emb, axis=-1, keepdims=True) + 1e-6
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("EMB", emb)]))
        return responses
