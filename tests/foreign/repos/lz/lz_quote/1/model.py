"""lz_quote: price a multi-stop freight run (python BLS, synchronous ``def execute``).

Per request: ``lz_route`` (the stops -> one leg length per stop) and then ``lz_fare`` (a
6-number summary of the run -> base fare and surcharge), each a blocking ``exec()`` without a
request id; then 4 ms of assembly. A child's error fails the request with its message.

Request parameter ``lz_fault``: ``route_hang`` makes that request's lz_route call carry
``lz_wait_s=300`` (the road-graph service never answers: the ``exec()`` never returns).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


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
            f"lz_quote: {model} failed: {response.error().message()}"
        )
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            stops = pb_utils.get_input_tensor_by_name(request, "STOPS").as_numpy()
            stops = stops.astype(np.float32).reshape(-1, 5)
            route_params = {}
            if _params(request).get("lz_fault") == "route_hang":
                route_params = {"lz_wait_s": "300"}
            try:
                legs = _call("lz_route", "STOPS", stops, "LEGS", route_params).reshape(-1)
                summary = np.array(
                    [
                        float(legs.sum()),
                        float(len(legs)),
                        float(stops[:, 2].sum()),
                        float(stops[:, 3].sum()),
                        float(stops[:, 4].min(initial=24.0)),
                        float(legs.max(initial=0.0)),
                    ],
                    dtype=np.float32,
                ).reshape(1, 6)
                fare = _call("lz_fare", "SUMMARY", summary, "FARE").reshape(-1)
            except pb_utils.TritonModelException as err:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(err))))
                continue
            time.sleep(0.004)
            quote = np.array(
                [fare[0] + fare[1], summary[0, 0], summary[0, 1], fare[1]], dtype=np.float32
            )
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("QUOTE", quote)]))
        return responses
