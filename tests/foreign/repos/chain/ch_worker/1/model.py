"""ch_worker: the leaf scorer of the chain (plain python, dynamic batching, 2 instances).

SCORE = tanh(a * b) per PAIR row, a few ms per batch. Fault, from a request parameter that
ch_planner forwards: ``worker_hang_s`` makes the whole batch sleep that long (a stuck
forward pass).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return float(params.get("worker_hang_s", 0)) if isinstance(params, dict) else 0.0
    except ValueError:
        return 0.0


class TritonPythonModel:
    def execute(self, requests):
        hang = max(_hang_s(r) for r in requests)
        if hang:
            time.sleep(hang)
        time.sleep(0.003)
        out = []
        for request in requests:
            pair = pb_utils.get_input_tensor_by_name(request, "PAIR").as_numpy()
            score = np.tanh(pair[:, :1] * pair[:, 1:]).astype(np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORE", score)]))
        return out
