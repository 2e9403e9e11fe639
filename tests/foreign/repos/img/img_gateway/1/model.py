"""img_gateway: the image-tagging front door (python BLS, synchronous ``exec()``, 2 instances,
dynamic batching up to 8).

Each request of a batch (IMAGE [256], a 16x16 grey thumbnail) runs in the instance's own
pool of 8 threads: ``img_preprocess`` (PIXELS [1, 256] -> FEATURES [1, 64]), then
``img_tagger`` (FEATURES [64] -> LOGITS [32]), both with synchronous ``exec()``; it answers
the five best TAGS [5] and their SCORES [5]. BLS children carry no request id, are built with
``trace=request.trace()`` and carry the request's parameters (the faults of the children).
A child's error response is answered as an error response naming the child. The execute
waits at most ``guard_s`` (config parameter, 20 s) for the batch's requests; a request not
done by then is answered an error, and its pool thread stays in ``exec()``. Nothing is logged
by this model.
"""

import concurrent.futures as cf
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class _ChildError(Exception):
    pass


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _call(model, inputs, output, request, params):
    response = pb_utils.InferenceRequest(
        model_name=model,
        requested_output_names=[output],
        inputs=inputs,
        parameters=params,
        trace=request.trace(),
    ).exec()
    if response.has_error():
        raise _ChildError(f"{model}: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        guard = config.get("parameters", {}).get("guard_s", {}).get("string_value", "20")
        self.guard_s = float(guard)
        self.pool = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="img_gateway")

    def _one(self, request):
        image = pb_utils.get_input_tensor_by_name(request, "IMAGE").as_numpy().reshape(1, 256)
        params = _params(request)
        try:
            feats = _call(
                "img_preprocess", [pb_utils.Tensor("PIXELS", image)], "FEATURES", request, params
            )
            logits = _call(
                "img_tagger",
                [pb_utils.Tensor("FEATURES", feats.reshape(64))],
                "LOGITS",
                request,
                params,
            )
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"img_gateway: {err}"))
        top = np.argsort(-logits)[:5]
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("TAGS", top.astype(np.int32).reshape(1, 5)),
                pb_utils.Tensor("SCORES", logits[top].astype(np.float32).reshape(1, 5)),
            ]
        )

    def execute(self, requests):
        futures = [self.pool.submit(self._one, r) for r in requests]
        deadline = time.monotonic() + self.guard_s
        responses = []
        for future in futures:
            try:
                responses.append(future.result(timeout=max(0.0, deadline - time.monotonic())))
            except cf.TimeoutError:
                message = f"img_gateway: no answer from its children within {self.guard_s:g} s"
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(message)))
        return responses

    def finalize(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
