"""sum_lm: the summary language model (plain python, decoupled, 1 instance).

CHUNK [40] INT32 -> 3 SUMMARY_TOKEN [1] INT32 responses (about 8 ms each), then the final flag.
``execute`` hands each request to a generator thread and returns; the thread iterates the
token generator (``_tokens``) and sends each token through the request's response sender.

Config parameter ``lazy_weights_s`` (absent: 0): the first ``execute`` after a load sleeps that
long before serving (the weights are mapped in lazily); ``sum_lm_cold_start`` deploys 4.

Fault, request parameters ``stall_after=N`` and ``stall_s``: after N tokens the generator
waits for a decode slot that is never freed (``stall_s`` seconds, at most 600): it yields
nothing more and the thread never sends the final flag.
"""

import concurrent.futures
import contextlib
import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_PER_CHUNK = 3
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
        value = config.get("parameters", {}).get("lazy_weights_s", {}).get("string_value", "0")
        self.lazy_s = min(max(float(value), 0.0), 60.0)
        self.generators = concurrent.futures.ThreadPoolExecutor(max_workers=8)
        self.slot_freed = threading.Event()  # nobody sets it: the stall

    def _tokens(self, chunk, stall_after, stall_s):
        state = int(chunk.astype(np.int64).sum()) % 30011
        for k in range(_PER_CHUNK):
            if k == stall_after:
                self.slot_freed.wait(stall_s)
            time.sleep(0.008)
            state = (state * 1103 + 17) % 30011
            yield state

    def _generate(self, chunk, stall_after, stall_s, sender):
        for token in self._tokens(chunk, stall_after, stall_s):
            out = pb_utils.Tensor("SUMMARY_TOKEN", np.array([token], dtype=np.int32))
            sender.send(pb_utils.InferenceResponse([out]))
        sender.send(flags=_FINAL)

    def execute(self, requests):
        if self.lazy_s:
            time.sleep(self.lazy_s)
            self.lazy_s = 0.0
        for request in requests:
            params = _params(request)
            chunk = pb_utils.get_input_tensor_by_name(request, "CHUNK").as_numpy().reshape(-1)
            stall_after, stall_s = -1, 0.0
            with contextlib.suppress(TypeError, ValueError):
                stall_after = int(params.get("stall_after", -1))
                stall_s = min(max(float(params.get("stall_s", 0)), 0.0), 600.0)
            sender = request.get_response_sender()
            self.generators.submit(self._generate, chunk.copy(), stall_after, stall_s, sender)
        return None

    def finalize(self):
        self.generators.shutdown(wait=False, cancel_futures=True)
