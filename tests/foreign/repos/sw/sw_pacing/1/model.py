"""sw_pacing: how much of a campaign's hourly budget is left to spend (6 ms a call).

Server environment ``SW_PACING_LEAK_MS``: each call appends to the instance's spend history
and rescans all of it, never trimming it, so each call takes that many ms longer than the
instance's previous one. Request parameter ``sw_hang_s`` (set by sw_auction): the budget store
never answers (the execute sleeps that long).
"""

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
        self.leak_s = float(os.environ.get("SW_PACING_LEAK_MS") or 0) / 1000.0
        self.history = []

    def execute(self, requests):
        responses = []
        for request in requests:
            hang = _params(request).get("sw_hang_s")
            if hang:
                time.sleep(float(hang))
            campaign = pb_utils.get_input_tensor_by_name(request, "CAMPAIGN").as_numpy().reshape(-1)
            if self.leak_s:
                self.history.append(int(campaign[0]))
            time.sleep(0.006 + self.leak_s * len(self.history))
            left = 1.0 - (int(campaign[1]) % 24) / 24.0
            pace = np.array([0.5 + left / 2.0, left], dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("PACE", pace)]))
        return responses
