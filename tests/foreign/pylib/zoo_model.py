"""Every plain model of the zoo (each ``repos/zoo/<model>/1/model.py`` imports this one):
Y = tanh(X * w), after a sleep of the model's ``latency_ms`` (its config's parameters) per
batch, a feature lookup or a small network.

Faults, from the server's environment (none set: healthy), each naming one model and counting
the requests this instance has served:

* ``ZOO_HANG_MODEL`` / ``ZOO_HANG_AT``: the model's request number ``ZOO_HANG_AT`` sleeps
  300 s (a lookup blocked on a dead backing store);
* ``ZOO_RAISE_MODEL`` / ``ZOO_RAISE_AFTER``: every request after the first ``ZOO_RAISE_AFTER``
  raises (a dictionary file rotated away under the model);
* ``ZOO_SLOW_MODEL`` / ``ZOO_SLOW_AT`` / ``ZOO_SLOW_MS``: the model's request number
  ``ZOO_SLOW_AT`` takes ``ZOO_SLOW_MS`` ms (a legitimately slow, large lookup).
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.name = config["name"]
        params = config.get("parameters", {})
        self.latency_s = float(params["latency_ms"]["string_value"]) / 1000.0
        self.served = 0
        self.w = np.float32(0.5 + (sum(map(ord, self.name)) % 17) / 17.0)

    def _fault(self, key):
        return os.environ.get(f"ZOO_{key}_MODEL") == self.name

    def execute(self, requests):
        first = self.served + 1
        self.served += len(requests)
        if self._fault("HANG") and first <= int(os.environ["ZOO_HANG_AT"]) <= self.served:
            time.sleep(300)
        if self._fault("RAISE") and self.served > int(os.environ["ZOO_RAISE_AFTER"]):
            raise RuntimeError(f"{self.name}: dictionary file missing")
        if self._fault("SLOW") and first <= int(os.environ["ZOO_SLOW_AT"]) <= self.served:
            time.sleep(float(os.environ["ZOO_SLOW_MS"]) / 1000.0)
        time.sleep(self.latency_s)
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            y = np.tanh(x.astype(np.float32) * self.w).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", y)]))
        return responses
