"""xl_detok: the detokenizer / post-processor (plain python, 1 instance, no batching).

TGT_IDS [n] -> TEXT_IDS [n + 1] INT32: each id mapped to its merged sub-word id, then an end
mark. About 1 ms per call.

The instance keeps ``self.carry``, the sub-word pieces of a word split across calls, to be
put in front of the next call's output. In the repository it is always emptied (no call ends
inside a word). With the server environment's ``XL_DETOK_LEAK=1`` it has the bug this family
records: the emitted ids are appended to the kept buffer instead of replacing it
(``carry = concat(carry, emitted)`` where ``emitted`` already starts with ``carry``), so the
buffer, and TEXT_IDS, about double on every call, until the buffer passes 65536 ids and is
cut back (a size guard), and it starts again.
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_GUARD = 65536
_END = 2


class TritonPythonModel:
    def initialize(self, args):
        self.leak = os.environ.get("XL_DETOK_LEAK", "") == "1"
        self.carry = np.zeros(0, dtype=np.int32)

    def execute(self, requests):
        responses = []
        for request in requests:
            ids = pb_utils.get_input_tensor_by_name(request, "TGT_IDS").as_numpy().reshape(-1)
            merged = np.append((ids.astype(np.int64) // 2 + 3).astype(np.int32), _END)
            emitted = np.concatenate([self.carry, merged]).astype(np.int32)
            if self.leak:
                self.carry = np.concatenate([self.carry, emitted])  # bug: should replace
                if self.carry.size > _GUARD:
                    self.carry = np.zeros(0, dtype=np.int32)
            else:
                self.carry = np.zeros(0, dtype=np.int32)  # no word is left open
            time.sleep(0.001)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("TEXT_IDS", emitted)]))
        return responses
