"""rag_orchestrator: retrieval + generation (python BLS, ``async def execute``, 2 instances).

Per request (TOKEN_IDS [1, 16] from rag_tokenize): ``asyncio.gather`` of

* ``rag_embed`` through ``async_exec()`` (the query embedding, EMBEDDING [1, 32]), and
* ``rag_generate`` (decoupled) through ``async_exec(decoupled=True)``, whose stream of PIECEs
  is read to its end (``for response in responses``: on 2.51 the awaited call returns a
  plain ``ResponseIterator``, which ``async for`` refuses; each ``next`` waits (blocking) for the
  next piece).

ANSWER_IDS [1, k] are the generated pieces; CONTEXT_IDS [1, 8] the ids of the passages the
embedding retrieves. BLS children carry no request id. Faults, request parameter
``rag_fault``:

* ``embed_hang``: the embed call carries ``embed_hang_s`` (default 300).
* ``generate_stall``: the generate call carries ``stall_after=2``: the generator sends 2
  pieces and never its final flag, so the ``for`` over the stream never ends.
* ``grow``: switches on a bug in this instance: from then on it keeps the conversation
  context (the retrieved ids and the generated pieces) across requests: on every request it
  appends the new pieces and the whole kept context to the kept context instead of starting
  again, so CONTEXT_IDS (more than) doubles per request (kept to its last 8192 ids so the host
  survives).

A config parameter switches on a deploy bug (every request fails, whatever it carries):

* ``retrieve_top_k``: how many passage ids the embedding retrieves (default 8). Config
  parameters are strings, and ``_retrieve`` slices with the value as given, so a config that
  sets it makes every request raise ``TypeError: bad operand type for unary -: 'str'`` in
  ``_retrieve`` (``rag_orchestrator_raises`` deploys it through the repository API).
"""

import asyncio
import contextlib
import json

import numpy as np
import triton_python_backend_utils as pb_utils

_MAX_CONTEXT = 8192
_TOP_K = 8


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _top_k(model_config):
    """The ``retrieve_top_k`` config parameter, or the default."""
    value = model_config.get("parameters", {}).get("retrieve_top_k", {}).get("string_value")
    return _TOP_K if value is None else value  # the bug: a string, never converted to int


def _retrieve(emb, top_k):
    """The ids of the ``top_k`` passages nearest the embedding."""
    return (np.argsort(emb)[-top_k:] + 1000).astype(np.int64)


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"rag_orchestrator: {text}"))


class TritonPythonModel:
    def initialize(self, args):
        self.growing = False
        self.context = np.zeros(0, dtype=np.int64)
        self.top_k = _top_k(json.loads(args["model_config"]))

    async def _embed(self, ids, params):
        response = await pb_utils.InferenceRequest(
            model_name="rag_embed",
            requested_output_names=["EMBEDDING"],
            inputs=[pb_utils.Tensor("QUERY_IDS", ids.reshape(1, 16))],
            parameters=params,
        ).async_exec()
        if response.has_error():
            raise RuntimeError(f"rag_embed: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "EMBEDDING").as_numpy().reshape(-1)

    async def _generate(self, ids, params):
        responses = await pb_utils.InferenceRequest(
            model_name="rag_generate",
            requested_output_names=["PIECE"],
            inputs=[pb_utils.Tensor("PROMPT_IDS", ids.reshape(-1))],
            parameters=params,
        ).async_exec(decoupled=True)
        pieces = []
        for response in responses:  # a ResponseIterator: not async-iterable on 2.51
            if response.has_error():
                raise RuntimeError(f"rag_generate: {response.error().message()}")
            out = pb_utils.get_output_tensor_by_name(response, "PIECE")
            if out is not None:
                pieces.append(int(out.as_numpy().reshape(-1)[0]))
        return pieces

    async def _one(self, request):
        params = _params(request)
        fault = params.get("rag_fault", "")
        ids = pb_utils.get_input_tensor_by_name(request, "TOKEN_IDS").as_numpy()
        ids = ids.astype(np.int64).reshape(16)
        embed_params, gen_params = {}, {}
        if fault == "embed_hang":
            hang = 300.0
            with contextlib.suppress(TypeError, ValueError):
                hang = min(max(float(params.get("embed_hang_s", 300)), 0.0), 600.0)
            embed_params = {"embed_hang_s": str(hang)}
        elif fault == "generate_stall":
            gen_params = {"stall_after": "2"}
        elif fault == "grow":
            self.growing = True
        try:
            emb, pieces = await asyncio.gather(
                self._embed(ids, embed_params), self._generate(ids, gen_params)
            )
        except RuntimeError as err:
            return _error(str(err))
        retrieved = _retrieve(emb, self.top_k)
        answer = np.array(pieces or [0], dtype=np.int64)
        if self.growing:
            if self.context.size == 0:
                self.context = np.concatenate([retrieved, answer])
            else:
                # the history is re-sent with the new answer appended, then kept again
                self.context = np.concatenate([self.context, answer, self.context])
                self.context = self.context[-_MAX_CONTEXT:]
            context = self.context
        else:
            context = retrieved
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("ANSWER_IDS", answer.reshape(1, -1)),
                pb_utils.Tensor("CONTEXT_IDS", context.reshape(1, -1).copy()),
            ]
        )

    async def execute(self, requests):
        return [await self._one(r) for r in requests]
