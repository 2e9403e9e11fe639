"""kws_classifier version 2: the keyword classifier (plain python, 1 instance, no batching).

FEATS [40] -> SCORES [12] FP32 (a fixed random projection, seed 2, and a softmax). About
3 ms per request.

Config parameters (a deploy adds them through the repository API):

* ``init_fail`` (any value): initialize raises RuntimeError (the new checkpoint does not
  load);
* ``init_sleep_s=<s>`` (capped at 120): initialize sleeps that long first (a weight
  download that never completes within the window).

Request parameter ``classify_hang_s=<s>`` (capped at 600, passed by kws_gateway): the
request's execute sleeps that long (a stuck forward pass).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _param(request, key):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return 0.0
    try:
        return min(max(float(params.get(key, 0)), 0.0), 600.0)
    except (TypeError, ValueError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        sleep_s = params.get("init_sleep_s", {}).get("string_value", "")
        if sleep_s:
            time.sleep(min(max(float(sleep_s), 0.0), 120.0))
        if "init_fail" in params:
            raise RuntimeError(
                "kws_classifier: cannot load checkpoint kws-v2.bin: unexpected key "
                "'head.weight' (size mismatch [12, 64] vs [12, 40])"
            )
        self.weights = np.random.default_rng(2).standard_normal((40, 12)).astype(np.float32)

    def execute(self, requests):
        responses = []
        for request in requests:
            hang = _param(request, "classify_hang_s")
            if hang:
                time.sleep(hang)
            time.sleep(0.003)
            feats = pb_utils.get_input_tensor_by_name(request, "FEATS").as_numpy().reshape(40)
            logits = feats @ self.weights
            scores = np.exp(logits - logits.max())
            scores = (scores / scores.sum()).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORES", scores)]))
        return responses
