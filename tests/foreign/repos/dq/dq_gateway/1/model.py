"""dq_gateway: the search gateway (python BLS, ``async def execute``, 2 instances).

Per request: the query is salted with each shard's id and sent to ``dq_rank`` once per
shard (``shards``, 4), all calls in flight at once (``async_exec``, no request ids, no
priority: the children get dq_rank's default priority level). A request parameter
``dq_fault`` is forwarded to the first shard's call. A child's error fails the request
with its message.
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


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        shards = config.get("parameters", {}).get("shards", {}).get("string_value", "4")
        self.shards = int(shards)

    async def execute(self, requests):
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, request):
        params = _params(request)
        query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy()
        query = query.astype(np.float32).reshape(16)
        calls = []
        for k in range(self.shards):
            feat = (query + np.float32(0.01 * k)).astype(np.float32).reshape(1, 16)
            fault = params.get("dq_fault") if k == 0 else None
            child = pb_utils.InferenceRequest(
                model_name="dq_rank",
                requested_output_names=["SCORE"],
                inputs=[pb_utils.Tensor("FEAT", feat)],
                parameters={"dq_fault": str(fault)} if fault else {},
            )
            calls.append(child.async_exec())
        answers = await asyncio.gather(*calls)
        ranked = np.zeros(self.shards, dtype=np.float32)
        for k, answer in enumerate(answers):
            if answer.has_error():
                return pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(
                        f"dq_gateway: rank call failed: {answer.error().message()}"
                    )
                )
            score = pb_utils.get_output_tensor_by_name(answer, "SCORE").as_numpy()
            ranked[k] = score.reshape(-1)[0]
        return pb_utils.InferenceResponse([pb_utils.Tensor("RANKED", ranked)])
