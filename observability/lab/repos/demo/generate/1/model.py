"""generate: an LLM-style decode loop over BLS, with the ``deadlock`` fault.

Healthy path: call ``decoder`` ``MAX_TOKENS`` times with blocking ``exec()``, feeding each step's
TOKEN_IDS back in. Children get ``trace=request.trace()``, request ids ``<id>.decoder.<step>``
(empty when the parent has none) and the parent's request parameters, so ``fault=shape_growth``
reaches the decoder.

``fault=deadlock``: generate (ONE instance) sends a BLS request to ``generate`` itself (A -> A)
while its execute holds that only instance. The child sits PENDING in generate's queue behind
its own parent; nothing can ever run it. So that the lab server stays usable, the parent stops
waiting after ``deadlock_s`` (default 600) and answers an error; the instance is then free, the
queued child runs, and its response is discarded by the (still blocked) helper thread.

Instrumented with ``observability.bls``: the self-call is reported as a hung BLS call once it
passes ``TRITON_OBS_DEADLINE_S`` — while it is still deadlocked.
"""

from __future__ import annotations

import concurrent.futures
import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

from observability import bls

_DEFAULT_MAX_TOKENS = 8
_LIMIT_MAX_TOKENS = 1024
_CHILD_IDS = os.environ.get("TRITON_OBS_DEMO_CHILD_IDS", "1") != "0"
"""Whether BLS children derive ids from their parent's (see router)."""


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


def _error(message: str) -> pb_utils.InferenceResponse:
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))


class TritonPythonModel:
    """PROMPT_IDS INT64 [-1], MAX_TOKENS INT32 [1] (optional, default 8) -> TOKEN_IDS INT64 [-1]."""

    def initialize(self, args: dict) -> None:
        bls.setup(args)
        # Threads that wait on a self-call; one stays blocked per deadlock until the child runs.
        self._waiters = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="generate-deadlock"
        )

    @bls.traced_execute
    def execute(self, requests: list) -> list:
        return [self._handle(request) for request in requests]

    def _handle(self, request) -> pb_utils.InferenceResponse:
        params = _params(request)
        prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT_IDS").as_numpy()
        prompt = prompt.astype(np.int64).reshape(-1)
        max_tokens_t = pb_utils.get_input_tensor_by_name(request, "MAX_TOKENS")
        max_tokens = (
            int(max_tokens_t.as_numpy().reshape(-1)[0])
            if max_tokens_t is not None
            else _DEFAULT_MAX_TOKENS
        )
        max_tokens = min(max(max_tokens, 0), _LIMIT_MAX_TOKENS)
        parent_id = request.request_id() if _CHILD_IDS else ""

        if params.get("fault") == "deadlock":
            return self._deadlock(request, prompt, _knob(params, "deadlock_s", 600.0))

        tokens = prompt
        child_params = _child_params(params)
        for step in range(max_tokens):
            child = pb_utils.InferenceRequest(
                model_name="decoder",
                inputs=[pb_utils.Tensor("TOKEN_IDS", tokens)],
                requested_output_names=["TOKEN_IDS"],
                request_id=f"{parent_id}.decoder.{step}" if parent_id else "",
                trace=request.trace(),
                parameters=child_params,
            )
            response = bls.exec(request, child, model="decoder")
            if response.has_error():
                return _error(f"generate: decoder step {step}: {response.error().message()}")
            out = pb_utils.get_output_tensor_by_name(response, "TOKEN_IDS")
            if out is None:
                return _error(f"generate: decoder step {step} returned no TOKEN_IDS")
            tokens = out.as_numpy().astype(np.int64).reshape(-1)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("TOKEN_IDS", tokens)])

    def _deadlock(self, request, prompt: np.ndarray, wait_s: float) -> pb_utils.InferenceResponse:
        """BLS into this model's own (only) instance: the child can only run after we return."""
        parent_id = request.request_id() if _CHILD_IDS else ""
        child = pb_utils.InferenceRequest(
            model_name="generate",
            inputs=[
                pb_utils.Tensor("PROMPT_IDS", prompt),
                pb_utils.Tensor("MAX_TOKENS", np.array([1], dtype=np.int32)),
            ],
            requested_output_names=["TOKEN_IDS"],
            request_id=f"{parent_id}.generate" if parent_id else "",
            trace=request.trace(),
            # No `fault` for the child: once it finally runs, it is a plain 1-token request.
        )
        pending = self._waiters.submit(bls.exec, request, child, model="generate")
        try:
            response = pending.result(timeout=wait_s)
        except concurrent.futures.TimeoutError:
            return _error(
                f"generate: BLS call to 'generate' (this model's only instance) did not return "
                f"within {wait_s:g} s: deadlock"
            )
        if response.has_error():
            return _error(f"generate: self-call failed: {response.error().message()}")
        out = pb_utils.get_output_tensor_by_name(response, "TOKEN_IDS")
        return pb_utils.InferenceResponse(output_tensors=[out])

    def finalize(self) -> None:
        self._waiters.shutdown(wait=False, cancel_futures=True)
        bls.shutdown()
