"""ex_repeat: python_backend's ``examples/decoupled/repeat_model.py`` ("repeat_int32"), copied
as users copy it: renamed, long docstrings shortened.

For a request the model sends one response per element of IN (OUT = IN[i], IDX = i), the
i-th after DELAY[i] ms, from a daemon thread started by execute, then the final flag;
execute returns after WAIT ms.

Fault switch for the recordings, request parameter ``ex_fail_at=N``: the response thread
raises ``RuntimeError`` before its N-th response (as user code in such a thread does);
Python's ``threading.excepthook`` prints it to the stub's stderr and the final flag is
never sent.
"""

import json
import threading
import time

import numpy
import triton_python_backend_utils as pb_utils


def _fail_at(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return int(params.get("ex_fail_at", -1))
    except (TypeError, ValueError, AttributeError):
        return -1


class TritonPythonModel:
    """Your Python model must use the same class name. Every Python model
    that is created must have "TritonPythonModel" as the class name.

    This model demonstrates how to write a decoupled model where each
    request can generate 0 to many responses.
    """

    def initialize(self, args):
        """`initialize` is called only once when the model is being loaded."""

        # You must parse model_config. JSON string is not parsed here
        self.model_config = model_config = json.loads(args["model_config"])

        using_decoupled = pb_utils.using_decoupled_model_transaction_policy(model_config)
        if not using_decoupled:
            raise pb_utils.TritonModelException(
                """the model `{}` can generate any number of responses per request,
                enable decoupled transaction policy in model configuration to
                serve this model""".format(args["model_name"])
            )

        # Get OUT configuration
        out_config = pb_utils.get_output_config_by_name(model_config, "OUT")

        # Get IDX configuration
        idx_config = pb_utils.get_output_config_by_name(model_config, "IDX")

        # Convert Triton types to numpy types
        self.out_dtype = pb_utils.triton_string_to_numpy(out_config["data_type"])
        self.idx_dtype = pb_utils.triton_string_to_numpy(idx_config["data_type"])

        # Optional parameter to specify the number of elements in the OUT tensor in each
        # response. Defaults to 1 if not provided.
        parameters = self.model_config.get("parameters", {})
        self.output_num_elements = int(
            parameters.get("output_num_elements", {}).get("string_value", 1)
        )

        # To keep track of response threads so that we can delay
        # the finalizing the model until all response threads
        # have completed.
        self.inflight_thread_count = 0
        self.inflight_thread_count_lck = threading.Lock()

    def execute(self, requests):
        """`execute` MUST be implemented in every Python model."""

        # This model does not support batching, so 'request_count' should always
        # be 1.
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + len(requests))

        in_input = pb_utils.get_input_tensor_by_name(requests[0], "IN").as_numpy()
        delay_input = pb_utils.get_input_tensor_by_name(requests[0], "DELAY").as_numpy()
        if in_input.shape != delay_input.shape:
            raise pb_utils.TritonModelException(
                f"expected IN and DELAY shape to match, got {list(in_input.shape)} and "
                f"{list(delay_input.shape)}."
            )

        # Start a separate thread to send the responses for the request. The
        # sending back the responses is delegated to this thread.
        thread = threading.Thread(
            target=self.response_thread,
            args=(
                requests[0].get_response_sender(),
                in_input,
                delay_input,
                _fail_at(requests[0]),
            ),
        )

        # A model using decoupled transaction policy is not required to send all
        # responses for the current request before returning from the execute.
        # To demonstrate the flexibility of the decoupled API, we are running
        # response thread entirely independent of the execute thread.
        thread.daemon = True

        with self.inflight_thread_count_lck:
            self.inflight_thread_count += 1

        thread.start()

        # Read WAIT input for wait time, then return so that Triton can call
        # execute again with another request.
        wait_input = pb_utils.get_input_tensor_by_name(requests[0], "WAIT").as_numpy()
        time.sleep(wait_input[0] / 1000)

        # Unlike in non-decoupled model transaction policy, execute function
        # here returns no response. A return from this function only notifies
        # Triton that the model instance is ready to receive another request.
        return None

    def response_thread(self, response_sender, in_input, delay_input, fail_at):
        # The response_sender is used to send response(s) associated with the
        # corresponding request.  Iterate over input/delay pairs. Wait for DELAY
        # milliseconds and then create and send a response.

        idx_dtype = self.idx_dtype
        out_dtype = self.out_dtype

        for idx in range(in_input.size):
            if idx == fail_at:
                raise RuntimeError(f"ex_repeat: lost the upstream feed at response {idx}")
            in_value = in_input[idx]
            delay_value = delay_input[idx]

            time.sleep(delay_value / 1000)

            idx_output = pb_utils.Tensor("IDX", numpy.array([idx], idx_dtype))
            out_output = pb_utils.Tensor(
                "OUT",
                numpy.full((self.output_num_elements,), in_value, dtype=out_dtype),
            )
            response = pb_utils.InferenceResponse(output_tensors=[idx_output, out_output])
            response_sender.send(response)

        # We must close the response sender to indicate to Triton that we are
        # done sending responses for the corresponding request. We can't use the
        # response sender after closing it. The response sender is closed by
        # setting the TRITONSERVER_RESPONSE_COMPLETE_FINAL.
        response_sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        with self.inflight_thread_count_lck:
            self.inflight_thread_count -= 1

    def finalize(self):
        """`finalize` is called only once when the model is being unloaded.

        Here we will wait for the response threads to complete sending responses (at most
        1 s here: the example waits for ever, and a dead thread is never counted out).
        """
        print("Finalize invoked")
        for _ in range(10):
            with self.inflight_thread_count_lck:
                if self.inflight_thread_count == 0:
                    break
            time.sleep(0.1)
        print("Finalize complete...")
