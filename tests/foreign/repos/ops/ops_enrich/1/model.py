"""ops_enrich: the enricher (plain python, 1 instance, no batching).

FEATURES [1, n] FP32 (the first 4 policy scores are read) -> TAGS [8] INT32: the tags of
the policy store's entry for the strongest class. About 20 ms a call (a store round trip).

A request parameter ``hang_s`` (capped at 600) makes the call holding it sleep that long
first (a store connection that never answers): the instance, the only one, serves nothing
else meanwhile.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(max(float(params.get("hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            hang = _hang_s(request)
            if hang:
                time.sleep(hang)
            time.sleep(0.02)
            feats = pb_utils.get_input_tensor_by_name(request, "FEATURES").as_numpy()
            top = int(np.argmax(feats.reshape(-1)[:4]))
            tags = (np.arange(8, dtype=np.int32) + 10 * top).astype(np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("TAGS", tags)]))
        return responses
