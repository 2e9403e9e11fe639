"""gen_llm: the decoupled generation model (TensorRT-LLM's ``tensorrt_llm``, here python).

``execute`` hands each request of its dynamic batch to a worker thread (in-flight batching:
requests join and leave the running set independently) and returns. The worker sends one
``output_ids`` [1] (and ``sequence_length`` [1]) per generated token through the request's
response sender, about 15 ms a token, the last with ``TRITONSERVER_RESPONSE_COMPLETE_FINAL``.

Faults:

- request parameters ``gen_stall_after=N`` and ``gen_stall_s``: after N tokens the worker
  waits for a KV block that nobody frees (``gen_stall_s`` seconds, at most 600): it sends
  nothing more and never the final flag;
- server environment ``GEN_LLM_KV_TOKENS=T``: the KV cache holds T tokens per sequence; a
  request whose prompt plus generated tokens reach T raises RuntimeError in the worker, which
  sends an error response for it (after the tokens it already sent) and then the final flag.
"""

import concurrent.futures
import json
import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
_TOKEN_S = 0.015


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _number(params, key, default):
    try:
        return float(params.get(key, default))
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    def initialize(self, args):
        self.workers = concurrent.futures.ThreadPoolExecutor(max_workers=16)
        self.kv_tokens = int(os.environ.get("GEN_LLM_KV_TOKENS", "0") or 0)
        self.block_freed = threading.Event()  # nobody sets it: the stall

    def _step(self, state):
        time.sleep(_TOKEN_S)
        return (state * 1103515245 + 12345) % 31991 + 1

    def _generate(self, sender, ids, max_new, stall_after, stall_s):
        try:
            state = int(ids.astype(np.int64).sum()) % 31991 + 1
            for k in range(max_new):
                if k == stall_after:
                    self.block_freed.wait(stall_s)
                    return  # the stall's end: no final flag (the client gave up long ago)
                if self.kv_tokens and len(ids) + k >= self.kv_tokens:
                    raise RuntimeError(
                        f"gen_llm: KV cache exhausted: sequence needs block {len(ids) + k} "
                        f"of {self.kv_tokens} (prompt {len(ids)} tokens, {k} generated)"
                    )
                state = self._step(state)
                response = pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("output_ids", np.array([[state]], dtype=np.int32)),
                        pb_utils.Tensor("sequence_length", np.array([[1]], dtype=np.int32)),
                    ]
                )
                sender.send(response, flags=_FINAL if k == max_new - 1 else 0)
        except RuntimeError as err:
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(err))))
            sender.send(flags=_FINAL)

    def execute(self, requests):
        for request in requests:
            params = _params(request)
            ids = pb_utils.get_input_tensor_by_name(request, "input_ids").as_numpy().reshape(-1)
            out_len = pb_utils.get_input_tensor_by_name(request, "request_output_len").as_numpy()
            max_new = min(max(int(out_len.reshape(-1)[0]), 1), 64)
            stall_after = int(_number(params, "gen_stall_after", -1))
            stall_s = min(max(_number(params, "gen_stall_s", 0.0), 0.0), 600.0)
            sender = request.get_response_sender()
            self.workers.submit(self._generate, sender, ids.copy(), max_new, stall_after, stall_s)
        return None

    def finalize(self):
        self.block_freed.set()
        self.workers.shutdown(wait=False, cancel_futures=True)
