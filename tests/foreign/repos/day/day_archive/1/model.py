"""day_archive: how long to keep a document (loaded, never called, unloaded)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(0.5)  # reads its retention rules

    def execute(self, requests):
        responses = []
        for request in requests:
            doc = pb_utils.get_input_tensor_by_name(request, "DOC").as_numpy().reshape(-1)
            days = np.array([30 + int(abs(doc[0]) * 10) % 335], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("KEEP_DAYS", days)]))
        return responses
