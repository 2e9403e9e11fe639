"""asr_beam: beam decoder (decoupled, 1 instance); 3 TOKENs per EMB row, sent from ``execute``.

Each request's tokens are sent through its response sender from inside ``execute``, then
the final flag. Faults, request parameters:

* ``stall_after=N``: sends N tokens and returns without the final flag; the sender is kept
  (a session table that is never cleaned), so the caller's stream never ends.
* ``hang_s=<s>`` (capped at 600): sleeps that long before its first token (a stuck decode),
  holding the only instance.
* ``callback=1``: before decoding, asks ``asr_router`` for a language-model 'probe' through a
  synchronous BLS ``exec()`` (a cycle asr_router -> asr_beam -> asr_router).
"""

import contextlib
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_TOKENS_PER_ROW = 3


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        self.sessions = []

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            params = _params(request)
            emb = pb_utils.get_input_tensor_by_name(request, "EMB").as_numpy()
            with contextlib.suppress(TypeError, ValueError):
                time.sleep(min(max(float(params.get("hang_s", 0)), 0.0), 600.0))
            if params.get("callback") == "1":
                time.sleep(0.5)
                probe = pb_utils.InferenceRequest(
                    model_name="asr_router",
                    requested_output_names=["TOKENS"],
                    inputs=[pb_utils.Tensor("AUDIO", np.zeros(4, np.float32))],
                    parameters={"asr_fault": "probe"},
                ).exec()
                if probe.has_error():
                    sender.send(
                        pb_utils.InferenceResponse(error=pb_utils.TritonError("probe failed")),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                    )
                    continue
            try:
                stall_after = int(params.get("stall_after", -1))
            except (TypeError, ValueError):
                stall_after = -1
            seed = int(abs(float(emb.sum())) * 1000) % 1000
            for step in range(_TOKENS_PER_ROW * emb.reshape(-1, 16).shape[0]):
                if step == stall_after:
                    self.sessions.append(sender)  # never finished, never released
                    break
                token = np.array([(seed + 37 * step) % 5000], dtype=np.int32)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("TOKEN", token)]))
            else:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
