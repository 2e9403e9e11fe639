"""ex_bls_decoupled: python_backend's ``examples/bls_decoupled/sync_model.py``
("bls_decoupled_sync"), copied as users copy it: renamed, its child renamed
(``square_int32`` -> ``ex_square``).

For every request it sends one BLS request to the decoupled ex_square with
``exec(decoupled=True)``, iterates the generator of its responses until the final one and
answers SUM, the sum of their OUT. Adapted: SUM is built as INT32, the type its config
declares (the example builds it INT64; the server's environment ``EX_VERBATIM_SUM=1``
serves the example's line as it is). The generator ends only when ex_square sends
``TRITONSERVER_RESPONSE_COMPLETE_FINAL``; there is no timeout.
"""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

VERBATIM_SUM = os.environ.get("EX_VERBATIM_SUM") == "1"


class TritonPythonModel:
    """Your Python model must use the same class name. Every Python model
    that is created must have "TritonPythonModel" as the class name.

    This model demonstrates how to use BLS with decoupled models.
    """

    def initialize(self, args):
        """`initialize` is called only once when the model is being loaded."""

        # You must parse model_config. JSON string is not parsed here
        self.model_config = json.loads(args["model_config"])

    def execute(self, requests):
        """`execute` must be implemented in every Python model."""

        # This model does not support batching, so 'request_count' should
        # always be 1.
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + len(requests))

        response_num = pb_utils.get_input_tensor_by_name(requests[0], "IN")

        # For detailed explanation about the inputs of the repeat model, refer
        # to the example below:
        # https://github.com/triton-inference-server/python_backend/blob/r22.12/examples/decoupled/square_model.py
        # Construct the BLS request
        infer_request = pb_utils.InferenceRequest(
            model_name="ex_square",
            inputs=[response_num],
            requested_output_names=["OUT"],
        )

        # The variable that will store the sum of the responses. (The example writes
        # np.array([0]): an INT64 SUM where the config declares INT32, which Triton
        # passes on to the client unchecked. The dtype is ours; EX_VERBATIM_SUM=1 serves
        # the example's line as it is.)
        response_sum = np.array([0]) if VERBATIM_SUM else np.array([0], dtype=np.int32)

        # Iterate over the generator of responses returned by the BLS request.
        # This interface can support zero, one, and many inference responses
        # per request.
        infer_responses = infer_request.exec(decoupled=True)

        for infer_response in infer_responses:
            # If inference response has an error, raise an exception
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())

            # Check for the last empty response.
            if len(infer_response.output_tensors()) > 0:
                response_sum += pb_utils.get_output_tensor_by_name(infer_response, "OUT").as_numpy()

        response = [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", response_sum)])
        ]

        # Since the model is using the default mode in this example, we
        # will be returning a single response.
        return response

    def finalize(self):
        """`finalize` is called only once when the model is being unloaded."""
        print("Cleaning up...")
