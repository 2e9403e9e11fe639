"""left: first consumer of the producer's output.

Model-side tensor names are the generic INPUT/OUTPUT on purpose: that genericity is what tempts
users to put a model-side name into an ensemble's input_map (server#7366, #4560).
"""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """INPUT FP32 [-1] -> OUTPUT FP32 [-1]."""

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            y = (x + 1).astype(np.float32)
            responses.append(
                pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT", y)])
            )
        return responses
