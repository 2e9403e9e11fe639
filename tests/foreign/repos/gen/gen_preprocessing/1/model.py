"""gen_preprocessing: the tokenizer step (TensorRT-LLM's ``preprocessing``), batched.

QUERY [1] STRING, REQUEST_OUTPUT_LEN [1] INT32 -> INPUT_ID [n] INT32 (one id per word, a
hash of it), REQUEST_INPUT_LEN [1] INT32 (n), OUT_REQUEST_OUTPUT_LEN [1] INT32 (the
request's, capped at 64). Each request of a dynamic batch is answered on its own.
"""

import zlib

import numpy as np
import triton_python_backend_utils as pb_utils

_VOCAB = 32000
_MAX_OUT = 64


def _ids(text):
    words = text.split() or ["<empty>"]
    return np.array([zlib.crc32(w.encode()) % (_VOCAB - 1) + 1 for w in words], dtype=np.int32)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy().reshape(-1)
            out_len = pb_utils.get_input_tensor_by_name(request, "REQUEST_OUTPUT_LEN").as_numpy()
            text = query[0].decode("utf-8", "replace") if len(query) else ""
            ids = _ids(text)
            n = min(max(int(out_len.reshape(-1)[0]), 1), _MAX_OUT)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("INPUT_ID", ids.reshape(1, -1)),
                        pb_utils.Tensor(
                            "REQUEST_INPUT_LEN", np.array([[len(ids)]], dtype=np.int32)
                        ),
                        pb_utils.Tensor("OUT_REQUEST_OUTPUT_LEN", np.array([[n]], dtype=np.int32)),
                    ]
                )
            )
        return responses
