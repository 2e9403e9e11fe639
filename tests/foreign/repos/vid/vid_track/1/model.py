"""vid_track: the tracker (plain python, 1 instance, dynamic batching up to 4).

BOXES [b, 8] -> TRACK_IDS [b, 2] INT64: each box's track id, from its position on a 16 x 16
grid. About 5 ms per batch.

Config parameter ``delay_s`` (``0`` when absent): seconds slept per batch, a tracker whose
association step went slow (``vid_gateway_bls_timeout`` deploys 3).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.delay_s = float(params.get("delay_s", {}).get("string_value", "0"))

    def execute(self, requests):
        time.sleep(0.005 + self.delay_s)
        responses = []
        for request in requests:
            boxes = pb_utils.get_input_tensor_by_name(request, "BOXES").as_numpy().reshape(2, 4)
            cells = np.clip((boxes[:, :2] * 16).astype(np.int64), 0, 15)
            ids = (cells[:, 0] * 16 + cells[:, 1]).reshape(1, 2)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("TRACK_IDS", ids)]))
        return responses
