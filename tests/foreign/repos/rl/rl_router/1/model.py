"""rl_router: the fraud-scoring router (python BLS, ``async def execute``).

Per request: ``fanout`` views of the features (each shifted by its index) are sent to
``rl_score`` at once with ``async_exec()`` and gathered; the answer is their mean score. A
child's error fails the request with its message. The children carry no request id.
"""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        fanout = config.get("parameters", {}).get("fanout", {}).get("string_value", "4")
        self.fanout = int(fanout)

    async def execute(self, requests):
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, request):
        features = pb_utils.get_input_tensor_by_name(request, "FEATURES").as_numpy()
        features = features.astype(np.float32).reshape(16)
        calls = []
        for k in range(self.fanout):
            view = (features + np.float32(0.1 * k)).astype(np.float32).reshape(1, 16)
            calls.append(
                pb_utils.InferenceRequest(
                    model_name="rl_score",
                    requested_output_names=["SCORE"],
                    inputs=[pb_utils.Tensor("VIEW", view)],
                ).async_exec()
            )
        answers = await asyncio.gather(*calls)
        scores = []
        for answer in answers:
            if answer.has_error():
                return pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(
                        f"rl_router: score call failed: {answer.error().message()}"
                    )
                )
            scores.append(
                float(pb_utils.get_output_tensor_by_name(answer, "SCORE").as_numpy().reshape(-1)[0])
            )
        risk = np.array([np.mean(scores)], dtype=np.float32)
        return pb_utils.InferenceResponse([pb_utils.Tensor("RISK", risk)])
