"""sess_tracker: a stateful model behind the sequence batcher; both versions run this file.

The state of a sequence is the trail of its last ``WINDOW`` readings, kept in a dict keyed
by the CORRID control input: START resets it, END drops it. TRAIL returns the trail
(``[1, k, 6]``, k = 1..4 within a sequence, back to 1 at the next), SCORE its mean.
Version 2 (``2/model.py`` loads this file) smooths the trail exponentially.

Faults, read from each request's parameters (the client's request parameters):

* ``st_fault=hang``: the batch holding the request never returns (``hang_s``, default 300,
  capped at 600): a stuck step. Its instance is held, so every later step of the sequences
  bound to that instance (the hung sequence's own next steps too) waits in the batcher.
* ``st_fault=leak``: from this request on, the instance that ran it appends every reading
  of every sequence to one instance-wide trail that START never resets (state keyed by the
  instance instead of the sequence): TRAIL grows by one row per request across sequences.

``STATE_LEAK=1`` (environment): every instance leaks from its first request on.

``STATE_V2_COLD_START_S`` (environment): version 2 loads its 'weights' lazily in its first
execute after every load, sleeping that long (capped at 30 s).
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

WINDOW = 4
MAX_LEAK_ROWS = 4096


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _num(params, name, default, high):
    try:
        return min(max(float(params.get(name, default)), 0.0), high)
    except (TypeError, ValueError):
        return default


def _flag(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return tensor is not None and bool(tensor.as_numpy().reshape(-1)[0])


class TritonPythonModel:
    def initialize(self, args):
        self.version = int(args.get("model_version", "1") or 1)
        self.trails = {}
        self.leak = (
            np.zeros((0, 6), dtype=np.float32) if os.environ.get("STATE_LEAK") == "1" else None
        )
        self.cold_s = 0.0
        if self.version == 2:
            try:
                self.cold_s = min(max(float(os.environ.get("STATE_V2_COLD_START_S", "0")), 0), 30)
            except ValueError:
                self.cold_s = 0.0

    def _trail(self, corrid, start, reading):
        if self.leak is not None:
            self.leak = np.concatenate([self.leak, reading[None, :]])[-MAX_LEAK_ROWS:]
            return self.leak
        trail = reading[None, :] if start else self.trails.get(corrid)
        if trail is None:
            trail = reading[None, :]
        elif not start:
            trail = np.concatenate([trail, reading[None, :]])[-WINDOW:]
        self.trails[corrid] = trail
        return trail

    def execute(self, requests):
        if self.cold_s:
            time.sleep(self.cold_s)
            self.cold_s = 0.0
        params = [_params(r) for r in requests]
        hang = [p for p in params if p.get("st_fault") == "hang"]
        if hang:
            time.sleep(_num(hang[0], "hang_s", 300.0, 600.0))
        if any(p.get("st_fault") == "leak" for p in params) and self.leak is None:
            self.leak = np.zeros((0, 6), dtype=np.float32)
        responses = []
        for request in requests:
            reading = pb_utils.get_input_tensor_by_name(request, "READING").as_numpy()
            reading = reading.reshape(-1)[:6].astype(np.float32)
            corrid = int(
                pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy().reshape(-1)[0]
            )
            trail = self._trail(corrid, _flag(request, "START"), reading)
            if self.version == 2:
                weights = 0.5 ** np.arange(len(trail))[::-1, None]
                trail = (trail * weights).astype(np.float32)
            if _flag(request, "END"):
                self.trails.pop(corrid, None)
            score = np.array([[float(trail.mean())]], dtype=np.float32)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("TRAIL", trail[None, :, :].astype(np.float32)),
                        pb_utils.Tensor("SCORE", score),
                    ]
                )
            )
        time.sleep(0.01)
        return responses
