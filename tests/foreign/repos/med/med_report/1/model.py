"""med_report: the triage report writer (plain python, 1 instance, max_batch_size 0).

LOGITS [n, 5] FP32 and AGE [n] INT64 -> FINDING [n] STRING (one line of text per scan) and
PRIORITY [n] INT32 (1 urgent ... 3 routine).

Config parameter ``locale`` (``en-US`` when absent): the template's language. Only en-US has
a template: any other locale answers every request with an error response
(``InferenceResponse(error=...)``), raising nothing. ``med_report_errors`` deploys
``locale=de-CH`` through the repository API.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_LABELS = ("normal", "nodule", "effusion", "fracture", "other")
_TEMPLATES = {"en-US": "{label} ({p:.0%}), patient {age} y"}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.locale = params.get("locale", {}).get("string_value", "en-US")

    def _one(self, request):
        template = _TEMPLATES.get(self.locale)
        if template is None:
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(
                    f"med_report: no report template for locale '{self.locale}' "
                    f"(have {', '.join(_TEMPLATES)})"
                )
            )
        logits = pb_utils.get_input_tensor_by_name(request, "LOGITS").as_numpy()
        age = pb_utils.get_input_tensor_by_name(request, "AGE").as_numpy().reshape(-1)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs = probs / probs.sum(axis=1, keepdims=True)
        best = probs.argmax(axis=1)
        texts, priority = [], []
        for row, label in enumerate(best):
            texts.append(template.format(label=_LABELS[label], p=probs[row, label], age=age[row]))
            urgent = label in (2, 3) or (label == 1 and age[row] >= 60)
            priority.append(1 if urgent else (3 if label == 0 else 2))
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("FINDING", np.array([t.encode() for t in texts], dtype=np.object_)),
                pb_utils.Tensor("PRIORITY", np.array(priority, dtype=np.int32)),
            ]
        )

    def execute(self, requests):
        time.sleep(0.002)
        return [self._one(r) for r in requests]
