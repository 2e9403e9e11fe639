"""rec_scorer: scores a batch of candidate chunks (one instance, dynamic batching), ~3 ms.

Faults:

* request parameter ``score_ms=<ms>`` (capped at 1000): the batch holding it takes that long
  (a heavier model variant for that request).
* request parameters ``slow_for_s=<s>`` and ``slow_batch_s=<s>``: from then on, for
  ``slow_for_s`` seconds (capped at 60), every batch takes ``slow_batch_s`` (capped at 2):
  the scorer has become slow (a throttled CPU, a noisy neighbour) for everyone.
* environment ``SCORER_COLD_START_S=<s>`` (capped at 30): the first execute after every load
  builds the 'embedding table' lazily and takes that long.
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


def _num(params, name, high):
    try:
        return min(max(float(params.get(name, 0)), 0.0), high)
    except (TypeError, ValueError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        try:
            self.cold_s = min(max(float(os.environ.get("SCORER_COLD_START_S", "0")), 0.0), 30.0)
        except ValueError:
            self.cold_s = 0.0
        self.table = None
        self.slow_until = 0.0
        self.slow_s = 0.0

    def _embeddings(self):
        if self.table is None:
            time.sleep(self.cold_s)
            self.table = np.sin(np.arange(1024 * 16, dtype=np.float32)).reshape(1024, 16)
        return self.table

    def execute(self, requests):
        table = self._embeddings()
        extra = 0.0
        now = time.monotonic()
        for request in requests:
            params = _params(request)
            extra = max(extra, _num(params, "score_ms", 1000.0) / 1000.0)
            slow_for = _num(params, "slow_for_s", 60.0)
            if slow_for:
                self.slow_until = max(self.slow_until, now + slow_for)
                self.slow_s = _num(params, "slow_batch_s", 2.0)
        if now < self.slow_until:
            extra = max(extra, self.slow_s)
        responses = []
        for request in requests:
            user = pb_utils.get_input_tensor_by_name(request, "USER_VEC").as_numpy()
            ids = pb_utils.get_input_tensor_by_name(request, "ITEM_IDS").as_numpy()
            vecs = table[ids % table.shape[0]]  # [batch, 8, 16]
            logits = np.einsum("bkd,bd->bk", vecs, user).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LOGITS", logits)]))
        time.sleep(0.003 + extra)
        return responses
