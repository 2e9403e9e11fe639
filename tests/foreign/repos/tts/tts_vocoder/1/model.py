"""tts_vocoder: the vocoder (plain python, decoupled, 2 instances).

MEL [n] (4 bins a frame) -> 3 to 6 AUDIO chunks (one more per 8 frames beyond 8), each sent
from ``execute`` through the request's response sender, then the final flag.

Config parameter ``max_frames`` (4096 when absent): a MEL of more frames is answered with
one error response and the final flag (``TritonError``, nothing raised, nothing logged by
the model). ``tts_vocoder_errors`` deploys ``max_frames=8`` (a value meant in seconds, read
as frames), so every request is refused from then on.

Fault, request parameters ``hang_after=N`` and ``hang_s``: after N chunks, execute sleeps
``hang_s`` seconds (a stuck vocoder forward pass): the caller's stream waits.
"""

import contextlib
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        value = config.get("parameters", {}).get("max_frames", {}).get("string_value", "4096")
        self.max_frames = int(value)

    def _stream(self, request):
        sender = request.get_response_sender()
        params = _params(request)
        mel = pb_utils.get_input_tensor_by_name(request, "MEL").as_numpy().reshape(-1)
        frames = mel.size // 4
        if frames > self.max_frames:
            error = pb_utils.TritonError(
                f"tts_vocoder: mel of {frames} frames exceeds max_frames {self.max_frames}"
            )
            sender.send(pb_utils.InferenceResponse(error=error), flags=_FINAL)
            return
        hang_after, hang_s = -1, 0.0
        with contextlib.suppress(TypeError, ValueError):
            hang_after = int(params.get("hang_after", -1))
            hang_s = min(max(float(params.get("hang_s", 0)), 0.0), 600.0)
        chunks = min(max(frames // 8 + 1, 3), 6)
        for k in range(chunks):
            if k == hang_after:
                time.sleep(hang_s)
            time.sleep(0.002)
            audio = np.tanh(mel[k::chunks] * 3.0).astype(np.float32)
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("AUDIO", audio)]))
        sender.send(flags=_FINAL)

    def execute(self, requests):
        for request in requests:
            self._stream(request)
        return None
