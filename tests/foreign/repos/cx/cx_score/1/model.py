"""cx_score: scores a batch of quote features (python, 1 instance, dynamic batching).

A batch costs the largest FEATS[0] of its requests in milliseconds (clamped to 5-2000 ms),
the work its biggest quote needs. A request whose parameters carry ``cx_hang_s`` makes the
whole batch sleep that long (at most 600 s): the scorer stuck on one batch. Logs nothing.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(max(float(params.get("cx_hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        self.weights = np.linspace(0.1, 1.0, 16, dtype=np.float32)

    def execute(self, requests):
        feats = [pb_utils.get_input_tensor_by_name(r, "FEATS").as_numpy() for r in requests]
        cost_ms = max(float(f[:, 0].max()) for f in feats)
        hang = max(_hang_s(r) for r in requests)
        time.sleep(hang if hang else min(max(cost_ms, 5.0), 2000.0) / 1000.0)
        responses = []
        for f in feats:
            score = (f[:, 1:] @ self.weights[1:]).reshape(-1, 1).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORE", score)]))
        return responses
