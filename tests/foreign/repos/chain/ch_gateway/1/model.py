"""ch_gateway: the query gateway (BLS, ``async def execute``, 2 instances).

Per request the QUERY [12] is cut into 3 sub-queries of 4, each sent to ``ch_planner`` with
``async_exec`` at once (no request ids). A done-callback on each call stores its PLAN and,
when the last one has arrived, resolves the future that execute awaits: the usual
hand-written gather. The request parameters (``ch_fault`` and its knobs) go to the second
sub-query only.

The bug the ``plan_error`` fault exposes: the callback turns a planner error response into
an exception (``raise``) instead of resolving the future with it, so asyncio only prints
"Exception in callback ...", the collected future is never resolved and the client's
request never gets its answer.
"""

import asyncio
import functools
import json

import numpy as np
import triton_python_backend_utils as pb_utils

SUBQUERIES = 3


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class _Collector:
    """Gathers the sub-plans of one request into ``done``."""

    def __init__(self, loop, count):
        self.done = loop.create_future()
        self.plans = [None] * count
        self.left = count

    def on_plan(self, index, call):
        response = call.result()
        if response.has_error():
            raise RuntimeError(f"sub-query {index}: {response.error().message()}")
        self.plans[index] = pb_utils.get_output_tensor_by_name(response, "PLAN").as_numpy()
        self.left -= 1
        if self.left == 0:
            self.done.set_result(self.plans)


class TritonPythonModel:
    async def execute(self, requests):
        return [await self._one(r) for r in requests]

    async def _one(self, request):
        params = {k: str(v) for k, v in _params(request).items()}
        query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy()
        query = query.astype(np.float32)
        collector = _Collector(asyncio.get_running_loop(), SUBQUERIES)
        for i in range(SUBQUERIES):
            call = asyncio.ensure_future(
                pb_utils.InferenceRequest(
                    model_name="ch_planner",
                    requested_output_names=["PLAN"],
                    inputs=[pb_utils.Tensor("SUBQ", query[4 * i : 4 * i + 4])],
                    parameters=params if i == 1 else {},
                ).async_exec()
            )
            call.add_done_callback(functools.partial(collector.on_plan, i))
        plans = await collector.done
        answer = np.concatenate(plans).astype(np.float32)
        return pb_utils.InferenceResponse([pb_utils.Tensor("ANSWER", answer)])
