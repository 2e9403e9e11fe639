"""vis_merge: joins the two branches of the fan-out: LABEL = argmax of the logits, SCORE =
its softmax probability scaled by the embedding's first component (a few ms of numpy)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "LOGITS").as_numpy()
            emb = pb_utils.get_input_tensor_by_name(request, "EMBEDDING").as_numpy()
            exp = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob = exp / exp.sum(axis=1, keepdims=True)
            label = prob.argmax(axis=1).astype(np.int32).reshape(-1, 1)
            score = (prob.max(axis=1) * (1.0 + 0.1 * emb[:, 0])).astype(np.float32)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("LABEL", label),
                        pb_utils.Tensor("SCORE", score.reshape(-1, 1)),
                    ]
                )
            )
        return responses
