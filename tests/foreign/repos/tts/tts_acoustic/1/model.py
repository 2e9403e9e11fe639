"""tts_acoustic: the acoustic model (plain python, dynamic batching, 2 instances).

PHONES [b, 16] -> MEL [b, 64]: each phone id is looked up in the lexicon's table (4 bins a
frame). About 10 ms per batch plus 3 ms per request.

Config parameter ``lexicon`` (``v1`` when absent): ``v2`` is a lexicon whose number
expansion was moved to the text frontend; its table has no digit phones (30..39), and the
frontend was not redeployed, so a batch that holds a text with a digit raises ``KeyError``
in execute (Triton fails every request of that batch). ``tts_acoustic_partial_errors``
deploys it through the repository API.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _table(lexicon):
    ids = range(27) if lexicon == "v2" else [*range(27), *range(30, 40)]
    return {i: np.array([i, i / 2, i / 4, i / 8], dtype=np.float32) / 40.0 for i in ids}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        lexicon = config.get("parameters", {}).get("lexicon", {}).get("string_value", "v1")
        self.table = _table(lexicon)

    def execute(self, requests):
        time.sleep(0.010 + 0.003 * len(requests))
        responses = []
        for request in requests:
            phones = pb_utils.get_input_tensor_by_name(request, "PHONES").as_numpy()
            rows = [self.table[int(p)] for p in phones.reshape(-1)]  # KeyError: unknown phone
            mel = np.concatenate(rows).reshape(1, 64).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("MEL", mel)]))
        return responses
