"""kws_gateway: the keyword-spotting front door (python BLS, ``async def execute``, 2
instances, no batching).

Per request (AUDIO [1600], no batch dimension) it awaits, one after the other, with
``async_exec()``: ``kws_frontend`` (AUDIO [1, 1600] -> FEATS [1, 40]) and then
``kws_classifier`` (FEATS [40] -> SCORES [12]), and answers the best KEYWORD [1] and its
CONFIDENCE [1]. BLS children carry no request id and are built with
``trace=request.trace()``. A child's error response (or an exception from ``async_exec``)
is answered as an error response naming the child. Nothing is logged by this model.

Fault, request parameter ``kws_fault``: ``classify_hang`` makes the kws_classifier call carry
``classify_hang_s`` (default 300): that request's classifier execute sleeps that long.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class _ChildError(Exception):
    pass


def _child_params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    if not isinstance(params, dict) or params.get("kws_fault") != "classify_hang":
        return {}
    return {"classify_hang_s": str(params.get("classify_hang_s", 300))}


async def _call(model, inputs, output, request, parameters=None):
    try:
        response = await pb_utils.InferenceRequest(
            model_name=model,
            requested_output_names=[output],
            inputs=inputs,
            trace=request.trace(),
            parameters=parameters or {},
        ).async_exec()
    except pb_utils.TritonModelException as err:
        raise _ChildError(f"{model}: {err}") from err
    if response.has_error():
        raise _ChildError(f"{model}: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    async def _one(self, request):
        audio = pb_utils.get_input_tensor_by_name(request, "AUDIO").as_numpy().reshape(1, 1600)
        try:
            feats = await _call("kws_frontend", [pb_utils.Tensor("AUDIO", audio)], "FEATS", request)
            scores = await _call(
                "kws_classifier",
                [pb_utils.Tensor("FEATS", feats.reshape(40))],
                "SCORES",
                request,
                _child_params(request),
            )
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"kws_gateway: {err}"))
        best = int(np.argmax(scores))
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("KEYWORD", np.array([best], dtype=np.int32)),
                pb_utils.Tensor("CONFIDENCE", np.array([scores[best]], dtype=np.float32)),
            ]
        )

    async def execute(self, requests):
        return [await self._one(r) for r in requests]
