"""tokenizer: bytes of a prompt -> token ids (one id per whitespace-separated word)."""

import zlib

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy().reshape(-1)[0]
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            ids = [zlib.crc32(w.encode()) % 32000 for w in text.split()] or [1]
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("INPUT_IDS", np.array(ids, dtype=np.int64))]
                )
            )
        return responses
