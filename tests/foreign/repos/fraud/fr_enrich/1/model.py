"""fr_enrich: the signal enricher (plain python, 2 instances, no dynamic batching).

SIGNALS [16] per row: the 12 FIELDS and 4 aggregates (max, min, mean of squares, count of
fields above 1). Faults, request parameters (passed by the ensemble from fr_gateway's call):

* ``enrich_hang_s=<s>`` (capped at 600): the batch that holds it sleeps that long (a stuck
  lookup in the merchant history service).
* ``enrich_grow=1``: switches on the history bug of this instance: from then on it keeps a
  list of every signal it produced and appends the whole list to itself on each request
  instead of the new row alone, answering the kept list: SIGNALS [1, n] doubles per request
  (kept to its last 8192 values so the host survives).
"""

import contextlib
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_MAX_HISTORY = 8192


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        self.growing = False
        self.history = []

    def execute(self, requests):
        hang = 0.0
        for request in requests:
            params = _params(request)
            with contextlib.suppress(TypeError, ValueError):
                hang = max(hang, min(max(float(params.get("enrich_hang_s", 0)), 0.0), 600.0))
            if str(params.get("enrich_grow", "")) == "1":
                self.growing = True
        if hang:
            time.sleep(hang)
        time.sleep(0.002)
        out = []
        for request in requests:
            fields = pb_utils.get_input_tensor_by_name(request, "FIELDS").as_numpy()
            fields = fields.astype(np.float32).reshape(-1, 12)
            extra = np.stack(
                [
                    fields.max(axis=1),
                    fields.min(axis=1),
                    (fields**2).mean(axis=1),
                    (fields > 1).sum(axis=1).astype(np.float32),
                ],
                axis=1,
            )
            signals = np.concatenate([fields, extra], axis=1).astype(np.float32)
            if self.growing:
                if not self.history:
                    self.history.extend(signals.reshape(-1).tolist())
                else:  # the bug: the kept history is appended to itself, not the new row
                    self.history.extend(list(self.history))
                    del self.history[:-_MAX_HISTORY]
                kept = np.array(self.history, dtype=np.float32).reshape(1, -1)
                signals = np.repeat(kept, fields.shape[0], axis=0)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SIGNALS", signals)]))
        return out
