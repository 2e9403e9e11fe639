"""emb_tokenize: hashed word ids (plain python, 2 instances).

RAW_TEXT [b, 1] -> TOKEN_IDS [b, 32]: each word's crc32 modulo 30000, plus 1, zero padded.
About 2 ms per batch.

Config parameter ``cold_start_s`` (0 when absent): the first execute after a load sleeps that
long (a lazily built vocabulary). ``emb_tokenize_cold_start_iso`` deploys it through the
repository API.
"""

import json
import time
import zlib

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.cold_start_s = float(params.get("cold_start_s", {}).get("string_value", "0"))

    def execute(self, requests):
        if self.cold_start_s:
            time.sleep(self.cold_start_s)
            self.cold_start_s = 0.0
        time.sleep(0.002)
        responses = []
        for request in requests:
            texts = pb_utils.get_input_tensor_by_name(request, "RAW_TEXT").as_numpy()
            ids = np.zeros((texts.shape[0], 32), dtype=np.int64)
            for row, text in enumerate(texts.reshape(-1)):
                words = text.decode(errors="replace").split()[:32]
                for col, word in enumerate(words):
                    ids[row, col] = zlib.crc32(word.encode()) % 30000 + 1
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("TOKEN_IDS", ids)]))
        return responses
