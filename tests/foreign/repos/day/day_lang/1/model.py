"""day_lang: detect a document's language (3 ms a call; ``day_hang_s``: never ends)."""

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


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            hang_s = float(_params(request).get("day_hang_s", 0) or 0)
            time.sleep(hang_s or 0.003)
            doc = pb_utils.get_input_tensor_by_name(request, "DOC").as_numpy().reshape(-1)
            lang = np.array([int(np.argmax(np.abs(doc[1:5])))], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LANG", lang)]))
        return responses
