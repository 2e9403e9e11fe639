"""detok: one token id -> its text piece."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            token = int(pb_utils.get_input_tensor_by_name(request, "TOKEN").as_numpy()[0])
            piece = np.array([f"tok{token % 1000}".encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("PIECE", piece)]))
        return responses
