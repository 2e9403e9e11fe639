"""xl_translate: the sentence translator (plain python, dynamic batching, 2 instances).

SRC_IDS [b, 8] -> TGT_IDS [b, 8] INT32 (a fixed token mapping). About 3 ms per batch plus
0.5 ms per sentence.

* The server environment's ``XL_TRANSLATE_SETUP_S`` (capped at 600) makes each instance's
  first execute sleep that long first (the lazy load of its vocabulary tables).
* A request parameter ``hang_s`` (capped at 600) makes the batch holding that request sleep
  that long (a stuck decode): the batch, and every request in it, never returns in time.
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _seconds(text, cap=600.0):
    try:
        return min(max(float(text), 0.0), cap)
    except (TypeError, ValueError):
        return 0.0


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return 0.0
    return _seconds(params.get("hang_s")) if isinstance(params, dict) else 0.0


class TritonPythonModel:
    def initialize(self, args):
        self.setup_s = _seconds(os.environ.get("XL_TRANSLATE_SETUP_S"))
        self.calls = 0

    def execute(self, requests):
        self.calls += 1
        if self.calls == 1 and self.setup_s:
            time.sleep(self.setup_s)  # the lazy set-up: vocabulary tables loaded on first use
        hang = max((_hang_s(r) for r in requests), default=0.0)
        if hang:
            time.sleep(hang)
        time.sleep(0.003 + 0.0005 * len(requests))
        responses = []
        for request in requests:
            src = pb_utils.get_input_tensor_by_name(request, "SRC_IDS").as_numpy()
            tgt = ((src.astype(np.int64) * 31 + 7) % 32000).astype(np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("TGT_IDS", tgt)]))
        return responses
