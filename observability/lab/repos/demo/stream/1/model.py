"""stream: a decoupled token-streaming model (one response per token), with the ``stall`` fault.

Healthy path: ``execute`` takes each request's response sender and returns at once (Triton then
logs the request ``EXECUTING to RELEASED``, before any of its responses); a worker thread sends
``MAX_TOKENS`` responses (default 8, clamped to 0..1024), one ``TOKEN_ID`` INT64 [1] each,
``token_s`` apart (default 0.01), then an empty response with
``TRITONSERVER_RESPONSE_COMPLETE_FINAL``. A cancelled request (client closed the stream, or its
deadline passed) stops at the next token and is closed with the final flag.

``fault=stall``: after ``stall_after`` tokens (default 3) the stream sends nothing for
``stall_s`` (default 60), without the final flag — the LLM token stream that stops half-way —
then finishes normally. The wait ends early when the request is cancelled.

Instrumented with ``observability.bls``: ``bls.response_sender`` tracks each stream, and the
library's watchdog reports one that sends nothing for longer than its stall deadline while it
is stalled (``STALLED stream`` line, ``triton_obs_bls_streams_stalled``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

from observability import bls

_DEFAULT_MAX_TOKENS = 8
_LIMIT_MAX_TOKENS = 1024
_MAX_STREAMS = 32
_CANCEL_POLL_S = 0.25


def _params(request) -> dict:
    """The request's parameters (JSON object) as a dict; {} when absent or malformed."""
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _knob(params: dict, name: str, default: float) -> float:
    """A numeric knob: int, float or numeric string."""
    try:
        return float(params.get(name, default))
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    """PROMPT_IDS INT64 [-1], MAX_TOKENS INT32 [1] (optional) -> a stream of TOKEN_ID INT64 [1]."""

    def initialize(self, args: dict) -> None:
        bls.setup(args)
        self._stop = threading.Event()
        self._workers = concurrent.futures.ThreadPoolExecutor(
            max_workers=_MAX_STREAMS, thread_name_prefix="stream"
        )

    @bls.traced_execute
    def execute(self, requests: list) -> None:
        for request in requests:
            sender = bls.response_sender(request)
            try:
                job = self._job(request)
            except Exception as exc:  # a bad request: one error response, final
                sender.send(
                    pb_utils.InferenceResponse(
                        output_tensors=[], error=pb_utils.TritonError(f"stream: {exc}")
                    ),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
                continue
            self._workers.submit(self._stream, sender, *job)
        return None

    @staticmethod
    def _job(request) -> tuple[int, int, float, float, float]:
        params = _params(request)
        prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT_IDS").as_numpy()
        last = int(prompt.reshape(-1)[-1]) if prompt.size else 0
        max_tokens_t = pb_utils.get_input_tensor_by_name(request, "MAX_TOKENS")
        max_tokens = (
            int(max_tokens_t.as_numpy().reshape(-1)[0])
            if max_tokens_t is not None
            else _DEFAULT_MAX_TOKENS
        )
        max_tokens = min(max(max_tokens, 0), _LIMIT_MAX_TOKENS)
        stall_after, stall_s = -1, 0.0
        if params.get("fault") == "stall":
            stall_after = int(max(_knob(params, "stall_after", 3), 0))
            stall_s = max(_knob(params, "stall_s", 60.0), 0.0)
        token_s = min(max(_knob(params, "token_s", 0.01), 0.0), 10.0)
        return last, max_tokens, token_s, stall_after, stall_s

    def _stream(
        self,
        sender,
        last: int,
        max_tokens: int,
        token_s: float,
        stall_after: int,
        stall_s: float,
    ) -> None:
        try:
            for step in range(max_tokens):
                if step == stall_after and self._wait(sender, stall_s):
                    break
                if sender.is_cancelled() or self._stop.wait(token_s):
                    break
                token = np.array([last + step + 1], dtype=np.int64)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("TOKEN_ID", token)]))
        finally:
            with contextlib.suppress(Exception):  # the client may be gone: nothing to tell
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _wait(self, sender, seconds: float) -> bool:
        """The stall: nothing sent for ``seconds``; True when cancelled or shutting down."""
        remaining = seconds
        while remaining > 0:
            step = min(_CANCEL_POLL_S, remaining)
            if self._stop.wait(step) or sender.is_cancelled():
                return True
            remaining -= step
        return False

    def finalize(self) -> None:
        self._stop.set()
        self._workers.shutdown(wait=True, cancel_futures=True)
        bls.shutdown()
