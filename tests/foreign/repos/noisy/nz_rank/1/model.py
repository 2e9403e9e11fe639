"""nz_rank: the ranker of the noisy pipeline (plain python, dynamic batching, 1 instance).

SCORE [1] per row of EMB [4], about 2 ms per batch. Prints a debug line to stdout and one to
stderr per batch (``errors=0 ok=N``, as a counter dump does) and logs it with ``logging``
(INFO, stderr) and ``pb_utils.Logger``. Fault, request parameter ``rank_hang_s``: the batch
that holds such a request sleeps that long (a stuck forward pass).
"""

import json
import logging
import sys
import time

import numpy as np
import triton_python_backend_utils as pb_utils

logging.basicConfig(
    stream=sys.stderr,
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("nz_rank")


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(max(float(params.get("rank_hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]
        self.ok = 0
        self.w = np.array([0.5, -0.25, 0.125, 1.0], dtype=np.float32)
        self.logger = getattr(pb_utils, "Logger", None)
        print(f"[nz_rank] initialize {self.name}", flush=True)

    def execute(self, requests):
        print(f"[nz_rank] got batch of {len(requests)}", flush=True)
        print(f"[nz_rank] errors=0 ok={self.ok}", file=sys.stderr, flush=True)
        log.info("ranking %d request(s)", len(requests))
        if self.logger is not None:
            self.logger.log_info(f"nz_rank: batch of {len(requests)}")
        hang = max(_hang_s(r) for r in requests)
        if hang:
            log.info("slow path: %.0f s", hang)
            time.sleep(hang)
        time.sleep(0.002)
        out = []
        for request in requests:
            emb = pb_utils.get_input_tensor_by_name(request, "EMB").as_numpy()
            score = emb.astype(np.float32).reshape(-1, 4) @ self.w
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SCORE", score.reshape(-1, 1))]))
            self.ok += 1
        return out
