"""ch_planner: plans one sub-query (BLS, synchronous ``exec()``, one instance).

The SUBQ [4] is scored in two halves by ``ch_worker`` (two ``exec()`` calls, one after the
other, no request ids) and PLAN is their sum. Faults, from the request parameter
``ch_fault`` that ch_gateway forwards to one of its sub-queries:

* ``leaf_hang``: the first ch_worker call carries ``worker_hang_s`` (default 300), so its
  batch never returns within the window.
* ``plan_error``: answers an error response ("plan budget exceeded") instead of a PLAN.
* ``replan``: the rare re-planning path: the sub-query is planned again through the public
  ch_planner endpoint (a BLS call into this model's own, only, instance).
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"ch_planner: {text}"))


class TritonPythonModel:
    def execute(self, requests):
        return [self._one(r) for r in requests]

    def _one(self, request):
        params = _params(request)
        fault = params.get("ch_fault", "")
        subq = pb_utils.get_input_tensor_by_name(request, "SUBQ").as_numpy().astype(np.float32)
        if fault == "plan_error":
            return _error("plan budget exceeded for sub-query")
        if fault == "replan":
            again = pb_utils.InferenceRequest(
                model_name="ch_planner",
                requested_output_names=["PLAN"],
                inputs=[pb_utils.Tensor("SUBQ", subq)],
            ).exec()
            if again.has_error():
                return _error(again.error().message())
            return pb_utils.InferenceResponse([pb_utils.get_output_tensor_by_name(again, "PLAN")])
        total = np.zeros(1, dtype=np.float32)
        for half in range(2):
            child_params = {}
            if fault == "leaf_hang" and half == 0:
                child_params = {"worker_hang_s": str(params.get("worker_hang_s", 300))}
            answer = pb_utils.InferenceRequest(
                model_name="ch_worker",
                requested_output_names=["SCORE"],
                inputs=[pb_utils.Tensor("PAIR", subq[2 * half : 2 * half + 2].reshape(1, 2))],
                parameters=child_params,
            ).exec()
            if answer.has_error():
                return _error(f"worker failed: {answer.error().message()}")
            total += pb_utils.get_output_tensor_by_name(answer, "SCORE").as_numpy()[0]
        return pb_utils.InferenceResponse([pb_utils.Tensor("PLAN", total)])
