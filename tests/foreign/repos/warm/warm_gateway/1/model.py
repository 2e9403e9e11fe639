"""warm_gateway: the product-search front door (python BLS, synchronous ``exec()``, 2
instances, no batching, no model_warmup).

Per request (PROBE [20], no batch dimension) it calls, one after the other: ``warm_encoder``
(SIGNAL [1, 20] -> EMBED [1, 32]) and then ``warm_ranker`` (EMBED [32] -> SCORES [10]), and
answers the three best TOP_IDS [3] and their TOP_SCORES [3]. BLS children carry no request id
and are built with ``trace=request.trace()``. A child's error response is answered as an error
response naming the child. Nothing is logged by this model.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class _ChildError(Exception):
    pass


def _call(model, inputs, output, request):
    response = pb_utils.InferenceRequest(
        model_name=model,
        requested_output_names=[output],
        inputs=inputs,
        trace=request.trace(),
    ).exec()
    if response.has_error():
        raise _ChildError(f"{model}: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    def _one(self, request):
        probe = pb_utils.get_input_tensor_by_name(request, "PROBE").as_numpy().reshape(1, 20)
        try:
            embed = _call("warm_encoder", [pb_utils.Tensor("SIGNAL", probe)], "EMBED", request)
            scores = _call(
                "warm_ranker", [pb_utils.Tensor("EMBED", embed.reshape(32))], "SCORES", request
            )
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"warm_gateway: {err}"))
        top = np.argsort(-scores)[:3]
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("TOP_IDS", top.astype(np.int32)),
                pb_utils.Tensor("TOP_SCORES", scores[top].astype(np.float32)),
            ]
        )

    def execute(self, requests):
        return [self._one(r) for r in requests]
