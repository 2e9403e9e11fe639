"""gen_bls: the BLS front door (TensorRT-LLM's ``tensorrt_llm_bls``), decoupled, 2 instances.

For each request, in ``execute`` (as tensorrt_llm_bls does): gen_preprocessing with
``exec()``, then gen_llm with ``exec(decoupled=True)``, reading its stream; per token
response gen_postprocessing with ``exec()`` and one ``text_output`` [1, k] response through
the request's own sender; an error response of gen_llm is passed on as an error response;
then the final flag. The request's parameters are forwarded to every child (as the ensemble
forwards them); children carry no request id. An instance serves one stream at a time.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

_FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _request(model, inputs, outputs, params):
    return pb_utils.InferenceRequest(
        model_name=model, requested_output_names=outputs, inputs=inputs, parameters=params
    )


def _outputs(response, names):
    return [pb_utils.get_output_tensor_by_name(response, n) for n in names]


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            try:
                self._stream(request, sender)
            except Exception as err:  # answered as an error, as tensorrt_llm_bls does
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(err))))
            sender.send(flags=_FINAL)
        return None

    def _stream(self, request, sender):
        params = _params(request)
        text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
        max_tokens = pb_utils.get_input_tensor_by_name(request, "max_tokens").as_numpy()
        pre = _request(
            "gen_preprocessing",
            [pb_utils.Tensor("QUERY", text), pb_utils.Tensor("REQUEST_OUTPUT_LEN", max_tokens)],
            ["INPUT_ID", "REQUEST_INPUT_LEN", "OUT_REQUEST_OUTPUT_LEN"],
            params,
        ).exec()
        if pre.has_error():
            raise RuntimeError(f"gen_preprocessing: {pre.error().message()}")
        ids, in_len, out_len = _outputs(
            pre, ["INPUT_ID", "REQUEST_INPUT_LEN", "OUT_REQUEST_OUTPUT_LEN"]
        )
        llm = _request(
            "gen_llm",
            [
                pb_utils.Tensor("input_ids", ids.as_numpy()),
                pb_utils.Tensor("input_lengths", in_len.as_numpy()),
                pb_utils.Tensor("request_output_len", out_len.as_numpy()),
            ],
            ["output_ids", "sequence_length"],
            params,
        )
        for response in llm.exec(decoupled=True):
            if response.has_error():
                raise RuntimeError(f"gen_llm: {response.error().message()}")
            output_ids = pb_utils.get_output_tensor_by_name(response, "output_ids")
            if output_ids is None:  # the empty final response
                continue
            seq_len = pb_utils.get_output_tensor_by_name(response, "sequence_length")
            post = _request(
                "gen_postprocessing",
                [
                    pb_utils.Tensor("TOKENS_BATCH", output_ids.as_numpy()),
                    pb_utils.Tensor("SEQUENCE_LENGTH", seq_len.as_numpy()),
                ],
                ["OUTPUT"],
                params,
            ).exec()
            if post.has_error():
                raise RuntimeError(f"gen_postprocessing: {post.error().message()}")
            (piece,) = _outputs(post, ["OUTPUT"])
            out = np.asarray(piece.as_numpy(), dtype=np.object_)
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("text_output", out)]))
