"""med_gateway: the medical image triage front door (python BLS, 3 instances, synchronous
``exec()`` children).

Per request (a batch of b = 1 to 4 scans: SCAN [b, 64, 64] FP16, PATIENT_AGE [b, 1] INT64) it
calls, one after the other, with ``exec()``:

* ``med_normalize`` (SCAN [b, 64, 64] -> NORMED [b, 64, 64], dynamic batching);
* ``med_classifier`` **version 3**, pinned with ``model_version=3`` (NORMED -> LOGITS [b, 5]);
  version 1 is served too, for the viewer that calls it directly;
* ``med_report`` (LOGITS [b, 5], AGE [b] -> FINDING [b] STRING, PRIORITY [b] INT32);

and answers TRIAGE [b, 1] STRING and PRIORITY [b, 1] INT32. BLS children carry no request id
and are built with ``trace=request.trace()``. A child's error response (or an exception from
``exec()``) is answered as an error response naming the child. Nothing is logged.

Config parameter ``cold_start_s`` (0 when absent): each instance's first execute after a load
sleeps that long (a DICOM tag dictionary opened lazily).

Fault, request parameter ``med_fault``: ``classify_hang`` makes the med_classifier call carry
``hang_s`` (default 300): that request's version 3 execute sleeps that long.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_CLASSIFIER_VERSION = 3


class _ChildError(Exception):
    pass


def _call(model, inputs, outputs, request, **kwargs):
    try:
        response = pb_utils.InferenceRequest(
            model_name=model,
            requested_output_names=outputs,
            inputs=inputs,
            trace=request.trace(),
            **kwargs,
        ).exec()
    except pb_utils.TritonModelException as err:
        raise _ChildError(f"{model}: {err}") from err
    if response.has_error():
        raise _ChildError(f"{model}: {response.error().message()}")
    return [pb_utils.get_output_tensor_by_name(response, o).as_numpy() for o in outputs]


def _classifier_params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    if not isinstance(params, dict) or params.get("med_fault") != "classify_hang":
        return {}
    return {"hang_s": str(params.get("hang_s", 300))}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.cold_start_s = float(params.get("cold_start_s", {}).get("string_value", "0"))

    def _one(self, request):
        scan = pb_utils.get_input_tensor_by_name(request, "SCAN").as_numpy()
        age = pb_utils.get_input_tensor_by_name(request, "PATIENT_AGE").as_numpy().reshape(-1)
        try:
            (normed,) = _call("med_normalize", [pb_utils.Tensor("SCAN", scan)], ["NORMED"], request)
            (logits,) = _call(
                "med_classifier",
                [pb_utils.Tensor("NORMED", normed)],
                ["LOGITS"],
                request,
                model_version=_CLASSIFIER_VERSION,
                parameters=_classifier_params(request),
            )
            finding, priority = _call(
                "med_report",
                [
                    pb_utils.Tensor("LOGITS", logits.astype(np.float32)),
                    pb_utils.Tensor("AGE", age.astype(np.int64)),
                ],
                ["FINDING", "PRIORITY"],
                request,
            )
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"med_gateway: {err}"))
        triage = np.array(finding, dtype=np.object_).reshape(-1, 1)
        return pb_utils.InferenceResponse(
            [
                pb_utils.Tensor("TRIAGE", triage),
                pb_utils.Tensor("PRIORITY", priority.astype(np.int32).reshape(-1, 1)),
            ]
        )

    def execute(self, requests):
        if self.cold_start_s:
            time.sleep(self.cold_start_s)
            self.cold_start_s = 0.0
        return [self._one(r) for r in requests]
