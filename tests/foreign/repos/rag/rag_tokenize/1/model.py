"""rag_tokenize: the tokenizer (plain python, dynamic batching, 1 instance).

Each QUESTION (one UTF-8 string) becomes TOKEN_IDS [16]: a stable hash of each word
(modulo 30000), cut or padded with zeros to 16.
"""

import zlib

import numpy as np
import triton_python_backend_utils as pb_utils

_LEN = 16


def _ids(text):
    words = text.split()[:_LEN]
    ids = [zlib.crc32(w.encode()) % 30000 + 1 for w in words]
    return ids + [0] * (_LEN - len(ids))


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            questions = pb_utils.get_input_tensor_by_name(request, "QUESTION").as_numpy()
            rows = []
            for q in questions.reshape(-1):
                text = q.decode("utf-8", "replace") if isinstance(q, bytes) else str(q)
                rows.append(_ids(text))
            ids = np.array(rows, dtype=np.int64).reshape(-1, _LEN)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("TOKEN_IDS", ids)]))
        return out
