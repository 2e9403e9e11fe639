"""ex_bls_sync: python_backend's ``examples/bls/sync_model.py`` ("bls_sync"), copied as users
copy it: renamed only. One synchronous ``exec()`` per request to the model the client names
in MODEL_NAME (the clients here name ``ex_add_sub``).
"""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Your Python model must use the same class name. Every Python model
    that is created must have "TritonPythonModel" as the class name.
    """

    def initialize(self, args):
        """`initialize` is called only once when the model is being loaded."""

        # You must parse model_config. JSON string is not parsed here
        self.model_config = json.loads(args["model_config"])

    def execute(self, requests):
        """`execute` must be implemented in every Python model."""

        responses = []
        # Every Python backend must iterate over everyone of the requests
        # and create a pb_utils.InferenceResponse for each of them.
        for request in requests:
            # Get INPUT0
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")

            # Get INPUT1
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")

            # Get Model Name
            model_name = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME")

            # Model Name string
            model_name_string = model_name.as_numpy()[0]

            # Create inference request object
            infer_request = pb_utils.InferenceRequest(
                model_name=model_name_string,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[in_0, in_1],
            )

            # Perform synchronous blocking inference request
            infer_response = infer_request.exec()

            # Make sure that the inference response doesn't have an error. If
            # it has an error and you can't proceed with your model execution
            # you can raise an exception.
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())

            # Create InferenceResponse. Because the infer_response of the models
            # contains the final outputs with correct output names, we can just
            # pass the list of outputs to the InferenceResponse object.
            inference_response = pb_utils.InferenceResponse(
                output_tensors=infer_response.output_tensors()
            )
            responses.append(inference_response)

        # You should return a list of pb_utils.InferenceResponse. Length
        # of this list must match the length of `requests` list.
        return responses

    def finalize(self):
        """`finalize` is called only once when the model is being unloaded."""
        print("Cleaning up...")
