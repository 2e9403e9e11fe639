"""ops_classify: the page classifier (plain python, dynamic batching, 2 instances).

PAGE [b, 16] -> SCORES [b, n] FP32: n = 4 policy-class scores (a fixed projection and a
softmax). About 8 ms per batch plus 1 ms per page.

* A config parameter ``setup_s`` (capped at 600; absent in the repository, set by a deploy)
  makes each instance's first execute sleep that long first (the lazy load of its weights).
* The server environment's ``OPS_CLASSIFY_DOUBLE_AFTER_S`` (seconds after the instance's first
  execute) turns on this family's bug from then on: the instance's label table is extended
  with itself on every execute (``labels = labels + labels`` where it should be rebuilt), and
  SCORES has one column per label, so n doubles on every call of that instance until the
  table passes 16384 labels and is cut back to 4 (a size guard), and it starts again.
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_CLASSES = ["spam", "abuse", "pii", "other"]
_GUARD = 16384
_W = np.random.default_rng(7).standard_normal((16, 4)).astype(np.float32)


def _seconds(text, cap=600.0):
    try:
        return min(max(float(text), 0.0), cap)
    except (TypeError, ValueError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        setup = config.get("parameters", {}).get("setup_s", {}).get("string_value")
        self.setup_s = _seconds(setup)
        self.double_after_s = os.environ.get("OPS_CLASSIFY_DOUBLE_AFTER_S")
        self.first = None
        self.labels = list(_CLASSES)

    def execute(self, requests):
        now = time.monotonic()
        if self.first is None:
            self.first = now
            if self.setup_s:
                time.sleep(self.setup_s)  # the lazy set-up: weights loaded on first use
        if self.double_after_s and now - self.first >= float(self.double_after_s):
            self.labels = self.labels + self.labels  # bug: should be rebuilt from _CLASSES
            if len(self.labels) > _GUARD:
                self.labels = list(_CLASSES)
        time.sleep(0.008 + 0.001 * len(requests))
        n = len(self.labels)
        responses = []
        for request in requests:
            page = pb_utils.get_input_tensor_by_name(request, "PAGE").as_numpy()
            logits = page.reshape(-1, 16).astype(np.float32) @ _W
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)
            scores = np.tile(probs, (1, n // 4)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORES", scores)]))
        return responses
