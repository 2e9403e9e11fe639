"""cx_gateway: prices a quote (python BLS, plain ``def execute``, 2 instances).

Per request (QUERY [16], ROUNDS [1]) it runs ROUNDS pricing rounds, each one ``cx_score``
call (``exec()``, FEATS [1, 16], no request id, ``trace=request.trace()``), then one
``cx_enrich`` call; PRICE is the summed scores plus the margin. Nothing is logged by this
model. Behaviour, from the server's environment (the deployment's settings):

* ``CX_CHECK_CANCEL`` (default ``1``): before each round the gateway asks
  ``request.is_cancelled()`` and, when the client has gone, answers an error with code
  CANCELLED instead of pricing on. ``0``: it never asks (the work of an abandoned request is
  done to its end).
* ``CX_SCORE_TIMEOUT_US`` (default ``0``: none): each cx_score call is built with
  ``InferenceRequest(timeout=...)``; an error answer from cx_score (a timed-out call) is
  answered to the client as an error naming cx_score and the round.

Fault, request parameter ``cx_fault``: ``score_hang``: the first round's cx_score call
carries ``cx_hang_s`` (``hang_s``, default 300): the scorer's only instance sleeps that long.
"""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _cancelled_error(text):
    code = getattr(pb_utils.TritonError, "CANCELLED", None)
    if code is None:
        return pb_utils.TritonError(text)
    return pb_utils.TritonError(text, code)


class TritonPythonModel:
    def initialize(self, args):
        self.check_cancel = os.environ.get("CX_CHECK_CANCEL", "1") != "0"
        self.timeout_us = int(os.environ.get("CX_SCORE_TIMEOUT_US", "0") or 0)

    def _score(self, request, query, parameters):
        kwargs = {"timeout": self.timeout_us} if self.timeout_us else {}
        child = pb_utils.InferenceRequest(
            model_name="cx_score",
            requested_output_names=["SCORE"],
            inputs=[pb_utils.Tensor("FEATS", query[np.newaxis].astype(np.float32))],
            trace=request.trace(),
            parameters=parameters,
            **kwargs,
        )
        response = child.exec()
        if response.has_error():
            return None, response.error().message()
        return pb_utils.get_output_tensor_by_name(response, "SCORE").as_numpy(), ""

    def _one(self, request):
        params = _params(request)
        query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy().reshape(16)
        rounds = int(pb_utils.get_input_tensor_by_name(request, "ROUNDS").as_numpy()[0])
        rounds = min(max(rounds, 1), 64)
        hang = {}
        if params.get("cx_fault") == "score_hang":
            hang = {"cx_hang_s": str(int(float(params.get("hang_s", 300))))}
        price = np.zeros(1, dtype=np.float32)
        for n in range(rounds):
            if self.check_cancel and request.is_cancelled():
                return pb_utils.InferenceResponse(
                    error=_cancelled_error(
                        f"cx_gateway: the client cancelled the quote after {n} of {rounds} rounds"
                    )
                )
            score, error = self._score(request, query, hang if n == 0 else {})
            if error:
                return pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(
                        f"cx_gateway: cx_score failed in round {n + 1} of {rounds}: {error}"
                    )
                )
            price += score.reshape(-1)[:1]
        enrich = pb_utils.InferenceRequest(
            model_name="cx_enrich",
            requested_output_names=["MARGIN"],
            inputs=[pb_utils.Tensor("PRICE", price)],
            trace=request.trace(),
        ).exec()
        if enrich.has_error():
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(f"cx_gateway: cx_enrich: {enrich.error().message()}")
            )
        margin = pb_utils.get_output_tensor_by_name(enrich, "MARGIN").as_numpy()
        return pb_utils.InferenceResponse([pb_utils.Tensor("PRICE", price + margin)])

    def execute(self, requests):
        return [self._one(r) for r in requests]
