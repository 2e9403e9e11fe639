"""gen_postprocessing: the detokenizer step (TensorRT-LLM's ``postprocessing``), batched.

TOKENS_BATCH [k] INT32, SEQUENCE_LENGTH [1] INT32 -> OUTPUT [k] STRING: one text piece per
token. Each request of a dynamic batch is answered on its own.

Fault, server environment ``GEN_POST_LEAK=1``: the instance keeps the pieces it decoded in a
buffer that it appends to instead of replacing, and answers the whole buffer: OUTPUT grows by
one piece on every request (cut back when it passes 4096 pieces).
"""

import os

import numpy as np
import triton_python_backend_utils as pb_utils

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "do", "fe"]
_CAP = 4096


def _piece(token):
    token = int(token)
    return " " + _SYLLABLES[token % 12] + _SYLLABLES[(token // 12) % 12]


class TritonPythonModel:
    def initialize(self, args):
        self.leak = os.environ.get("GEN_POST_LEAK") == "1"
        self.buffer = []

    def execute(self, requests):
        responses = []
        for request in requests:
            tokens = pb_utils.get_input_tensor_by_name(request, "TOKENS_BATCH").as_numpy()
            pieces = [_piece(t).encode() for t in tokens.reshape(-1)]
            if self.leak:
                self.buffer.extend(pieces)  # the bug: never cleared between requests
                if len(self.buffer) > _CAP:
                    self.buffer = list(pieces)
                pieces = self.buffer
            out = np.array(pieces, dtype=np.object_).reshape(1, -1)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
