"""dq_rank: the batched ranker (python, ``max_batch_size: 8``, dynamic batching).

Each request is FEAT [n, 16] FP32 (n rows, 1 from dq_gateway, up to 8 from a bulk client)
-> SCORE [n, 1] FP32. A batch takes 20 ms plus 4 ms a row (a sleep: a ranking model's
forward pass). A request parameter ``dq_fault=hang`` makes the batch that holds it sleep
300 s (a forward pass that never returns), holding every request of that batch.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _fault(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return ""
    return str(params.get("dq_fault", "")) if isinstance(params, dict) else ""


class TritonPythonModel:
    def execute(self, requests):
        feats = [pb_utils.get_input_tensor_by_name(r, "FEAT").as_numpy() for r in requests]
        rows = sum(int(f.shape[0]) for f in feats)
        if any(_fault(r) == "hang" for r in requests):
            time.sleep(300)
        time.sleep(0.020 + 0.004 * rows)
        out = []
        for feat in feats:
            score = np.tanh(feat.astype(np.float32).mean(axis=1, keepdims=True))
            tensor = pb_utils.Tensor("SCORE", score.astype(np.float32))
            out.append(pb_utils.InferenceResponse([tensor]))
        return out
