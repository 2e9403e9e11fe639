"""warm_ranker: the ranker (plain python, 1 instance, no batching, model_warmup).

EMBED [32] -> SCORES [10] FP32 (a fixed random projection, seed 6, and a softmax). About
3 ms per request.

Its first execute pays a lazy set-up of ``setup_s`` seconds (config parameter, 1 in the
repository: loading its catalogue); the config's ``model_warmup`` (2 executes of a zero
sample) pays it during the load. A config without model_warmup
(``tests/foreign/variants/warm/warm_ranker_unwarmed.pbtxt``, ``setup_s`` 4) leaves it to the
first client request after the load.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        try:
            self.setup_s = min(max(float(params["setup_s"]["string_value"]), 0.0), 60.0)
        except (KeyError, TypeError, ValueError):
            self.setup_s = 0.0
        self.fail = "warmup_fail" in params
        self.warmups = sum(
            int(w.get("count", 0)) or 1
            for w in config.get("model_warmup", [])
            if int(w.get("batch_size", 0)) > 0
        )
        self.calls = 0
        self.weights = np.random.default_rng(6).standard_normal((32, 10)).astype(np.float32)

    def execute(self, requests):
        self.calls += 1
        if self.calls == 1 and self.setup_s:
            time.sleep(self.setup_s)  # the lazy set-up: the catalogue loaded on first use
        if self.calls == 1 and self.calls <= self.warmups and self.fail:
            raise RuntimeError("warm_ranker: warmup scores are all NaN: catalogue cat-v3 is empty")
        responses = []
        for request in requests:
            time.sleep(0.003)
            embed = pb_utils.get_input_tensor_by_name(request, "EMBED").as_numpy().reshape(32)
            logits = embed @ self.weights
            scores = np.exp(logits - logits.max())
            scores = (scores / scores.sum()).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORES", scores)]))
        return responses
