"""llm_bls: decoupled BLS generator that streams one PIECE per token.

``execute`` hands each request to a worker thread and returns. The worker calls tokenizer
once, then per step kv_decoder (feeding PRESENT back as PAST) and detok, sends each piece, and
ends with ``TRITONSERVER_RESPONSE_COMPLETE_FINAL``. Children carry no request id.

Fault, request parameter ``stall_after=N``: at step N the detok lookup raises inside the
worker; the worker's catch-all swallows it and returns without the final flag (the session
table keeps the sender), so the client's stream stays open with N pieces.
"""

import concurrent.futures
import json
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

_MAX_NEW = 12
_LIMIT = 256


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _call(model, inputs, outputs):
    response = pb_utils.InferenceRequest(
        model_name=model, requested_output_names=outputs, inputs=inputs
    ).exec()
    if response.has_error():
        raise RuntimeError(f"{model}: {response.error().message()}")
    return [pb_utils.get_output_tensor_by_name(response, o).as_numpy() for o in outputs]


class TritonPythonModel:
    def initialize(self, args):
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=16)
        self.sessions = {}
        self.lock = threading.Lock()
        self.counter = 0

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            params = _params(request)
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy()
            max_t = pb_utils.get_input_tensor_by_name(request, "MAX_NEW")
            max_new = int(max_t.as_numpy().reshape(-1)[0]) if max_t is not None else _MAX_NEW
            try:
                stall_after = int(params.get("stall_after", -1))
            except (TypeError, ValueError):
                stall_after = -1
            with self.lock:
                self.counter += 1
                key = self.counter
                self.sessions[key] = sender
            self.pool.submit(
                self._generate, key, sender, prompt, min(max(max_new, 0), _LIMIT), stall_after
            )
        return None

    def _generate(self, key, sender, prompt, max_new, stall_after):
        try:
            (ids,) = _call("tokenizer", [pb_utils.Tensor("PROMPT", prompt)], ["INPUT_IDS"])
            token = np.array([ids[-1]], dtype=np.int64)
            past = None
            for step in range(max_new):
                inputs = [pb_utils.Tensor("TOKEN", token)]
                if past is not None:
                    inputs.append(pb_utils.Tensor("PAST", past))
                token, past = _call("kv_decoder", inputs, ["NEXT_TOKEN", "PRESENT"])
                if step == stall_after:
                    raise KeyError(f"vocab miss for token {int(token[0])}")
                (piece,) = _call("detok", [pb_utils.Tensor("TOKEN", token)], ["PIECE"])
                if sender.is_cancelled():
                    break
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("PIECE", piece)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception:  # the bug: swallowed, and the stream never gets its final flag
            return
        with self.lock:
            self.sessions.pop(key, None)

    def finalize(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
