"""bg_caption: the live-captioning front door (python, decoupled, 1 instance, no batching).

Written after Triton's ``repeat_int32`` example (python_backend ``examples/decoupled``):
``execute`` starts one daemon ``threading.Thread`` per request, counts it in flight, and
returns None. The thread embeds the clip's first 8 ids once through bg_embed (``exec()``
from the thread; no request id, no trace), then sends one WORD [1] INT32 response per
caption word (3 to 8 words, 30 ms apart) and ``TRITONSERVER_RESPONSE_COMPLETE_FINAL``.
``finalize`` waits up to 1 s for the threads in flight, as the example's does (shorter).

Fault, request parameter ``bg_die_after=N``: the thread raises RuntimeError after N words;
Python's ``threading.excepthook`` prints it to the stub's stderr, and the final flag is never
sent.
"""

import json
import threading
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
        self.inflight = 0
        self.lock = threading.Lock()

    def execute(self, requests):
        for request in requests:
            query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy().reshape(-1)
            try:
                die_after = int(_params(request).get("bg_die_after", -1))
            except (TypeError, ValueError):
                die_after = -1
            thread = threading.Thread(
                target=self._caption,
                args=(request.get_response_sender(), query, die_after),
                daemon=True,
            )
            with self.lock:
                self.inflight += 1
            thread.start()
        return None

    def _caption(self, sender, query, die_after):
        try:
            clip = np.resize(query.astype(np.int32), 8).reshape(1, 8)
            answer = pb_utils.InferenceRequest(
                model_name="bg_embed",
                requested_output_names=["EMB"],
                inputs=[pb_utils.Tensor("CHUNK", clip)],
            ).exec()
            if answer.has_error():
                raise RuntimeError(f"bg_embed: {answer.error().message()}")
            emb = pb_utils.get_output_tensor_by_name(answer, "EMB").as_numpy().reshape(-1)
            words = 3 + int(query.size) % 6
            for k in range(words):
                if k == die_after:
                    raise RuntimeError(f"bg_caption: decoder lost its beam at word {k}")
                word = np.array([int(abs(emb[k % emb.size]) * 5000) + k], dtype=np.int32)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("WORD", word)]))
                time.sleep(0.03)
            sender.send(flags=_FINAL)
        finally:
            with self.lock:
                self.inflight -= 1

    def finalize(self):
        for _ in range(10):
            with self.lock:
                if self.inflight == 0:
                    return
            time.sleep(0.1)
