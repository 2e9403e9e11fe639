"""asr_router: the speech front door (python BLS, synchronous ``execute``, 2 instances).

Per request: AUDIO is cut into chunks of 800 frames (1 to 16; the clients send 1600 frames,
2 chunks, or a growing utterance); each chunk is encoded by
``asr_encoder`` through a *synchronous* ``InferenceRequest.exec()`` submitted to a thread
pool this model creates itself (not asyncio's); the router waits on the futures. The
embeddings then go to ``asr_beam`` (decoupled, 3 tokens per chunk) through
``exec(decoupled=True)``, whose response stream is iterated to its end (``for response in
responses``); the tokens are the answer. BLS children carry no request id. Faults, request
parameter ``asr_fault``:

* ``enc_hang``: chunk 0's encoder call carries ``enc_hang_s`` (default 300): that encoder
  batch never returns within the window, so the pool thread and ``execute`` wait forever.
* ``beam_stall``: the beam call carries ``stall_after=2``: the beam sends 2 tokens and never
  its final flag, so ``for response in responses`` never ends.
* ``beam_callback``: the beam call carries ``callback=1``: the beam calls this model back.
* ``slow``: this request takes ``router_slow_s`` (default 6, capped at 30) before its work
  (a long recording): clients with shorter deadlines cancel while it keeps running.
* ``double``: the encoder calls carry ``enc_fault=double``.
* ``long``: the audio is cut into 48 chunks whose encoder calls carry ``enc_ms`` (default 60):
  48 synchronous calls queue for the 4 threads of the router's pool.
* ``beam_hang``: the beam call carries ``hang_s`` (default 300): the beam's execute sleeps
  before its first token, holding the beam's only instance.
* ``probe``: answers at once with one token (the beam's call back).

Environment ``ROUTER_BLS_TIMEOUT_S=<s>`` (capped at 30; default 0: wait forever): the router
waits at most that long for its encoder futures and then answers an error, as the usual advice
("a thread with a timeout for exec()") has it; the pool thread stays blocked in ``exec()``.
"""

import concurrent.futures
import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_CHUNK = 800
_MAX_CHUNKS = 16


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _num(params, name, default, high):
    try:
        return min(max(float(params.get(name, default)), 0.0), high)
    except (TypeError, ValueError):
        return default


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"asr_router: {text}"))


class TritonPythonModel:
    def initialize(self, args):
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="asr-encode"
        )
        try:
            timeout = float(os.environ.get("ROUTER_BLS_TIMEOUT_S", "0"))
        except ValueError:
            timeout = 0.0
        self.bls_timeout_s = min(max(timeout, 0.0), 30.0) or None

    def _encode(self, chunk, params):
        response = pb_utils.InferenceRequest(
            model_name="asr_encoder",
            requested_output_names=["EMB", "STATE"],
            inputs=[pb_utils.Tensor("FRAMES", chunk.reshape(1, _CHUNK))],
            parameters=params,
        ).exec()
        if response.has_error():
            raise RuntimeError(f"asr_encoder: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "EMB").as_numpy().reshape(16)

    def _one(self, request):
        params = _params(request)
        fault = params.get("asr_fault", "")
        if fault == "probe":
            return pb_utils.InferenceResponse([pb_utils.Tensor("TOKENS", np.zeros(1, np.int32))])
        if fault == "slow":
            time.sleep(_num(params, "router_slow_s", 6.0, 30.0))
        audio = pb_utils.get_input_tensor_by_name(request, "AUDIO").as_numpy()
        audio = audio.astype(np.float32).reshape(-1)
        n = min(max(-(-audio.size // _CHUNK), 1), _MAX_CHUNKS)
        if fault == "long":
            n = 48
        audio = np.resize(audio, n * _CHUNK)
        chunk_params = [{} for _ in range(n)]
        if fault == "enc_hang":
            chunk_params[0] = {"enc_hang_s": str(_num(params, "enc_hang_s", 300.0, 600.0))}
        elif fault == "double":
            chunk_params = [{"enc_fault": "double"} for _ in range(n)]
        elif fault == "long":
            chunk_params = [{"enc_ms": str(_num(params, "enc_ms", 60.0, 1000.0))}] * n
        futures = [
            self.pool.submit(self._encode, audio[i * _CHUNK : (i + 1) * _CHUNK], chunk_params[i])
            for i in range(n)
        ]
        done, _ = concurrent.futures.wait(futures, timeout=self.bls_timeout_s)
        if len(done) < len(futures):
            return _error(f"asr_encoder did not answer within {self.bls_timeout_s} s")
        try:
            embs = np.stack([f.result() for f in futures]).astype(np.float32)
        except RuntimeError as err:
            return _error(str(err))
        beam_params = {}
        if fault == "beam_stall":
            beam_params = {"stall_after": "2"}
        elif fault == "beam_callback":
            beam_params = {"callback": "1"}
        elif fault == "beam_hang":
            beam_params = {"hang_s": str(_num(params, "hang_s", 300.0, 600.0))}
        responses = pb_utils.InferenceRequest(
            model_name="asr_beam",
            requested_output_names=["TOKEN"],
            inputs=[pb_utils.Tensor("EMB", embs)],
            parameters=beam_params,
        ).exec(decoupled=True)
        tokens = []
        for response in responses:
            if response.has_error():
                return _error(f"asr_beam: {response.error().message()}")
            out = pb_utils.get_output_tensor_by_name(response, "TOKEN")
            if out is not None:
                tokens.append(int(out.as_numpy().reshape(-1)[0]))
        return pb_utils.InferenceResponse(
            [pb_utils.Tensor("TOKENS", np.array(tokens or [0], dtype=np.int32))]
        )

    def execute(self, requests):
        return [self._one(r) for r in requests]

    def finalize(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
