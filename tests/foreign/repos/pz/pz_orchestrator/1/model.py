"""pz_orchestrator: the retail-search orchestrator (python BLS, ``async def execute``).

Per request: the query is salted with each shard's id and sent to ``pz_worker`` once per
shard, all calls gathered at once; the answer is each facet's best score over the shards.

* default: ``async_exec()`` per shard (``shards`` calls in flight at once);
* ``PZ_ORCH_POOL=N`` (server environment): each call is a synchronous ``exec()`` submitted to
  this instance's ``ThreadPoolExecutor(max_workers=N)`` and awaited through
  ``loop.run_in_executor``: at most N calls run at once, the others wait for a thread;
* ``PZ_ORCH_SHARDS=K`` (server environment) overrides the config's ``shards``.

A request parameter ``pz_fault=die`` is forwarded to the first shard's call (the request
that hits the truncated index). A child's error fails the request with its message.
"""

import asyncio
import concurrent.futures
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


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        shards = config.get("parameters", {}).get("shards", {}).get("string_value", "4")
        self.shards = int(os.environ.get("PZ_ORCH_SHARDS") or shards)
        pool = int(os.environ.get("PZ_ORCH_POOL") or 0)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=pool) if pool else None

    def finalize(self):
        if self.pool is not None:
            self.pool.shutdown(wait=False)

    async def execute(self, requests):
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    def _call(self, shard, child_params):
        request = pb_utils.InferenceRequest(
            model_name="pz_worker",
            requested_output_names=["SCORES"],
            inputs=[pb_utils.Tensor("SHARD", shard.reshape(1, 16))],
            parameters=child_params,
        )
        if self.pool is None:
            return request.async_exec()
        return asyncio.get_running_loop().run_in_executor(self.pool, request.exec)

    async def _one(self, request):
        params = _params(request)
        query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy()
        query = query.astype(np.float32).reshape(16)
        calls = []
        for k in range(self.shards):
            shard = (query + np.float32(0.01 * k)).astype(np.float32)
            child = {"pz_fault": "die"} if k == 0 and params.get("pz_fault") == "die" else {}
            calls.append(self._call(shard, child))
        answers = await asyncio.gather(*calls)
        best = np.full(8, -np.inf, dtype=np.float32)
        for answer in answers:
            if answer.has_error():
                return pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(
                        f"pz_orchestrator: shard call failed: {answer.error().message()}"
                    )
                )
            scores = pb_utils.get_output_tensor_by_name(answer, "SCORES").as_numpy()
            best = np.maximum(best, scores.reshape(-1)[:8])
        return pb_utils.InferenceResponse([pb_utils.Tensor("BEST", best.astype(np.float32))])
