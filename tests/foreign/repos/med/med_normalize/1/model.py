"""med_normalize: intensity normalisation (plain python, dynamic batching, 2 instances).

SCAN [n, 64, 64] FP16 -> NORMED [n, 64, 64] FP16: each scan clipped to a lung window and
z-scored. About 3 ms per batch, plus ``batch_delay_s`` (config parameter, 0 when absent):
``med_normalize_slow_saturation`` deploys ``batch_delay_s=2`` through the repository API (a
denoising step that fell back to the CPU).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.delay_s = float(params.get("batch_delay_s", {}).get("string_value", "0"))

    def execute(self, requests):
        time.sleep(0.003 + self.delay_s)
        responses = []
        for request in requests:
            scan = pb_utils.get_input_tensor_by_name(request, "SCAN").as_numpy().astype(np.float32)
            scan = np.clip(scan, -1.0, 1.0)
            mean = scan.mean(axis=(1, 2), keepdims=True)
            std = scan.std(axis=(1, 2), keepdims=True) + 1e-3
            normed = ((scan - mean) / std).astype(np.float16)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("NORMED", normed)]))
        return responses
