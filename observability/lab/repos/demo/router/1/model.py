"""router: the BLS entry point of the demo pipeline (``async def execute``).

Healthy path: ``preprocess`` (awaited), then ``classifier`` and ``detector`` concurrently
(``asyncio.gather``), returning SCORES and BOXES. Every BLS child carries ``trace=request.trace()``
(so traces link child to parent) and a request id derived from the parent's (``<id>.preprocess``,
``<id>.classifier``, ``<id>.detector``, fan-out ``<id>.detector.<i>``; empty when the parent has
none), so the verbose log's per-request state lines can be joined. Every BLS response is checked
with ``has_error()`` and turned into an error response instead of an exception.

The request parameter ``fault`` selects a pathology (see README.md); all request parameters are
forwarded to the BLS children, which act on the faults that concern them:

* ``hang``: the detector child does not answer for ``hang_s`` (``hang_mode`` block|hold); this
  execute does not return meanwhile.
* ``slow``: the single-instance classifier sleeps ``slow_s`` per request; its queue grows.
* ``fanout``: ``fanout_n`` concurrent ``async_exec`` calls to the detector. ``async_exec`` runs
  through asyncio's default executor (min(32, cpu+4) threads), so only a handful are in flight
  at once: small detector batches and latency ~ ceil(n / threads) x detector execute time.
* ``callback``: a done-callback meant to resolve the awaited future raises instead; asyncio
  prints "Exception in callback ..." and the router gives up after ``callback_wait_s``.
* ``task_error``: a fire-and-forget task raises and is never awaited; asyncio prints "Task
  exception was never retrieved" and the router answers an error (its result is missing).

Instrumented with ``observability.bls`` (``TRITON_OBS_*`` settings): a span per request and per
BLS call, callback and task; hung calls reported while hung; ``triton_obs_bls_*`` on /metrics.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

from observability import bls

_MAX_FANOUT = 4096
_CHILD_IDS = os.environ.get("TRITON_OBS_DEMO_CHILD_IDS", "1") != "0"
"""Whether BLS children derive ids from their parent's; "0" sends them without, as
pb_utils.InferenceRequest does by default."""


class ChildError(Exception):
    """A BLS child answered an error, or a result the router needs never arrived."""


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


def _child_params(params: dict) -> dict[str, bool | int | str]:
    """Parameters for a BLS child: the python backend accepts only bool, int and str values."""
    return {
        str(key): value if isinstance(value, (bool, int, str)) else str(value)
        for key, value in params.items()
    }


def _output(response, name: str) -> np.ndarray:
    tensor = pb_utils.get_output_tensor_by_name(response, name)
    if tensor is None:
        raise ChildError(f"BLS response has no output '{name}'")
    return tensor.as_numpy()


class TritonPythonModel:
    """RAW FP32 [-1] -> SCORES FP32 [-1], BOXES FP32 [-1]."""

    def initialize(self, args: dict) -> None:
        bls.setup(args)

    def finalize(self) -> None:
        bls.shutdown()

    @bls.traced_execute
    async def execute(self, requests: list) -> list:
        return list(await asyncio.gather(*(self._handle(request) for request in requests)))

    async def _handle(self, request) -> pb_utils.InferenceResponse:
        try:
            scores, boxes = await self._route(request)
        except ChildError as exc:
            return pb_utils.InferenceResponse(
                output_tensors=[], error=pb_utils.TritonError(f"router: {exc}")
            )
        return pb_utils.InferenceResponse(
            output_tensors=[
                pb_utils.Tensor("SCORES", scores.astype(np.float32).reshape(-1)),
                pb_utils.Tensor("BOXES", boxes.astype(np.float32).reshape(-1)),
            ]
        )

    @staticmethod
    def _child(parent, model: str, suffix: str, inputs: list, outputs: list[str], params: dict):
        parent_id = parent.request_id() if _CHILD_IDS else ""
        return pb_utils.InferenceRequest(
            model_name=model,
            inputs=inputs,
            requested_output_names=outputs,
            request_id=f"{parent_id}.{suffix}" if parent_id else "",
            trace=parent.trace(),
            parameters=params,
        )

    @staticmethod
    async def _call(parent, child, model: str):
        response = await bls.async_exec(parent, child, model=model)
        if response.has_error():
            raise ChildError(f"{model}: {response.error().message()}")
        return response

    async def _route(self, request) -> tuple[np.ndarray, np.ndarray]:
        params = _params(request)
        fault = params.get("fault")
        child_params = _child_params(params)

        def classifier_req(suffix: str = "classifier"):
            return self._child(
                request,
                "classifier",
                suffix,
                [pb_utils.Tensor("FEATURES", features)],
                ["SCORES"],
                child_params,
            )

        def detector_req(suffix: str = "detector"):
            return self._child(
                request,
                "detector",
                suffix,
                [pb_utils.Tensor("FEATURES", features[None, :])],
                ["BOXES"],
                child_params,
            )

        raw = pb_utils.get_input_tensor_by_name(request, "RAW").as_numpy()
        pre = await self._call(
            request,
            self._child(
                request,
                "preprocess",
                "preprocess",
                [pb_utils.Tensor("RAW", raw)],
                ["FEATURES"],
                child_params,
            ),
            "preprocess",
        )
        features = _output(pre, "FEATURES").astype(np.float32)

        if fault == "fanout":
            n = int(min(max(_knob(params, "fanout_n", 64), 1), _MAX_FANOUT))
            responses = await asyncio.gather(
                self._call(request, classifier_req(), "classifier"),
                *(self._call(request, detector_req(f"detector.{i}"), "detector") for i in range(n)),
            )
            return _output(responses[0], "SCORES"), _output(responses[1], "BOXES")

        if fault == "callback":
            return await self._callback_fault(
                request, classifier_req(), detector_req(), _knob(params, "callback_wait_s", 10.0)
            )

        if fault == "task_error":
            return await self._task_error_fault(
                request, classifier_req(), detector_req(), _knob(params, "callback_wait_s", 10.0)
            )

        scores_resp, boxes_resp = await asyncio.gather(
            self._call(request, classifier_req(), "classifier"),
            self._call(request, detector_req(), "detector"),
        )
        return _output(scores_resp, "SCORES"), _output(boxes_resp, "BOXES")

    async def _callback_fault(self, request, classifier_req, detector_req, wait_s: float):
        """The classifier result is delivered by a done-callback that raises before delivering."""
        loop = asyncio.get_running_loop()
        scores: asyncio.Future = loop.create_future()

        def deliver(done: asyncio.Future) -> None:
            outputs = {tensor.name(): tensor for tensor in done.result().output_tensors()}
            # Bug: the head's output is SCORES, not LOGITS. KeyError escapes into asyncio, which
            # logs "Exception in callback ..." and `scores` is never resolved.
            scores.set_result(outputs["LOGITS"].as_numpy())

        asyncio.ensure_future(
            bls.async_exec(request, classifier_req, model="classifier")
        ).add_done_callback(bls.callback(deliver))
        boxes = _output(await self._call(request, detector_req, "detector"), "BOXES")
        try:
            return await asyncio.wait_for(scores, timeout=wait_s), boxes
        except TimeoutError:
            raise ChildError(
                f"classifier result not delivered within {wait_s:g} s (done-callback failed?)"
            ) from None

    async def _task_error_fault(self, request, classifier_req, detector_req, wait_s: float):
        """A fire-and-forget task fills a result slot, raises instead, and is never awaited."""
        results: dict[str, np.ndarray] = {}

        async def fetch_scores() -> None:
            response = await bls.async_exec(request, classifier_req, model="classifier")
            outputs = {tensor.name(): tensor for tensor in response.output_tensors()}
            results["scores"] = outputs["LOGITS"].as_numpy()  # Bug: KeyError, output is SCORES

        task = bls.task(fetch_scores())  # fire-and-forget: never awaited
        boxes = _output(await self._call(request, detector_req, "detector"), "BOXES")
        # Bounded wait for determinism only; asyncio.wait() does not retrieve the exception.
        await asyncio.wait({task}, timeout=wait_s)
        del task
        gc.collect()  # the dropped task is collected now: "Task exception was never retrieved"
        if "scores" not in results:
            raise ChildError("classifier scores missing (background task failed)")
        return results["scores"], boxes
