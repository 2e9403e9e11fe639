"""sum_detok: summary token ids to text (plain python, 1 instance, no batching).

SUMMARY_IDS [m] INT32 -> TEXT [1] STRING: each id spelled as a syllable of a toy 30011-word
vocabulary, joined by spaces.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
_VOWELS = ["a", "e", "i", "o", "u"]


def _word(i):
    i = int(i)
    return (
        _ONSETS[i % 14] + _VOWELS[(i // 14) % 5] + _ONSETS[(i // 70) % 14] + _VOWELS[(i // 980) % 5]
    )


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            ids = pb_utils.get_input_tensor_by_name(request, "SUMMARY_IDS").as_numpy().reshape(-1)
            text = " ".join(_word(i) for i in ids).encode()
            out = pb_utils.Tensor("TEXT", np.array([text], dtype=np.object_))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
