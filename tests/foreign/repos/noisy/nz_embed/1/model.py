"""nz_embed: the embedder of the noisy pipeline (plain python, dynamic batching, 2 instances).

EMB [4] per row of X [8] (a fixed random projection, normalised), about 3 ms per batch.
Prints a debug line to stdout and one to stderr per batch and logs it with ``logging``
(INFO, stderr) and ``pb_utils.Logger``. Fault, environment ``NZ_EMBED_COLD_START_S=<s>``
(capped at 30): the first execute after each load sleeps that long (weights loaded lazily).
"""

import logging
import os
import sys
import time

import numpy as np
import triton_python_backend_utils as pb_utils

logging.basicConfig(
    stream=sys.stderr,
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("nz_embed")


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]
        try:
            cold = float(os.environ.get("NZ_EMBED_COLD_START_S", "0"))
        except ValueError:
            cold = 0.0
        self.cold_s = min(max(cold, 0.0), 30.0)
        self.proj = np.random.default_rng(5).standard_normal((8, 4)).astype(np.float32)
        self.logger = getattr(pb_utils, "Logger", None)
        print(f"[nz_embed] initialize {self.name}, cold start {self.cold_s} s", flush=True)

    def execute(self, requests):
        if self.cold_s:
            log.info("loading embedding weights (lazy)")
            time.sleep(self.cold_s)
            self.cold_s = 0.0
        print(f"[nz_embed] got batch of {len(requests)}", flush=True)
        print(f"[nz_embed] {self.name}: batch of {len(requests)}", file=sys.stderr, flush=True)
        log.info("embedding %d request(s)", len(requests))
        if self.logger is not None:
            self.logger.log_info(f"nz_embed: batch of {len(requests)} on {self.name}")
        time.sleep(0.003)
        out = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy().astype(np.float32)
            emb = x.reshape(-1, 8) @ self.proj
            emb /= np.linalg.norm(emb, axis=1, keepdims=True) + 1e-6
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("EMB", emb)]))
        return out
