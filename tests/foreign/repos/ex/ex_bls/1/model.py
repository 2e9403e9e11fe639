"""ex_bls: python_backend's ``examples/bls/async_model.py`` ("bls_async"), copied as users
copy it.

Renamed, and its children renamed (``pytorch`` -> ``ex_pytorch``, ``add_sub`` ->
``ex_add_sub``). One thing a user added, as users do: each child's answer is checked as soon
as it arrives (a done-callback on the ``async_exec()`` future records the largest OUTPUT0 it
saw, then hands the response on through a future of its own, which execute gathers instead
of the BLS futures). An error response of a child has no OUTPUT0: the callback then raises
(``AttributeError``), asyncio prints "Exception in callback ...", the handed-on future is
never resolved and execute waits forever (no timeout, as in the example).
"""

import asyncio
import functools
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Your Python model must use the same class name. Every Python model
    that is created must have "TritonPythonModel" as the class name.
    """

    def initialize(self, args):
        """`initialize` is called only once when the model is being loaded."""

        # You must parse model_config. JSON string is not parsed here
        self.model_config = json.loads(args["model_config"])

        # The largest OUTPUT0 each child answered (checked as answers arrive).
        self.largest_output0 = {}

    def _check_child(self, model_name, checked, future):
        # Record the child's largest OUTPUT0, then hand its response on.
        infer_response = future.result()
        output0 = pb_utils.get_output_tensor_by_name(infer_response, "OUTPUT0").as_numpy()
        largest = float(np.abs(output0).max())
        self.largest_output0[model_name] = max(self.largest_output0.get(model_name, 0.0), largest)
        checked.set_result(infer_response)

    # You must add the Python 'async' keyword to the beginning of `execute`
    # function if you want to use `async_exec` function.
    async def execute(self, requests):
        """`execute` must be implemented in every Python model."""

        responses = []
        loop = asyncio.get_running_loop()
        # Every Python backend must iterate over everyone of the requests
        # and create a pb_utils.InferenceResponse for each of them.
        for request in requests:
            # Get INPUT0
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")

            # Get INPUT1
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")

            # List of awaitables containing inflight inference responses.
            inference_response_awaits = []
            for model_name in ["ex_pytorch", "ex_add_sub"]:
                # Create inference request object
                infer_request = pb_utils.InferenceRequest(
                    model_name=model_name,
                    requested_output_names=["OUTPUT0", "OUTPUT1"],
                    inputs=[in_0, in_1],
                )

                # Store the awaitable inside the array. We don't need
                # the inference response immediately so we do not `await`
                # here. (Added: each answer is checked by a done-callback,
                # which hands it on through `checked`.)
                checked = loop.create_future()
                future = asyncio.ensure_future(infer_request.async_exec())
                future.add_done_callback(functools.partial(self._check_child, model_name, checked))
                inference_response_awaits.append(checked)

            # Wait for all the inference requests to finish. The execution
            # of the Python script will be blocked until all the awaitables
            # are resolved.
            inference_responses = await asyncio.gather(*inference_response_awaits)

            for infer_response in inference_responses:
                # Make sure that the inference response doesn't have an error.
                # If it has an error and you can't proceed with your model
                # execution you can raise an exception.
                if infer_response.has_error():
                    raise pb_utils.TritonModelException(infer_response.error().message())

            # Get the OUTPUT0 from the "pytorch" model inference response
            pytorch_output0_tensor = pb_utils.get_output_tensor_by_name(
                inference_responses[0], "OUTPUT0"
            )

            # Get the OUTPUT1 from the "addsub" model inference response
            addsub_output1_tensor = pb_utils.get_output_tensor_by_name(
                inference_responses[1], "OUTPUT1"
            )

            # Create InferenceResponse. Because the infer_response of the models
            # contains the final outputs with correct output names, we can just
            # pass the list of outputs to the InferenceResponse object.
            inference_response = pb_utils.InferenceResponse(
                output_tensors=[pytorch_output0_tensor, addsub_output1_tensor]
            )
            responses.append(inference_response)

        # You should return a list of pb_utils.InferenceResponse. Length
        # of this list must match the length of `requests` list.
        return responses

    def finalize(self):
        """`finalize` is called only once when the model is being unloaded."""
        print("Cleaning up...")
