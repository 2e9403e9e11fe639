"""preprocess: normalise a raw FP32 vector into features.

The fast, healthy first stage of both the BLS `router` and the `pipeline` ensemble. It has no
fault of its own; it exists so that every pipeline has a realistic first hop (and a BLS child
whose request id and trace parent can be checked).
"""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """RAW FP32 [-1] -> FEATURES FP32 [-1] = (RAW - mean) / (std + eps)."""

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "RAW").as_numpy()
            raw = raw.astype(np.float32, copy=False)
            features = (raw - raw.mean()) / (raw.std() + np.float32(1e-6))
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("FEATURES", features.astype(np.float32))]
                )
            )
        return responses
