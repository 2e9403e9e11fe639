"""img_tagger: the tag classifier (plain python, 2 instances, no batching), FEATURES [64] ->
LOGITS [32], about 1 ms a request.

Fault: server environment ``IMG_TAGGER_FAIL_RATE`` (a fraction, e.g. ``0.03``): that share of
requests, drawn at random per instance, raise RuntimeError in execute (a label lookup that
fails on rare classes); Triton answers the request the error, img_gateway relays it.
"""

import os
import random
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.w = np.linspace(-1.0, 1.0, 64 * 32, dtype=np.float32).reshape(64, 32)
        self.fail_rate = float(os.environ.get("IMG_TAGGER_FAIL_RATE", "0") or 0)
        self.rng = random.Random(args["model_instance_name"])

    def execute(self, requests):
        out = []
        for request in requests:
            feats = pb_utils.get_input_tensor_by_name(request, "FEATURES").as_numpy()
            if self.fail_rate and self.rng.random() < self.fail_rate:
                cls = 4096 + self.rng.randrange(64)
                raise RuntimeError(
                    f"img_tagger: label lookup failed: class id {cls} is not in the "
                    "vocabulary (4096 labels, tags-v3.json)"
                )
            time.sleep(0.001)
            logits = (feats.reshape(64) @ self.w).astype(np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("LOGITS", logits)]))
        return out
