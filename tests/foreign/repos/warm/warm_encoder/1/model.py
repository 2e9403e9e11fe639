"""warm_encoder: the probe encoder (plain python, dynamic batching, 2 instances, model_warmup).

SIGNAL [b, 20] -> EMBED [b, 32] FP32 (a fixed random projection, seed 5, and a tanh). About
4 ms per batch plus 0.5 ms per request.

Each instance's first execute pays a lazy set-up of ``setup_s`` seconds (config parameter,
3 in the repository; the server environment's ``WARM_ENCODER_SETUP_S`` overrides it). The
config's ``model_warmup`` makes Triton run 5 executes on each instance during the load (the
instance counts its executes; the first ``sum(count)`` of them are the warmup's, since Triton
sends no client request to an instance before its warmup ended), so the set-up is paid before
the model is READY.

Config parameters a deploy adds (through the repository API), about the warmup executes only:

* ``warmup_step_s=<s>``: each warmup execute sleeps that long more (a slow warmup);
* ``warmup_hang_s=<s>`` (capped at 600): the first warmup execute sleeps that long (a warmup
  that never returns);
* ``warmup_fail=<value>``: the first warmup execute raises RuntimeError, on every instance,
  or, where the value is an instance name (``warm_encoder_0_1``), on that instance only.
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _seconds(text, cap=600.0):
    try:
        return min(max(float(text), 0.0), cap)
    except (TypeError, ValueError):
        return 0.0


def _warmup_executes(config):
    total = 0
    for sample in config.get("model_warmup", []):
        if int(sample.get("batch_size", 0)) > 0:
            total += int(sample.get("count", 0)) or 1
    return total


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        self.setup_s = _seconds(os.environ.get("WARM_ENCODER_SETUP_S", params.get("setup_s")))
        self.step_s = _seconds(params.get("warmup_step_s"))
        self.hang_s = _seconds(params.get("warmup_hang_s"))
        fail = params.get("warmup_fail")
        self.fail = fail is not None and fail in ("1", args["model_instance_name"])
        self.warmups = _warmup_executes(config)
        self.calls = 0
        self.weights = np.random.default_rng(5).standard_normal((20, 32)).astype(np.float32)

    def execute(self, requests):
        self.calls += 1
        if self.calls == 1 and self.setup_s:
            time.sleep(self.setup_s)  # the lazy set-up: projection tables built on first use
        if self.calls <= self.warmups:
            if self.calls == 1 and self.hang_s:
                time.sleep(self.hang_s)
            if self.calls == 1 and self.fail:
                raise RuntimeError(
                    "warm_encoder: warmup produced NaN embeddings: projection table "
                    "enc-v7.npz is corrupt"
                )
            if self.step_s:
                time.sleep(self.step_s)
        time.sleep(0.004 + 0.0005 * len(requests))
        responses = []
        for request in requests:
            signal = pb_utils.get_input_tensor_by_name(request, "SIGNAL").as_numpy()
            embed = np.tanh(signal.reshape(-1, 20) @ self.weights).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("EMBED", embed)]))
        return responses
