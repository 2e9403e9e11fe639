"""vid_detect: the detector (plain python, dynamic batching, 2 instances).

FRAME [b, 48] -> BOXES [b, 8] FP32: per frame, the 2 regions (of 4 of 12 values) with the
largest mean, each as a box of 4 (x, y, w, h). About 15 ms per batch plus 2 ms per frame.

Config parameter ``contract`` (``ok`` when absent), a response-contract bug deployed with a
new config through the repository API:

* ``short``: an off-by-one in the batch loop (``range(len(requests) - 1)``): the last
  request of every batch gets no response (a batch of one gets an empty list);
* ``dtype``: BOXES is answered as float64 (the ``astype(np.float32)`` was dropped), against
  the config's TYPE_FP32;
* ``name``: the output is answered as ``BOX`` (renamed in the code, not in the config);
* ``none``: a frame whose first value is below 0.3 (about 3 in 10) is answered ``None``
  (an early ``responses.append(None)`` for "no detection").
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _boxes(frame):
    regions = frame.reshape(4, 12)
    best = np.argsort(regions.mean(axis=1))[-2:]
    return np.concatenate([regions[i, :4] for i in best])


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.contract = params.get("contract", {}).get("string_value", "ok")

    def execute(self, requests):
        time.sleep(0.015 + 0.002 * len(requests))
        count = len(requests) - 1 if self.contract == "short" else len(requests)
        responses = []
        for request in requests[:count]:
            frame = pb_utils.get_input_tensor_by_name(request, "FRAME").as_numpy()
            boxes = _boxes(frame.reshape(-1))
            if self.contract == "none" and frame.reshape(-1)[0] < 0.3:
                responses.append(None)
                continue
            if self.contract == "dtype":
                out = pb_utils.Tensor("BOXES", boxes.reshape(1, 8).astype(np.float64))
            elif self.contract == "name":
                out = pb_utils.Tensor("BOX", boxes.reshape(1, 8).astype(np.float32))
            else:
                out = pb_utils.Tensor("BOXES", boxes.reshape(1, 8).astype(np.float32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
