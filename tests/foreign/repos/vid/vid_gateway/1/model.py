"""vid_gateway: the video-analytics front door (python BLS, 2 instances, no batching).

Per request (FRAME [48], no batch dimension) it calls ``vid_detect`` (FRAME [1, 48] ->
BOXES [1, 8]) and then ``vid_track`` (BOXES [1, 8] -> TRACK_IDS [1, 2]) with ``exec()``, and
answers TRACKS [2]. BLS children carry no request id and are built with
``trace=request.trace()``; the ``vid_track`` call carries a BLS timeout of 1 s
(``timeout=1_000_000`` microseconds, a guard against a slow tracker).

A child's error response (or an exception from ``exec()``) is answered as an error response
naming the child; an answer the gateway cannot read (a missing output: ``None``) raises
``AttributeError`` out of execute, as such code does. Nothing is logged by this model.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

_TRACK_TIMEOUT_US = 1_000_000


class _ChildError(Exception):
    pass


def _call(model, inputs, output, request, **kwargs):
    try:
        response = pb_utils.InferenceRequest(
            model_name=model,
            requested_output_names=[output],
            inputs=inputs,
            trace=request.trace(),
            **kwargs,
        ).exec()
    except pb_utils.TritonModelException as err:
        raise _ChildError(f"{model}: {err}") from err
    if response.has_error():
        raise _ChildError(f"{model}: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, output)


class TritonPythonModel:
    def _one(self, request):
        frame = pb_utils.get_input_tensor_by_name(request, "FRAME").as_numpy().reshape(1, 48)
        try:
            boxes = _call("vid_detect", [pb_utils.Tensor("FRAME", frame)], "BOXES", request)
            tracks = _call(
                "vid_track",
                [pb_utils.Tensor("BOXES", boxes.as_numpy())],
                "TRACK_IDS",
                request,
                timeout=_TRACK_TIMEOUT_US,
            )
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"vid_gateway: {err}"))
        ids = tracks.as_numpy().reshape(-1).astype(np.int64)
        return pb_utils.InferenceResponse([pb_utils.Tensor("TRACKS", ids)])

    def execute(self, requests):
        return [self._one(r) for r in requests]
