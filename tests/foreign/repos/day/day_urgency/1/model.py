"""day_urgency: how urgent a document is (plain python, 1 instance, 2 ms a batch).

URGENCY [1] per row: a logistic score of VEC with the weights of the version the config's
``weights_version`` names. This code ships versions "1" and "2"; a config deployed with
another (``day_urgency_bad_deploy`` deploys ``weights_version=3`` through the repository
API while traffic flows) loads fine, and then every execute raises ``KeyError: '3'`` in
``_weights``: the weights are looked up per batch.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _version(model_config):
    value = model_config.get("parameters", {}).get("weights_version", {}).get("string_value")
    return value or "1"


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(31)
        self.weights = {
            "1": rng.standard_normal(16).astype(np.float32) / 3,
            "2": rng.standard_normal(16).astype(np.float32) / 3,
        }
        self.version = _version(json.loads(args["model_config"]))

    def _weights(self):
        return self.weights[self.version]

    def execute(self, requests):
        weights = self._weights()
        time.sleep(0.002)
        responses = []
        for request in requests:
            vec = pb_utils.get_input_tensor_by_name(request, "VEC").as_numpy().astype(np.float32)
            urgency = 1.0 / (1.0 + np.exp(-(vec.reshape(-1, 16) @ weights)))
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("URGENCY", urgency.astype(np.float32).reshape(-1, 1))]
                )
            )
        return responses
