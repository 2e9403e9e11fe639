"""doc_extract: field extraction (plain python, 1 instance, Triton's response cache on),
SIG [1] and NPAGES [1] -> FIELDS [8], about 2 ms.

A request parameter ``extract_hang_s`` (doc_router forwards it) makes its batch sleep that
long: a stuck lookup.

Its config parameters (a deploy sets them; the recorder's ``reload`` adds them):

* ``extract_cold_start_s``: the weights load lazily in the first execute after a load,
  which takes that long (at most 30 s); the requests queued behind it wait.
* ``extract_lock_bug=1``: the lazy loader takes the instance lock and the path that has
  just loaded forgets to release it, so every execute after the first waits for the lock
  (300 s): the extractor answers once after a load, then never again.
* ``extract_init_s``: ``initialize`` itself sleeps that long (at most 30 s).
* ``extract_fields``: how many fields the new schema has (default 8). The weights still
  hold 8, so any other value makes every execute raise ``ValueError`` (cannot reshape);
  requests whose answer is in Triton's response cache never reach execute and still succeed.
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _param(config, name, default=""):
    value = config.get("parameters", {}).get(name, {})
    return value.get("string_value", default) if isinstance(value, dict) else default


def _seconds(text):
    try:
        return min(max(float(text), 0.0), 30.0)
    except (TypeError, ValueError):
        return 0.0


def _hang_s(request):
    try:
        params = json.loads(request.parameters() or "{}")
        return min(max(float(params.get("extract_hang_s", 0)), 0.0), 600.0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.cold_s = _seconds(_param(config, "extract_cold_start_s", "0"))
        self.lock_bug = _param(config, "extract_lock_bug") == "1"
        try:
            self.fields = int(_param(config, "extract_fields", "8"))
        except ValueError:
            self.fields = 8
        time.sleep(_seconds(_param(config, "extract_init_s", "0")))
        self.lock = threading.Lock()
        self.weights = None

    def _ensure_loaded(self):
        if not self.lock.acquire(timeout=300):
            raise pb_utils.TritonModelException("extractor weights lock not acquired in 300 s")
        if self.weights is not None:
            self.lock.release()
            return
        time.sleep(self.cold_s)
        self.weights = np.linspace(0.5, 1.5, 8, dtype=np.float32)
        if not self.lock_bug:
            self.lock.release()

    def execute(self, requests):
        self._ensure_loaded()
        hang = max(_hang_s(r) for r in requests)
        if hang:
            time.sleep(hang)  # a stuck lookup (request parameter extract_hang_s)
        time.sleep(0.002)
        out = []
        for request in requests:
            sig = pb_utils.get_input_tensor_by_name(request, "SIG").as_numpy()
            npages = pb_utils.get_input_tensor_by_name(request, "NPAGES").as_numpy()
            fields = self.weights * float(sig[0]) / 256.0 + float(npages[0])
            fields = fields.reshape(self.fields)  # the new schema's field count
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("FIELDS", fields)]))
        return out
