"""sum_chunker: cuts a document's token ids into chunks (plain python, dynamic batching, 2
instances).

Per request of the batch: TOKENS [1, 256] INT32 and NTOK [1, 1] INT32 -> CHUNKS [1, k, 40]
INT32, the first NTOK ids cut into k = ceil(NTOK / 40) chunks of 40 (the last padded with 0).
The chunks are built in an instance-level list (``self.chunks``, reused between calls to save
allocations).

Fault, server environment ``SUM_CHUNKER_REUSE_BUG=1``: the list is not cleared before a call,
so each response carries every chunk the instance has cut since it was loaded: CHUNKS grows
by 1 to 4 chunks on every call and never shrinks.
"""

import os

import numpy as np
import triton_python_backend_utils as pb_utils

_CHUNK = 40
_BUG = os.environ.get("SUM_CHUNKER_REUSE_BUG", "0") == "1"


class TritonPythonModel:
    def initialize(self, args):
        self.chunks = []

    def _cut(self, tokens, ntok):
        if not _BUG:
            self.chunks.clear()
        n = int(min(max(ntok, 1), tokens.size))
        for start in range(0, n, _CHUNK):
            chunk = np.zeros(_CHUNK, dtype=np.int32)
            piece = tokens[start : min(start + _CHUNK, n)]
            chunk[: piece.size] = piece
            self.chunks.append(chunk)
        return np.stack(self.chunks)[None, :, :]

    def execute(self, requests):
        responses = []
        for request in requests:
            tokens = pb_utils.get_input_tensor_by_name(request, "TOKENS").as_numpy()
            ntok = pb_utils.get_input_tensor_by_name(request, "NTOK").as_numpy()
            chunks = self._cut(tokens.reshape(-1), int(ntok.reshape(-1)[0]))
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("CHUNKS", chunks.astype(np.int32))])
            )
        return responses
