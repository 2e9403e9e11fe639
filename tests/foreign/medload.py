"""The ``med`` family's clients: tritonclient.http, FP16 scans, no request ids.

Why a client of its own: ``observability.load.TritonClient`` sends neither FP16 tensors nor a
model version. Each background request is ``med_gateway`` infer of a batch of 1 to 4 scans
(SCAN [b, 64, 64] FP16, PATIENT_AGE [b, 1] INT64); every other one is followed by a call of
``med_classifier`` **version 1** straight from the client (the radiologists' viewer, which
still pins the previous classifier) with NORMED [b, 64, 64] FP16. No request ids, as
tritonclient and perf_analyzer send them by default.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from observability.load.client import Outcome, Status
from tests.foreign.seqload import HttpClient, failed

__all__ = ["MedClient", "scans"]

_DTYPES = {
    np.dtype(np.float16): "FP16",
    np.dtype(np.float32): "FP32",
    np.dtype(np.int64): "INT64",
}


def scans(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A batch of b = 1 to 4 scans and their patients' ages."""
    b = int(rng.integers(1, 5))
    return {
        "SCAN": (rng.standard_normal((b, 64, 64)) * 0.4).astype(np.float16),
        "PATIENT_AGE": rng.integers(1, 96, size=(b, 1)).astype(np.int64),
    }


class MedClient(HttpClient):
    """``infer`` has ``TritonClient.infer``'s signature plus ``version``."""

    def __init__(self, url: str, timeout_s: float, send_ids: bool = False) -> None:
        super().__init__(url, timeout_s)
        self.timeout_s = timeout_s
        self.send_ids = send_ids

    def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        request_id: str = "",
        fault: str = "",
        parameters: Mapping[str, str | int | float] | None = None,
        version: str = "",
    ) -> Outcome:
        tc = self._tc
        items = []
        for name, array in inputs.items():
            item = tc.InferInput(name, list(array.shape), _DTYPES[array.dtype])
            item.set_data_from_numpy(array)
            items.append(item)
        rid = request_id if self.send_ids else ""
        started = time.monotonic()
        try:
            result = self._client.infer(
                model,
                items,
                model_version=version,
                request_id=rid,
                parameters=dict(parameters) if parameters else None,
            )
        except Exception as err:
            return failed(rid, model, fault, started, err)
        latency = time.monotonic() - started
        shapes = {
            str(o["name"]): tuple(int(d) for d in o.get("shape", []))
            for o in result.get_response().get("outputs", [])
        }
        return Outcome(rid, model, fault, Status.OK, started, latency, "", shapes)

    def load_model(self, model: str, config: str | None = None) -> None:
        self._client.load_model(model, config=config)

    def model_config(self, model: str) -> dict[str, Any]:
        return dict(self._client.get_model_config(model))
