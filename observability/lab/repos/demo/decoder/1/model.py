"""decoder: one decode step, with the ``shape_growth`` fault.

Healthy (replace semantics): TOKEN_IDS out = TOKEN_IDS in + one new token.

``fault=shape_growth`` reproduces the custom-decoder bug of triton-inference-server/server#7383:
the instance keeps the sequence in ``self`` and APPENDS each incoming TOKEN_IDS to it instead of
replacing it. Since ``generate`` feeds the whole sequence back every step, the output roughly
doubles per step (visible in the verbose log's ``decoder response output: ... shape: [N]``).
The state is capped at 65536 elements so memory stays bounded, and it is cleared whenever a
request arrives without this fault, so healthy requests afterwards are normal.
"""

from __future__ import annotations

import json

import numpy as np
import triton_python_backend_utils as pb_utils

_STATE_CAP = 65536
_VOCAB = 32000


def _params(request) -> dict:
    """The request's parameters (JSON object) as a dict; {} when absent or malformed."""
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _next_token(tokens: np.ndarray) -> np.int64:
    """A deterministic 'sampled' token from the tail of the sequence."""
    return np.int64((int(tokens[-4:].sum()) * 31 + tokens.size) % _VOCAB)


class TritonPythonModel:
    """TOKEN_IDS INT64 [-1] -> TOKEN_IDS INT64 [-1] (input + one token)."""

    def initialize(self, args: dict) -> None:
        self._state: np.ndarray | None = None  # only used by the shape_growth bug

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            ids = pb_utils.get_input_tensor_by_name(request, "TOKEN_IDS").as_numpy()
            ids = ids.astype(np.int64).reshape(-1)
            if _params(request).get("fault") == "shape_growth":
                base = ids if self._state is None else np.concatenate([self._state, ids])
                out = np.append(base, _next_token(base))[-_STATE_CAP:]
                self._state = out
            else:
                self._state = None
                out = np.append(ids, _next_token(ids))
            responses.append(
                pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("TOKEN_IDS", out)])
            )
        return responses
