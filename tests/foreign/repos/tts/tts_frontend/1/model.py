"""tts_frontend: the text-to-speech front door (python BLS, ``async def execute``, 2 instances).

Per request (TEXT [1], one UTF-8 string, no batching) it normalises the text (lower case;
letters a-z -> phone ids 1..26, digits -> 30..39, anything else -> 0), splits it into
sentences (at ``.``; with the request parameter ``chunking=word``, a low-latency mode, into
words), and gathers one ``async_exec()`` call to ``tts_acoustic`` per piece (PHONES [1, 16],
padded). The MELs are concatenated and sent to the decoupled ``tts_vocoder`` through
``exec(decoupled=True)``; its AUDIO chunks are read to the final flag and answered
concatenated as AUDIO [n]. BLS children carry no request id and are built with
``trace=request.trace()`` (without it when the server's environment has
``TTS_CHILD_TRACE=0``). A child's error is answered as an error response (nothing is raised,
nothing is logged by this model).

Fault, request parameter ``tts_fault``:

* ``vocoder_hang``: the vocoder call carries ``hang_after=2`` (and ``hang_s``, default 300):
  the vocoder sends 2 chunks and then sleeps in execute, so the loop over the stream waits.
"""

import asyncio
import contextlib
import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

_WIDTH = 16
_CHILD_TRACE = os.environ.get("TTS_CHILD_TRACE", "1") != "0"


class _ChildError(Exception):
    pass


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _phone(ch):
    if "a" <= ch <= "z":
        return ord(ch) - ord("a") + 1
    if "0" <= ch <= "9":
        return 30 + ord(ch) - ord("0")
    return 0


def _pieces(text, chunking):
    text = text.lower()
    if chunking == "word":
        parts = text.replace(".", " ").split()
    else:
        parts = [s.strip() for s in text.split(".")]
    return [p for p in parts if p] or [" "]


def _ids(piece):
    ids = [_phone(c) for c in piece][:_WIDTH]
    ids += [0] * (_WIDTH - len(ids))
    return np.array(ids, dtype=np.int64).reshape(1, _WIDTH)


def _trace(request):
    return {"trace": request.trace()} if _CHILD_TRACE else {}


def _vocoder_params(params):
    if params.get("tts_fault") != "vocoder_hang":
        return {}
    hang = 300.0
    with contextlib.suppress(TypeError, ValueError):
        hang = min(max(float(params.get("hang_s", 300)), 0.0), 600.0)
    return {"hang_after": "2", "hang_s": str(hang)}


class TritonPythonModel:
    async def _acoustic(self, ids, request):
        try:
            response = await pb_utils.InferenceRequest(
                model_name="tts_acoustic",
                requested_output_names=["MEL"],
                inputs=[pb_utils.Tensor("PHONES", ids)],
                **_trace(request),
            ).async_exec()
        except pb_utils.TritonModelException as err:
            raise _ChildError(f"tts_acoustic: {err}") from err
        if response.has_error():
            raise _ChildError(f"tts_acoustic: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "MEL").as_numpy().reshape(-1)

    def _vocode(self, mel, request, params):
        responses = pb_utils.InferenceRequest(
            model_name="tts_vocoder",
            requested_output_names=["AUDIO"],
            inputs=[pb_utils.Tensor("MEL", mel.astype(np.float32))],
            parameters=params,
            **_trace(request),
        ).exec(decoupled=True)
        chunks = []
        for response in responses:  # blocks for each chunk, ends after the final flag
            if response.has_error():
                raise _ChildError(f"tts_vocoder: {response.error().message()}")
            out = pb_utils.get_output_tensor_by_name(response, "AUDIO")
            if out is not None:
                chunks.append(out.as_numpy().reshape(-1))
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)

    async def _one(self, request):
        params = _params(request)
        raw = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy().reshape(-1)[0]
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        pieces = _pieces(text, params.get("chunking", "sentence"))
        try:
            mels = await asyncio.gather(*(self._acoustic(_ids(p), request) for p in pieces))
            audio = self._vocode(np.concatenate(mels), request, _vocoder_params(params))
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"tts_frontend: {err}"))
        return pb_utils.InferenceResponse([pb_utils.Tensor("AUDIO", audio.astype(np.float32))])

    async def execute(self, requests):
        return [await self._one(r) for r in requests]
