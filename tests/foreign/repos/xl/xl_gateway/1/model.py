"""xl_gateway: the translation gateway (python BLS, ``async def execute``, 2 instances).

Per request: SRC [8 k] is cut into k sentences of 8 token ids; each sentence is translated by
its own ``xl_translate`` call (``async_exec()``, one per sentence, gathered with
``asyncio.gather``); the gather's done-callback merges the translations and resolves the
future the request awaits; then one ``xl_detok`` call turns them into TGT. Children carry no
request id and are built with ``trace=request.trace()``.

Faults, from the request parameter ``xl_fault``:

* ``hang``: the first sentence's ``xl_translate`` call carries ``hang_s`` (default 300): that
  child batch never returns within the window, and this request awaits it forever.
* ``callback``: the glossary lookup in the gather's done-callback raises KeyError (a term
  missing from the customer glossary); asyncio logs 'Exception in callback ...' and the
  future the request awaits is never resolved: no response, no error counted.
"""

import asyncio
import functools
import json

import numpy as np
import triton_python_backend_utils as pb_utils

_SENTENCE = 8
_GLOSSARY = {"default": 0, "legal-en-de": 17, "medical-en-fr": 23}


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"xl_gateway: {text}"))


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]

    async def execute(self, requests):
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    def _merge(self, done, glossary, gathered):
        """Done-callback of the gather: merge the sentence translations into ``done``."""
        if gathered.cancelled() or done.done():
            return
        if gathered.exception() is not None:
            done.set_exception(gathered.exception())
            return
        pieces = []
        for response in gathered.result():
            if response.has_error():
                done.set_exception(RuntimeError(response.error().message()))
                return
            pieces.append(pb_utils.get_output_tensor_by_name(response, "TGT_IDS").as_numpy())
        shift = _GLOSSARY[glossary]  # raises KeyError for a glossary the table lacks
        done.set_result((np.concatenate(pieces).reshape(-1) + shift).astype(np.int32))

    async def _one(self, request):
        params = _params(request)
        fault = params.get("xl_fault", "")
        src = pb_utils.get_input_tensor_by_name(request, "SRC").as_numpy().astype(np.int32)
        sentences = src.reshape(-1)[: (src.size // _SENTENCE) * _SENTENCE].reshape(-1, _SENTENCE)
        if not len(sentences):
            return _error(f"SRC must hold at least {_SENTENCE} token ids, got {src.size}")
        calls = []
        for i, sentence in enumerate(sentences):
            child_params = {}
            if fault == "hang" and i == 0:
                child_params = {"hang_s": str(params.get("hang_s", 300))}
            calls.append(
                pb_utils.InferenceRequest(
                    model_name="xl_translate",
                    requested_output_names=["TGT_IDS"],
                    inputs=[pb_utils.Tensor("SRC_IDS", sentence.reshape(1, _SENTENCE))],
                    parameters=child_params,
                    trace=request.trace(),
                ).async_exec()
            )
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        glossary = "customer-acme" if fault == "callback" else "default"
        gathered = asyncio.gather(*calls)
        gathered.add_done_callback(functools.partial(self._merge, done, glossary))
        try:
            merged = await done
        except RuntimeError as err:
            return _error(f"translation failed: {err}")
        answer = await pb_utils.InferenceRequest(
            model_name="xl_detok",
            requested_output_names=["TEXT_IDS"],
            inputs=[pb_utils.Tensor("TGT_IDS", merged)],
            trace=request.trace(),
        ).async_exec()
        if answer.has_error():
            return _error(f"detokenizer failed: {answer.error().message()}")
        text = pb_utils.get_output_tensor_by_name(answer, "TEXT_IDS").as_numpy()
        return pb_utils.InferenceResponse([pb_utils.Tensor("TGT", text.astype(np.int32))])
