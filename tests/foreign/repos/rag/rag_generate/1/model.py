"""rag_generate: the generator (decoupled, 1 instance); 6 PIECEs per request, sent from
``execute`` through the request's response sender, then the final flag.

Fault, request parameter ``stall_after=N``: sends N pieces and returns without the final
flag; the sender is kept (a session table that is never cleaned), so the caller's stream
never ends.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_PIECES = 6


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
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT_IDS").as_numpy()
            try:
                stall_after = int(params.get("stall_after", -1))
            except (TypeError, ValueError):
                stall_after = -1
            seed = int(prompt.sum()) % 30000
            for step in range(_PIECES):
                if step == stall_after:
                    self.sessions.append(sender)  # never finished, never released
                    break
                time.sleep(0.001)
                piece = np.array([(seed + 101 * step) % 30000], dtype=np.int64)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("PIECE", piece)]))
            else:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
