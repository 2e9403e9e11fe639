"""gs_reply: suggested replies, streamed (python, decoupled, 2 instances, no batching).

``execute`` generates 3 to 6 partial results per request (3 + sum(PROMPT) % 4), 30 ms apart,
and sends each through the request's response sender from execute itself, the last one with
``TRITONSERVER_RESPONSE_COMPLETE_FINAL``; then it returns None. A request whose client
cancelled (``is_cancelled()``, checked before each partial) gets the final flag alone.

Fault, request parameter ``gs_stall_after=N``: after N partials the generator waits for the
next piece from its detokenizer feed (a ``queue.Queue`` nothing fills, 300 s): the stream
stalls mid-way, no final flag, and the instance stays in execute.
"""

import json
import queue
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
        self.feed = queue.Queue()

    def execute(self, requests):
        for request in requests:
            self._reply(request)
        return None

    def _reply(self, request):
        sender = request.get_response_sender()
        prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy().reshape(-1)
        msg_id = pb_utils.get_input_tensor_by_name(request, "MSG_ID").as_numpy().reshape(1)
        try:
            stall_after = int(_params(request).get("gs_stall_after", -1))
        except (TypeError, ValueError):
            stall_after = -1
        pieces = 3 + int(np.sum(prompt)) % 4
        for k in range(pieces):
            if sender.is_cancelled():
                sender.send(flags=_FINAL)
                return
            if k == stall_after:
                self.feed.get(timeout=300)  # the next piece from the detokenizer
            time.sleep(0.030)
            piece = np.array([int(prompt[k % prompt.size]) * 7 + k], dtype=np.int32)
            response = pb_utils.InferenceResponse(
                [
                    pb_utils.Tensor("PIECE", piece),
                    pb_utils.Tensor("MSG_ID", msg_id.astype(np.int64)),
                ]
            )
            sender.send(response, flags=_FINAL if k == pieces - 1 else 0)
