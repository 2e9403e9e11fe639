"""gs_spam: a link-reputation lookup (5 ms a call; ``gs_hang_s``: the lookup never answers)."""

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


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            hang_s = float(_params(request).get("gs_hang_s", 0) or 0)
            time.sleep(hang_s or 0.005)
            links = pb_utils.get_input_tensor_by_name(request, "LINKS").as_numpy()
            score = np.array([float(np.sum(links) % 97) / 97.0], dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SPAM", score)]))
        return responses
