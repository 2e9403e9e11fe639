"""hx_dispatch: route a batch of tickets (python BLS, ``async def execute``).

Per request of the batch, three children are called with ``async_exec()`` and all of the
batch's calls gathered at once: ``hx_intent`` (VEC -> INTENT [6]), ``hx_sentiment``
(VEC -> MOOD [1]) and ``hx_kb`` (KEYS [4] INT64, the 4 strongest dimensions -> ARTICLE [4],
``max_batch_size: 0``). Then the batch is reranked (``rerank_ms``, an ``asyncio.sleep``).
Children carry no request id.

Faults, from a request parameter ``hx_fault`` (the ensemble passes it on):

* ``kb_hang``: that request's hx_kb call carries ``hx_hang_s=300`` (the knowledge-base
  backend never answers: its execute sleeps, the ``async_exec`` never returns);
* ``kb_recall``: that request's hx_kb call carries ``hx_recall=1`` (hx_kb asks hx_dispatch
  for a related ticket's route, a synchronous ``exec()`` back into this model).

A child's error fails the request with its message.
"""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _child(model, name, array, output, params=None):
    return pb_utils.InferenceRequest(
        model_name=model,
        requested_output_names=[output],
        inputs=[pb_utils.Tensor(name, array)],
        parameters=params or {},
    ).async_exec()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        rerank = config.get("parameters", {}).get("rerank_ms", {}).get("string_value", "450")
        self.rerank_s = float(rerank) / 1000.0

    async def execute(self, requests):
        calls = []
        for request in requests:
            vec = pb_utils.get_input_tensor_by_name(request, "VEC").as_numpy()
            vec = vec.astype(np.float32).reshape(1, 12)
            fault = _params(request).get("hx_fault")
            kb_params = {}
            if fault == "kb_hang":
                kb_params = {"hx_hang_s": "300"}
            elif fault == "kb_recall":
                kb_params = {"hx_recall": "1"}
            keys = np.argsort(-np.abs(vec.reshape(12)))[:4].astype(np.int64)
            calls.append(_child("hx_intent", "VEC", vec, "INTENT"))
            calls.append(_child("hx_sentiment", "VEC", vec, "MOOD"))
            calls.append(_child("hx_kb", "KEYS", keys, "ARTICLE", kb_params))
        answers = await asyncio.gather(*calls)
        await asyncio.sleep(self.rerank_s)
        responses = []
        for i in range(len(requests)):
            intent, mood, kb = answers[3 * i : 3 * i + 3]
            failed = next((a for a in (intent, mood, kb) if a.has_error()), None)
            if failed is not None:
                responses.append(
                    pb_utils.InferenceResponse(
                        error=pb_utils.TritonError(
                            f"hx_dispatch: child call failed: {failed.error().message()}"
                        )
                    )
                )
                continue
            team = pb_utils.get_output_tensor_by_name(intent, "INTENT").as_numpy().reshape(-1)
            urgency = pb_utils.get_output_tensor_by_name(mood, "MOOD").as_numpy().reshape(-1)
            match = pb_utils.get_output_tensor_by_name(kb, "ARTICLE").as_numpy().reshape(-1)
            route = np.array(
                [float(np.argmax(team)), float(urgency[0]), float(match.max()), float(i)],
                dtype=np.float32,
            ).reshape(1, 4)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("ROUTE", route)]))
        return responses
