"""doc_layout: page layout detection (plain python, dynamic batching, 2 rate-limited
instances), PAGE [16] -> BOXES [4, 4] per page, about 3 ms per batch.

Faults, read from each request's parameters (doc_router forwards them):

* ``layout_hang_s``: the batch holding the request sleeps that long (a stuck forward pass);
  every page batched with it is stuck too, and the instance keeps its rate-limiter resource.
* ``embedded=1``: the page holds an embedded document: after 0.5 s the instance sends it to
  ``doc_router`` (BLS ``exec()``, blocking) and waits for its fields. When every doc_router
  instance is waiting on doc_layout, that call can never start.
* ``layout_slow_ms``: the page costs that much more (a high-resolution scan): a batch
  takes the sum of its pages' costs.
* ``grow=1``: switches on a bug in this instance: from then on it keeps every batch's boxes
  in an instance buffer and answers the whole buffer instead of the page's own boxes, so
  BOXES [n, 4] grows with every batch (up to 8192 rows).
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

MAX_ROWS = 8192


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _slow_s(params):
    try:
        return min(max(float(params.get("layout_slow_ms", 0)), 0.0), 1000.0) / 1000.0
    except (TypeError, ValueError):
        return 0.0


def _hang_s(params):
    try:
        return min(max(float(params.get("layout_hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        self.w = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(16, 4)
        self.leaking = False
        self.kept = np.zeros((0, 4), dtype=np.float32)

    def _embedded(self, page):
        time.sleep(0.5)
        sub = pb_utils.InferenceRequest(
            model_name="doc_router",
            requested_output_names=["FIELDS"],
            inputs=[pb_utils.Tensor("DOC", np.tile(page, 2).astype(np.float32))],
        )
        response = sub.exec()  # blocks until a doc_router instance is free: maybe never
        if response.has_error():
            raise pb_utils.TritonModelException(response.error().message())

    def execute(self, requests):
        params = [_params(r) for r in requests]
        hang = max(_hang_s(p) for p in params)
        if hang:
            time.sleep(hang)
        if any(p.get("grow") == "1" for p in params):
            self.leaking = True
        pages = []
        for request, p in zip(requests, params, strict=True):
            page = pb_utils.get_input_tensor_by_name(request, "PAGE").as_numpy().reshape(16)
            if p.get("embedded") == "1":
                self._embedded(page)
            pages.append(page)
        time.sleep(0.003 + sum(_slow_s(p) for p in params))
        boxes = [np.tanh(np.outer(np.ones(4, np.float32), page @ self.w)) for page in pages]
        if self.leaking:  # the bug: append instead of replace
            self.kept = np.concatenate([self.kept, *boxes])[-MAX_ROWS:]
            boxes = [self.kept for _ in boxes]
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("BOXES", b[None].astype(np.float32))])
            for b in boxes
        ]
