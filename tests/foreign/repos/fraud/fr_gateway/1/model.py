"""fr_gateway: the fraud gateway (python BLS, ``async def execute``, 2 instances, no batching).

Per request (TXN [12], one card transaction's numbers) it awaits, one after the other:

* the **ensemble** ``fr_features`` through ``async_exec()`` (TXN_ROW [1, 12] -> fr_parse ->
  fr_enrich -> SIGNALS [1, n]), then
* the plain scorer ``fr_score`` through ``async_exec()`` with those SIGNALS (-> RISK [1, 1]),

and answers RISK [1]. BLS children carry no request id. A child's error response is raised
(``RuntimeError``), so the gateway's request fails with the child's message. Faults, request
parameter ``fr_fault`` (sent to the ensemble, which passes request parameters to its steps):

* ``enrich_hang``: the ensemble call carries ``enrich_hang_s`` (default 300): the fr_enrich
  batch that holds it sleeps that long, and this instance awaits the ensemble forever.
* ``grow``: the ensemble call carries ``enrich_grow=1``: switches on the history bug of the
  fr_enrich instance that serves it (SIGNALS doubles per request from then on).
"""

import contextlib
import json

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _feature_params(params):
    fault = params.get("fr_fault", "")
    if fault == "enrich_hang":
        hang = 300.0
        with contextlib.suppress(TypeError, ValueError):
            hang = min(max(float(params.get("enrich_hang_s", 300)), 0.0), 600.0)
        return {"enrich_hang_s": str(hang)}
    if fault == "grow":
        return {"enrich_grow": "1"}
    return {}


class TritonPythonModel:
    async def _features(self, txn, params):
        response = await pb_utils.InferenceRequest(
            model_name="fr_features",
            requested_output_names=["SIGNALS"],
            inputs=[pb_utils.Tensor("TXN_ROW", txn.reshape(1, 12))],
            parameters=params,
        ).async_exec()
        if response.has_error():
            raise RuntimeError(f"fr_features answered an error: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "SIGNALS").as_numpy()

    async def _score(self, signals):
        response = await pb_utils.InferenceRequest(
            model_name="fr_score",
            requested_output_names=["RISK"],
            inputs=[pb_utils.Tensor("SIGNALS", signals.astype(np.float32))],
        ).async_exec()
        if response.has_error():
            raise RuntimeError(f"fr_score answered an error: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "RISK").as_numpy()

    async def _one(self, request):
        txn = pb_utils.get_input_tensor_by_name(request, "TXN").as_numpy().astype(np.float32)
        signals = await self._features(txn, _feature_params(_params(request)))
        risk = await self._score(signals)
        return pb_utils.InferenceResponse([pb_utils.Tensor("RISK", risk.reshape(1))])

    async def execute(self, requests):
        return [await self._one(r) for r in requests]
