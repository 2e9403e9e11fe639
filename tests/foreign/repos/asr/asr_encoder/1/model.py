"""asr_encoder: acoustic encoder (dynamic batching, 2 + 1 instances in two groups).

Each request of a batch gets EMB [16] (a projection of its 800 frames) and STATE [T, 4],
the instance's streaming context: healthy, it is reset for every request (T = 1). Faults,
request parameters:

* ``enc_hang_s=<s>`` (capped at 600): the batch holding it sleeps that long (a stuck
  forward pass); every request batched with it waits too.
* ``enc_ms=<ms>`` (capped at 1000): the batch holding it takes that long (a long chunk).
* ``enc_fault=double``: from then on this instance's context is concatenated with itself
  on every request instead of being reset (``cache = concat(cache, cache)``), so STATE
  doubles per request (kept to its last 8192 rows so the host survives).
"""

import contextlib
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_MAX_ROWS = 8192


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(7)
        self.proj = rng.standard_normal((800, 16)).astype(np.float32) / 30.0
        self.cache = np.ones((1, 4), dtype=np.float32)
        self.doubling = False

    def execute(self, requests):
        hang = 0.0
        for request in requests:
            params = _params(request)
            with contextlib.suppress(TypeError, ValueError):
                hang = max(hang, min(max(float(params.get("enc_hang_s", 0)), 0.0), 600.0))
            with contextlib.suppress(TypeError, ValueError):
                hang = max(hang, min(max(float(params.get("enc_ms", 0)), 0.0), 1000.0) / 1000)
            if params.get("enc_fault") == "double":
                self.doubling = True
        if hang:
            time.sleep(hang)
        time.sleep(0.004)
        out = []
        for request in requests:
            frames = pb_utils.get_input_tensor_by_name(request, "FRAMES").as_numpy()
            emb = np.tanh(frames.reshape(-1, 800) @ self.proj).astype(np.float32)
            if self.doubling:
                self.cache = np.concatenate([self.cache, self.cache])[-_MAX_ROWS:]
            else:
                self.cache = np.full((1, 4), float(emb.mean()), dtype=np.float32)
            state = self.cache.reshape(1, -1, 4)
            out.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("EMB", emb), pb_utils.Tensor("STATE", state.copy())]
                )
            )
        return out
