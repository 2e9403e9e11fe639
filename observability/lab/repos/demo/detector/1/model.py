"""detector: a dynamically batched head with simulated compute and the ``hang`` fault.

Every execute sleeps ~25 ms (+0.25 ms per request in the batch) so that batch sizes and BLS
concurrency limits show up in ``/v2/models/stats`` (execution_count vs inference_count).

Responses always go through ``request.get_response_sender()`` and execute returns None (allowed
for non-decoupled models since python backend 24.04). ``fault=hang`` has two modes:

* ``hang_mode=block`` (default): execute itself blocks for ``hang_s`` (default 120) seconds, a
  stuck forward pass. The child stays EXECUTING (never RELEASED) and holds one of the two
  detector instances meanwhile; the other keeps serving healthy traffic.
* ``hang_mode=hold``: the single FINAL response is sent from a timer thread only after
  ``hang_s``. The detector instance keeps serving other requests and the BLS parent's
  ``await async_exec()`` does not return. Seen on 2.51: Triton logs the child request as
  RELEASED as soon as execute returns, so here only the PARENT stays EXECUTING.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_BASE_COMPUTE_S = 0.025
_PER_REQUEST_COMPUTE_S = 0.00025


def _params(request) -> dict:
    """The request's parameters (JSON object) as a dict; {} when absent or malformed."""
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _knob(params: dict, name: str, default: float) -> float:
    """A numeric knob: int, float or numeric string (BLS children get floats as strings)."""
    try:
        return float(params.get(name, default))
    except (TypeError, ValueError):
        return default


def _boxes(features: np.ndarray) -> np.ndarray:
    """Four deterministic [x, y, w, h] boxes per batch row, flattened: shape [batch, 16]."""
    rows = features.reshape(features.shape[0], -1) if features.ndim else features.reshape(1, 1)
    stats = (
        np.stack([rows.mean(axis=1), rows.std(axis=1), rows.min(axis=1), rows.max(axis=1)], axis=1)
        if rows.shape[1]
        else np.zeros((rows.shape[0], 4), dtype=np.float32)
    )
    scale = np.linspace(0.25, 1.0, 4, dtype=np.float32)
    return (stats[:, None, :] * scale[None, :, None]).reshape(rows.shape[0], 16).astype(np.float32)


class TritonPythonModel:
    """FEATURES FP32 [batch, -1] -> BOXES FP32 [batch, 16]."""

    def initialize(self, args: dict) -> None:
        self._held: set[threading.Timer] = set()
        self._lock = threading.Lock()

    def _send_later(self, sender, response, delay_s: float) -> None:
        """Hold a response for ``delay_s`` seconds, then send it with the FINAL flag."""

        def fire() -> None:
            with self._lock:
                self._held.discard(timer)
            try:
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            except Exception as exc:  # the request may be gone after an unload
                print(f"detector: held response could not be sent: {exc}", flush=True)

        timer = threading.Timer(delay_s, fire)
        timer.daemon = True
        with self._lock:
            self._held.add(timer)
        timer.start()

    def execute(self, requests: list) -> None:
        time.sleep(_BASE_COMPUTE_S + _PER_REQUEST_COMPUTE_S * len(requests))
        blocked: list[tuple[object, object]] = []
        block_s = 0.0
        for request in requests:
            sender = request.get_response_sender()
            features = pb_utils.get_input_tensor_by_name(request, "FEATURES").as_numpy()
            response = pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("BOXES", _boxes(features))]
            )
            params = _params(request)
            if params.get("fault") != "hang":
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            elif params.get("hang_mode", "block") != "hold":
                blocked.append((sender, response))
                block_s = max(block_s, _knob(params, "hang_s", 120.0))
            else:
                self._send_later(sender, response, _knob(params, "hang_s", 120.0))
        if blocked:
            time.sleep(block_s)  # the instance is stuck; its requests stay EXECUTING
            for sender, response in blocked:
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None

    def finalize(self) -> None:
        # Release held requests so an unload/shutdown is not stuck behind a demo hang.
        with self._lock:
            held = list(self._held)
        for timer in held:
            timer.cancel()
            timer.function()
