"""rec_features: a plain user-feature lookup (4 instances, ~2 ms), called by clients directly
and by rec_orchestrator.

Fault, from the request's parameters: ``features_hang_s=<s>`` (capped at 600): the lookup
never comes back within the window (a dead connection to the feature store, no timeout).
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


class TritonPythonModel:
    def initialize(self, args):
        self.table = np.cos(np.arange(16, dtype=np.float32) * 0.37)

    def execute(self, requests):
        responses = []
        for request in requests:
            params = _params(request)
            try:
                hang = min(max(float(params.get("features_hang_s", 0)), 0.0), 600.0)
            except (TypeError, ValueError):
                hang = 0.0
            if hang:
                time.sleep(hang)
            user = pb_utils.get_input_tensor_by_name(request, "USER").as_numpy()
            feats = np.tanh(user * self.table + 0.1).astype(np.float32)
            time.sleep(0.002)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("FEATURES", feats)]))
        return responses
