"""day_classify: classify one document (python BLS, ``async def execute``, 2 instances).

Two children per document, called with ``async_exec()`` one after the other and without
request ids: ``day_lang`` (DOC [64] -> LANG [1] INT32), then ``day_embed`` (DOC [1, 64] ->
VEC [1, 16], dynamic batching). SCORES are a softmax over six document classes of the
vector, shifted by the language.

What production sends it, and what it answers:

* an empty document (DOC all zeros: nothing was extracted) is answered with an error
  response (``pb_utils.TritonError``), not raised: the model serves the others;
* a scanned document (DOC[0], its page count, above 30) first takes 1.5 s of OCR clean-up.

Fault, from a request parameter: ``day_doc=garbled`` makes the day_lang call carry
``day_hang_s=300`` (the language detector's regex never ends on it: day_lang's execute
sleeps, the ``async_exec`` never returns).
"""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils

_CLASSES = 6
_LANG_SHIFT = np.array(
    [[0.0] * 6, [0.1, 0, 0, 0, 0, -0.1], [0, 0.1, 0, 0, -0.1, 0], [0, 0, 0.1, -0.1, 0, 0]],
    dtype=np.float32,
)


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            responses.append(await self._classify(request))
        return responses

    async def _classify(self, request):
        doc = pb_utils.get_input_tensor_by_name(request, "DOC").as_numpy().astype(np.float32)
        doc = doc.reshape(64)
        if not np.any(doc):
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError("day_classify: empty document: no text was extracted")
            )
        if doc[0] > 30:  # a long scan: OCR clean-up before classification
            await asyncio.sleep(1.5)
        lang_params = {}
        if _params(request).get("day_doc") == "garbled":
            lang_params = {"day_hang_s": "300"}
        lang_answer = await pb_utils.InferenceRequest(
            model_name="day_lang",
            requested_output_names=["LANG"],
            inputs=[pb_utils.Tensor("DOC", doc)],
            parameters=lang_params,
        ).async_exec()
        if lang_answer.has_error():
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(
                    f"day_classify: day_lang: {lang_answer.error().message()}"
                )
            )
        lang = int(
            pb_utils.get_output_tensor_by_name(lang_answer, "LANG").as_numpy().reshape(-1)[0]
        )
        vec_answer = await pb_utils.InferenceRequest(
            model_name="day_embed",
            requested_output_names=["VEC"],
            inputs=[pb_utils.Tensor("DOC", doc.reshape(1, 64))],
        ).async_exec()
        if vec_answer.has_error():
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(
                    f"day_classify: day_embed: {vec_answer.error().message()}"
                )
            )
        vec = pb_utils.get_output_tensor_by_name(vec_answer, "VEC").as_numpy().reshape(16)
        logits = vec[:_CLASSES] + _LANG_SHIFT[lang % len(_LANG_SHIFT)]
        scores = np.exp(logits - logits.max())
        scores = (scores / scores.sum()).astype(np.float32)
        label = np.array([int(np.argmax(scores))], dtype=np.int32)
        return pb_utils.InferenceResponse(
            [pb_utils.Tensor("LABEL", label), pb_utils.Tensor("SCORES", scores)]
        )
