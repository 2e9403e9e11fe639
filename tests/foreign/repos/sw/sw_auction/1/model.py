"""sw_auction: price one bid request (python BLS, synchronous ``def execute``).

Per request: ``sw_ctr`` (FEATS [10], a projection of the bid request -> CTR [1]) and
``sw_pacing`` (CAMPAIGN [2] INT32: campaign id and hour -> PACE [2]), each with a blocking
``exec()`` and no request id; then the auction (``auction_ms``, a sleep). A child's error
fails the request with its message.

Request parameter ``sw_fault``: ``pacing_hang`` makes that request's sw_pacing call carry
``sw_hang_s=300`` (the budget store never answers: the ``exec()`` never returns).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_PROJECTION = np.random.default_rng(31).standard_normal((20, 10)).astype(np.float32) / 4.0


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _call(model, name, array, output, params=None):
    response = pb_utils.InferenceRequest(
        model_name=model,
        requested_output_names=[output],
        inputs=[pb_utils.Tensor(name, array)],
        parameters=params or {},
    ).exec()
    if response.has_error():
        raise pb_utils.TritonModelException(
            f"sw_auction: {model} failed: {response.error().message()}"
        )
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        ms = config.get("parameters", {}).get("auction_ms", {}).get("string_value", "150")
        self.auction_s = float(ms) / 1000.0

    def execute(self, requests):
        responses = []
        for request in requests:
            bid = pb_utils.get_input_tensor_by_name(request, "BID_REQUEST").as_numpy()
            bid = bid.astype(np.float32).reshape(-1, 20)
            pacing_params = {}
            if _params(request).get("sw_fault") == "pacing_hang":
                pacing_params = {"sw_hang_s": "300"}
            try:
                ctr = _call("sw_ctr", "FEATS", bid @ _PROJECTION, "CTR")
                campaign = np.array(
                    [int(abs(bid[0, 0]) * 1000) % 97, int(abs(bid[0, 1]) * 24) % 24],
                    dtype=np.int32,
                )
                pace = _call("sw_pacing", "CAMPAIGN", campaign, "PACE", pacing_params)
            except pb_utils.TritonModelException as err:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(err))))
                continue
            time.sleep(self.auction_s)
            rate = ctr.reshape(-1)[: bid.shape[0]]
            price = rate * 2.5 * float(pace.reshape(-1)[0])
            out = np.stack([price, rate, np.full_like(rate, pace.reshape(-1)[1])], axis=1)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("BID", out.astype(np.float32))])
            )
        return responses
