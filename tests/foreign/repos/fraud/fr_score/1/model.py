"""fr_score: the risk scorer (plain python, dynamic batching, 2 instances).

RISK [1] per row: a logistic score of the first 16 SIGNALS (fewer when the row is shorter)
with the weights of the risk table the config names. A config parameter switches on a
deploy bug (every request fails, whatever it carries):

* ``risk_table``: the name of the risk table to score with (default ``baseline``, the only
  table this version ships). A config that names another table (``fr_score_raises`` deploys
  ``risk_table=merchant_v2`` through the repository API) makes every execute raise
  ``KeyError: 'merchant_v2'`` in ``_weights``.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _table_name(model_config):
    value = model_config.get("parameters", {}).get("risk_table", {}).get("string_value")
    return value or "baseline"


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(23)
        self.tables = {"baseline": rng.standard_normal(16).astype(np.float32) / 4}
        self.table = _table_name(json.loads(args["model_config"]))

    def _weights(self):
        return self.tables[self.table]

    def execute(self, requests):
        weights = self._weights()
        time.sleep(0.002)
        out = []
        for request in requests:
            signals = pb_utils.get_input_tensor_by_name(request, "SIGNALS").as_numpy()
            signals = signals.astype(np.float32).reshape(signals.shape[0], -1)
            k = min(16, signals.shape[1])
            risk = 1.0 / (1.0 + np.exp(-(signals[:, :k] @ weights[:k])))
            out.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("RISK", risk.astype(np.float32).reshape(-1, 1))]
                )
            )
        return out
