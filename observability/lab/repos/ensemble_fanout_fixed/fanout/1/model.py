"""fanout: copy one tensor into two outputs, one per downstream consumer.

The shipped fix for the "is not written" ensemble load error (server#7366, #4560): instead of
wiring one step output to two consumers by hand (and getting a name wrong), the ensemble routes
through this step, whose two outputs each get their own ensemble tensor and their own consumer.
"""

from __future__ import annotations

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """INPUT FP32 [-1] -> OUTPUT_0, OUTPUT_1 FP32 [-1] (identical copies)."""

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUTPUT_0", x.copy()),
                        pb_utils.Tensor("OUTPUT_1", x.copy()),
                    ]
                )
            )
        return responses
