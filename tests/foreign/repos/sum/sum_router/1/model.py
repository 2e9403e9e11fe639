"""sum_router: the summarizer's front door (python BLS, decoupled, ``async def execute``).

Per request (DOC_IDS [n] INT32, 1 <= n <= 256): the ids padded to TOKENS [1, 256] with NTOK
[1, 1] go to ``sum_chunker`` through ``async_exec()``, whose CHUNKS a done-callback hands over
(``streaming.chunks_future``). The first ``_MAX_CHUNKS`` chunks are then summarized one by
one: the decoupled ``sum_lm`` stream is read with ``exec(decoupled=True)`` in a worker thread
(``run_in_executor``: the iteration blocks), its tokens go to ``sum_detok``, and its TEXT is
sent to the client as one PIECE response; then the final flag. BLS children carry no request
id and no trace: the request is released as soon as ``execute``'s coroutine is
scheduled (decoupled async execute runs in the background), and a child built with
``trace=request.trace()`` of a released request crashed tritonserver 2.51 (SIGSEGV in
``TRITONSERVER_ServerInferAsync`` → ``pthread_mutex_lock``); ``SUM_CHILD_TRACE=1`` in the
server's environment brings it back. Errors are answered as an error response with
the final flag; nothing is logged by this model.

Fault, request parameters (passed by the client):

* ``lm_stall_chunk=K`` (and ``lm_stall_s``): the sum_lm call of chunk K carries
  ``stall_after=1`` and ``stall_s``: sum_lm's generator stops after one token (see sum_lm).
* ``layout=ragged``: the done-callback reads an output sum_chunker does not have and raises;
  the future is never resolved, so this request's coroutine waits and its stream never ends.
"""

import asyncio
import concurrent.futures
import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import streaming

_WIDTH = 256
_MAX_CHUNKS = 4
_FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
_CHILD_TRACE = os.environ.get("SUM_CHILD_TRACE", "0") == "1"


def _trace(request):
    return {"trace": request.trace()} if _CHILD_TRACE else {}


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        self.readers = concurrent.futures.ThreadPoolExecutor(
            max_workers=8, thread_name_prefix="sum_lm_reader"
        )

    async def _summarize(self, request, sender):
        params = _params(request)
        ids = pb_utils.get_input_tensor_by_name(request, "DOC_IDS").as_numpy().reshape(-1)
        ids = ids[:_WIDTH].astype(np.int32)
        tokens = np.zeros((1, _WIDTH), dtype=np.int32)
        tokens[0, : ids.size] = ids
        loop = asyncio.get_running_loop()
        chunker = pb_utils.InferenceRequest(
            model_name="sum_chunker",
            requested_output_names=["CHUNKS"],
            inputs=[
                pb_utils.Tensor("TOKENS", tokens),
                pb_utils.Tensor("NTOK", np.array([[ids.size]], dtype=np.int32)),
            ],
            **_trace(request),
        )
        task = asyncio.ensure_future(chunker.async_exec())
        chunks = await streaming.chunks_future(loop, task, str(params.get("layout", "")))
        stall_chunk = int(params.get("lm_stall_chunk", -1))
        for k, chunk in enumerate(chunks[:_MAX_CHUNKS]):
            lm_params = {}
            if k == stall_chunk:
                lm_params = {"stall_after": "1", "stall_s": str(params.get("lm_stall_s", 300))}
            summary = await loop.run_in_executor(
                self.readers, streaming.lm_tokens, chunk, lm_params, _trace(request)
            )
            detok = await pb_utils.InferenceRequest(
                model_name="sum_detok",
                requested_output_names=["TEXT"],
                inputs=[pb_utils.Tensor("SUMMARY_IDS", summary)],
                **_trace(request),
            ).async_exec()
            if detok.has_error():
                raise RuntimeError(f"sum_detok: {detok.error().message()}")
            text = pb_utils.get_output_tensor_by_name(detok, "TEXT").as_numpy().reshape(1)
            if sender.is_cancelled():
                break
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("PIECE", text)]))
        sender.send(flags=_FINAL)

    async def _one(self, request):
        sender = request.get_response_sender()
        try:
            await self._summarize(request, sender)
        except (RuntimeError, ValueError) as err:
            error = pb_utils.TritonError(f"sum_router: {err}")
            sender.send(pb_utils.InferenceResponse(error=error), flags=_FINAL)

    async def execute(self, requests):
        await asyncio.gather(*(self._one(r) for r in requests))
        return None

    def finalize(self):
        self.readers.shutdown(wait=False, cancel_futures=True)
