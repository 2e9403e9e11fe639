"""ex_pytorch: python_backend's ``examples/pytorch/model.py``, the ``pytorch`` child of the bls
example, copied as users copy it.

Adapted to this CPU lab: ``AddSubNet`` is numpy instead of a ``torch.nn.Module`` (no torch
here), with the same forward (sum and difference of FP32 [4] inputs). Two things a user
added, as users do:

* it refuses an input that is not finite (an error response, ``input contains NaN or
  Inf``), which its BLS callers must handle;
* its weights are built on first use, not in ``initialize`` (lazily: the first execute pays
  for it).

Fault switches, from the server's environment (the BLS parents build their requests
without parameters, as the bls example does):

* ``EX_LAZY_LOAD_S``: building the weights on first use takes that long (default 0);
* ``EX_HANG_AT=N``: the N-th request this instance executes waits 300 s on its weight store
  (it never answers within the window).
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class AddSubNet:
    """
    Simple AddSub network (numpy, standing in for the example's PyTorch one). This network
    outputs the sum and subtraction of the inputs.
    """

    def __init__(self):
        # Loading the weights (a remote store in real life).
        time.sleep(float(os.environ.get("EX_LAZY_LOAD_S", "0") or 0))

    def __call__(self, input0, input1):
        return (input0 + input1), (input0 - input1)


class TritonPythonModel:
    """Your Python model must use the same class name. Every Python model
    that is created must have "TritonPythonModel" as the class name.
    """

    def initialize(self, args):
        """`initialize` is called only once when the model is being loaded."""

        # You must parse model_config. JSON string is not parsed here
        self.model_config = model_config = json.loads(args["model_config"])

        # Get OUTPUT0 configuration
        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")

        # Get OUTPUT1 configuration
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")

        # Convert Triton types to numpy types
        self.output0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.output1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])

        # The model is instantiated on first use (see execute).
        self.add_sub_model = None
        self.request_count = 0
        self.hang_at = int(os.environ.get("EX_HANG_AT", "0") or 0)

    def execute(self, requests):
        """`execute` must be implemented in every Python model."""

        output0_dtype = self.output0_dtype
        output1_dtype = self.output1_dtype

        # Instantiate the model on first use
        if self.add_sub_model is None:
            self.add_sub_model = AddSubNet()

        responses = []

        # Every Python backend must iterate over everyone of the requests
        # and create a pb_utils.InferenceResponse for each of them.
        for request in requests:
            self.request_count += 1
            if self.request_count == self.hang_at:
                time.sleep(300)  # the weight store never answers

            # Get INPUT0
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            # Get INPUT1
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")

            if not (np.isfinite(in_0.as_numpy()).all() and np.isfinite(in_1.as_numpy()).all()):
                responses.append(
                    pb_utils.InferenceResponse(
                        output_tensors=[],
                        error=pb_utils.TritonError("input contains NaN or Inf"),
                    )
                )
                continue

            out_0, out_1 = self.add_sub_model(in_0.as_numpy(), in_1.as_numpy())

            # Create output tensors. You need pb_utils.Tensor
            # objects to create pb_utils.InferenceResponse.
            out_tensor_0 = pb_utils.Tensor("OUTPUT0", out_0.astype(output0_dtype))
            out_tensor_1 = pb_utils.Tensor("OUTPUT1", out_1.astype(output1_dtype))

            # Create InferenceResponse. You can set an error here in case
            # there was a problem with handling this inference request.
            inference_response = pb_utils.InferenceResponse(
                output_tensors=[out_tensor_0, out_tensor_1]
            )
            responses.append(inference_response)

        # You should return a list of pb_utils.InferenceResponse. Length
        # of this list must match the length of `requests` list.
        return responses

    def finalize(self):
        """`finalize` is called only once when the model is being unloaded."""
        print("Cleaning up...")
