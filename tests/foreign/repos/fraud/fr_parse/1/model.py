"""fr_parse: the transaction parser (plain python, dynamic batching, 1 instance).

FIELDS [12] = each TXN_ROW standardised (amount, time, merchant code, ... as z-scores of the
row), about a millisecond per batch. Fault, environment ``FR_PARSE_COLD_START_S=<s>`` (capped
at 30): the first execute after each load sleeps that long (the merchant code table is
loaded lazily).
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        try:
            cold = float(os.environ.get("FR_PARSE_COLD_START_S", "0"))
        except ValueError:
            cold = 0.0
        self.cold_s = min(max(cold, 0.0), 30.0)

    def execute(self, requests):
        if self.cold_s:
            time.sleep(self.cold_s)
            self.cold_s = 0.0
        time.sleep(0.001)
        out = []
        for request in requests:
            rows = pb_utils.get_input_tensor_by_name(request, "TXN_ROW").as_numpy()
            rows = rows.astype(np.float32).reshape(-1, 12)
            fields = (rows - rows.mean(axis=1, keepdims=True)) / (
                rows.std(axis=1, keepdims=True) + 1e-3
            )
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("FIELDS", fields)]))
        return out
