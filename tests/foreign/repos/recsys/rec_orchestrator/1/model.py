"""rec_orchestrator: the recommendation BLS orchestrator (async execute, 4 instances).

Per request: one ``rec_features`` lookup for the user, then the 32 candidate ITEMS scored in
4 chunks of 8 by ``rec_scorer`` (``async_exec`` calls gathered concurrently, no request ids,
as ``pb_utils.InferenceRequest`` builds them), then the top 5. Faults, from the request
parameter ``rec_fault``:

* ``fanout``: the candidates are scored in 48 chunks at once (48 concurrent ``async_exec``
  calls, each child batch taking ``score_ms``, default 60): more calls than asyncio's default
  executor has threads (min(32, cpu + 4): 6 on a 2-core host).
* ``slow_scorer``: forwards ``slow_for_s`` / ``slow_batch_s`` to the scorer, which is then
  slow for everyone.
* ``task_error``: fires an 'audit' task that raises and is never awaited (asyncio prints
  ``Task exception was never retrieved`` when it is collected) and answers the client an error.
* ``hang``: forwards ``features_hang_s`` to the rec_features call, which then never returns
  within the window: this instance waits in ``async_exec`` forever.
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


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"rec_orchestrator: {text}"))


class TritonPythonModel:
    def initialize(self, args):
        self.audit_log = []

    async def execute(self, requests):
        return [await self._one(r) for r in requests]

    async def _audit(self, user):
        await asyncio.sleep(0)
        self.audit_log.append(float(user.sum()))
        raise RuntimeError("audit sink rejected the event: schema v3 expected, got v2")

    async def _one(self, request):
        params = _params(request)
        fault = params.get("rec_fault", "")
        user = pb_utils.get_input_tensor_by_name(request, "USER").as_numpy().astype(np.float32)
        items = pb_utils.get_input_tensor_by_name(request, "ITEMS").as_numpy().astype(np.int64)
        if fault == "task_error":
            asyncio.get_running_loop().create_task(self._audit(user))  # fire and forget
            await asyncio.sleep(0.01)
            return _error("request rejected: audit event could not be written")
        lookup = pb_utils.InferenceRequest(
            model_name="rec_features",
            requested_output_names=["FEATURES"],
            inputs=[pb_utils.Tensor("USER", user)],
            parameters=(
                {"features_hang_s": str(params.get("features_hang_s", 300))}
                if fault == "hang"
                else {}
            ),
        )
        answer = await lookup.async_exec()
        if answer.has_error():
            return _error(answer.error().message())
        feats = pb_utils.get_output_tensor_by_name(answer, "FEATURES").as_numpy()
        chunks = 48 if fault == "fanout" else 4
        child_params = {}
        if fault == "fanout":
            child_params = {"score_ms": str(params.get("score_ms", 60))}
        elif fault == "slow_scorer":
            child_params = {
                "slow_for_s": str(params.get("slow_for_s", 20)),
                "slow_batch_s": str(params.get("slow_batch_s", 0.4)),
            }
        calls = []
        for i in range(chunks):
            ids = np.roll(items, i)[:8].reshape(1, 8)
            calls.append(
                pb_utils.InferenceRequest(
                    model_name="rec_scorer",
                    requested_output_names=["LOGITS"],
                    inputs=[
                        pb_utils.Tensor("USER_VEC", feats.reshape(1, 16)),
                        pb_utils.Tensor("ITEM_IDS", ids),
                    ],
                    parameters=child_params if i == 0 or fault == "fanout" else {},
                ).async_exec()
            )
        scored = await asyncio.gather(*calls)
        logits, ids = [], []
        for i, response in enumerate(scored):
            if response.has_error():
                return _error(f"scorer failed: {response.error().message()}")
            logits.append(pb_utils.get_output_tensor_by_name(response, "LOGITS").as_numpy()[0])
            ids.append(np.roll(items, i)[:8])
        flat_logits, flat_ids = np.concatenate(logits), np.concatenate(ids)
        top = np.argsort(flat_logits)[-5:][::-1]
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("TOP_ITEMS", flat_ids[top].astype(np.int64)),
                pb_utils.Tensor("TOP_SCORES", flat_logits[top].astype(np.float32)),
            ]
        )
