"""gs_moderate: moderate one chat message (python BLS, ``async def execute``, 2 instances).

Two children per message, called with ``async_exec()`` and gathered at once, without
request ids: ``gs_toxicity`` (EMB [1, 16] -> TOX [1, 4], dynamic batching) and ``gs_spam``
(LINKS [4] INT64, the message's 4 strongest dimensions -> SPAM [1], ``max_batch_size: 0``).
A done-callback on the gs_toxicity future calibrates its scores with the table of the
message's language (request parameter ``gs_lang``, default ``en``) and hands them on
through a future of its own, which execute awaits (a user's pattern: post-processing
attached to the BLS future).

Faults, from request parameters:

* ``gs_fault=spam_hang``: the gs_spam call carries ``gs_hang_s=300`` (the spam service
  never answers: gs_spam's execute sleeps, the ``async_exec`` never returns);
* ``gs_lang=<a language without a table>``: the done-callback raises KeyError; asyncio
  prints it, the handed-on future is never resolved, and execute awaits it for ever.

A child's error answers the message with an error response naming its MSG_ID.
"""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils

_CALIBRATION = {
    "en": np.array([1.00, 0.90, 1.10, 0.80], dtype=np.float32),
    "de": np.array([0.95, 0.85, 1.20, 0.75], dtype=np.float32),
    "fr": np.array([1.05, 0.90, 1.00, 0.85], dtype=np.float32),
    "es": np.array([1.00, 0.95, 1.05, 0.80], dtype=np.float32),
}


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


class TritonPythonModel:
    def initialize(self, args):
        self.loop = None

    def _calibrated(self, lang):
        """A future resolved by the done-callback of the gs_toxicity call."""
        handed_on = asyncio.get_running_loop().create_future()

        def _on_toxicity(fut):
            answer = fut.result()
            if answer.has_error():
                handed_on.set_result((None, answer.error().message()))
                return
            tox = pb_utils.get_output_tensor_by_name(answer, "TOX").as_numpy().reshape(4)
            handed_on.set_result((tox * _CALIBRATION[lang], ""))

        return handed_on, _on_toxicity

    async def execute(self, requests):
        responses = []
        for request in requests:
            responses.append(await self._moderate(request))
        return responses

    async def _moderate(self, request):
        message = pb_utils.get_input_tensor_by_name(request, "MESSAGE").as_numpy()
        msg_id = pb_utils.get_input_tensor_by_name(request, "MSG_ID").as_numpy().reshape(1)
        message = message.astype(np.float32).reshape(1, 16)
        params = _params(request)
        lang = str(params.get("gs_lang", "en"))
        spam_params = {"gs_hang_s": "300"} if params.get("gs_fault") == "spam_hang" else {}
        links = np.argsort(-np.abs(message.reshape(16)))[:4].astype(np.int64)
        toxicity = pb_utils.InferenceRequest(
            model_name="gs_toxicity",
            requested_output_names=["TOX"],
            inputs=[pb_utils.Tensor("EMB", message)],
        ).async_exec()
        spam = pb_utils.InferenceRequest(
            model_name="gs_spam",
            requested_output_names=["SPAM"],
            inputs=[pb_utils.Tensor("LINKS", links)],
            parameters=spam_params,
        ).async_exec()
        handed_on, on_toxicity = self._calibrated(lang)
        tox_future = asyncio.ensure_future(toxicity)
        tox_future.add_done_callback(on_toxicity)
        (tox, tox_error), spam_answer = await asyncio.gather(handed_on, spam)
        error = tox_error or (spam_answer.error().message() if spam_answer.has_error() else "")
        if error:
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(f"gs_moderate: msg={int(msg_id[0])}: {error}")
            )
        spam_score = pb_utils.get_output_tensor_by_name(spam_answer, "SPAM").as_numpy()
        toxic = float(tox.max())
        spammy = float(spam_score.reshape(-1)[0])
        verdict = np.array([toxic, spammy, float(toxic < 0.8 and spammy < 0.8)], dtype=np.float32)
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("VERDICT", verdict),
                pb_utils.Tensor("MSG_ID", msg_id.astype(np.int64)),
            ]
        )
