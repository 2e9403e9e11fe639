"""geo_lookup: the attributes of one map cell (python, 1 instance, no batching).

KEY [1] INT64 -> ATTR [3] FP32, about 3 ms per call (a key-value store round trip).
Request parameters (geo_enrich sets them on its calls): ``lookup_ms`` (the call's time,
default 3, capped at 1000) and ``hang_s`` (the call sleeps that long, capped at 600: a
store connection that never answers).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _num(params, name, default, high):
    try:
        return min(max(float(params.get(name, default)), 0.0), high)
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            params = _params(request)
            if "hang_s" in params:
                time.sleep(_num(params, "hang_s", 300.0, 600.0))
            time.sleep(_num(params, "lookup_ms", 3.0, 1000.0) / 1000.0)
            key = int(pb_utils.get_input_tensor_by_name(request, "KEY").as_numpy()[0])
            rng = np.random.default_rng(key & 0xFFFFFFFF)
            attr = rng.random(3).astype(np.float32) * np.array([1e4, 50, 30], dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("ATTR", attr)]))
        return responses
