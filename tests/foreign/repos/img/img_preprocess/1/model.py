"""img_preprocess: thumbnail preprocessing (plain python, 4 instances, dynamic batching up to
8), PIXELS [256] -> FEATURES [64], about 3 ms + 1 ms per image a batch.

Faults:

* request parameter ``prep_hang_s`` (img_gateway forwards its request's parameters): the batch
  holding the request sleeps that long in execute (a decoder stuck on a corrupt image); every
  image batched with it is stuck too, and so is the instance, while the other three serve.
* server environment ``IMG_PREP_HANG_INSTANCE`` and ``IMG_PREP_HANG_AFTER_S``: that instance
  (e.g. ``img_preprocess_0_2``), once that many seconds have passed since its first execute,
  sleeps 300 s in every execute (a decoder wedged on a corrupt cache): the batch it holds
  then never returns, while the other three instances serve.
* server environment ``IMG_PREP_CREEP_MS``: each execute of an instance takes that many
  milliseconds longer than its previous one (a per-instance cache that is searched linearly
  and never trimmed), with no error.
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(max(float(params.get("prep_hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        self.w = np.linspace(-0.5, 0.5, 256 * 64, dtype=np.float32).reshape(256, 64)
        self.creep_s = float(os.environ.get("IMG_PREP_CREEP_MS", "0") or 0) / 1000.0
        self.executes = 0
        wedged = os.environ.get("IMG_PREP_HANG_INSTANCE", "")
        self.hang_after_s = None
        if wedged and wedged == args["model_instance_name"]:
            self.hang_after_s = float(os.environ.get("IMG_PREP_HANG_AFTER_S", "5") or 5)
        self.first = None

    def execute(self, requests):
        pixels = [pb_utils.get_input_tensor_by_name(r, "PIXELS").as_numpy() for r in requests]
        images = sum(p.shape[0] for p in pixels)
        hang = max(_hang_s(r) for r in requests)
        now = time.monotonic()
        self.first = now if self.first is None else self.first
        if self.hang_after_s is not None and now - self.first >= self.hang_after_s:
            hang = 300.0
        if hang:
            time.sleep(hang)
        time.sleep(0.003 + 0.001 * images + self.creep_s * self.executes)
        self.executes += 1
        out = []
        for p in pixels:
            feats = np.tanh((p.reshape(-1, 256) / 255.0) @ self.w).astype(np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("FEATURES", feats)]))
        return out
