"""One inference through tritonclient, classified as answered, failed or timed out.

gRPC is the default transport because its client deadline is what production clients use,
and Triton logs the cancellation it causes; ``http://`` URLs go through the HTTP client.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

__all__ = ["Outcome", "Status", "TritonClient", "normalise_url"]


class Status(str, Enum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Outcome:
    request_id: str
    model: str
    fault: str
    status: Status
    started: float
    """``time.monotonic()`` at send."""
    latency_s: float
    error: str = ""
    output_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def normalise_url(url: str) -> tuple[str, str]:
    """``(protocol, address)`` from ``grpc://h:p``, ``http://h:p`` or a bare ``h:p`` (gRPC)."""
    if url.startswith("http://"):
        return "http", url[len("http://") :].rstrip("/")
    if url.startswith("https://"):
        raise ValueError("https is not supported by the load tool; use http:// or grpc://")
    if url.startswith("grpc://"):
        return "grpc", url[len("grpc://") :].rstrip("/")
    return "grpc", url.rstrip("/")


_TIMEOUT_MARKERS = ("deadline", "timed out", "timeout")


class TritonClient:
    """A client for one worker thread (tritonclient's clients are not shared across threads)."""

    def __init__(self, url: str, timeout_s: float, send_ids: bool = True) -> None:
        self.protocol, self.address = normalise_url(url)
        self.timeout_s = timeout_s
        self.send_ids = send_ids
        """False: requests go without an id, as tritonclient and perf_analyzer send them by
        default; outcomes still carry the client-side label."""
        if self.protocol == "grpc":
            import tritonclient.grpc as tc
        else:
            import tritonclient.http as tc
        self._tc: Any = tc
        if self.protocol == "grpc":
            self._client: Any = tc.InferenceServerClient(self.address)
        else:
            self._client = tc.InferenceServerClient(
                self.address, connection_timeout=timeout_s, network_timeout=timeout_s
            )

    def close(self) -> None:
        # Closing a broken channel must not mask the results already gathered.
        with contextlib.suppress(Exception):
            self._client.close()

    def infer(
        self,
        model: str,
        inputs: dict[str, np.ndarray],
        request_id: str,
        fault: str = "",
        parameters: dict[str, str] | None = None,
    ) -> Outcome:
        tc = self._tc
        infer_inputs = []
        for name, array in inputs.items():
            item = tc.InferInput(name, list(array.shape), _triton_dtype(array))
            item.set_data_from_numpy(array)
            infer_inputs.append(item)
        kwargs: dict[str, Any] = {"request_id": request_id if self.send_ids else ""}
        if parameters:
            kwargs["parameters"] = parameters
        if self.protocol == "grpc":
            kwargs["client_timeout"] = self.timeout_s
        started = time.monotonic()
        try:
            result = self._client.infer(model, infer_inputs, **kwargs)
        except Exception as err:
            latency = time.monotonic() - started
            text = str(err)
            timed_out = any(m in text.lower() for m in _TIMEOUT_MARKERS) or isinstance(
                err, TimeoutError
            )
            if timed_out and latency >= self.timeout_s * 0.9:
                status = Status.TIMEOUT
            else:
                status = Status.ERROR
            return Outcome(request_id, model, fault, status, started, latency, text[:500])
        latency = time.monotonic() - started
        shapes = {}
        response = result.get_response(as_json=True) if self.protocol == "grpc" else None
        if response is not None:
            for out in response.get("outputs", []):
                shapes[out["name"]] = tuple(int(d) for d in out.get("shape", []))
        else:
            for out in result.get_response().get("outputs", []):
                shapes[out["name"]] = tuple(int(d) for d in out.get("shape", []))
        return Outcome(request_id, model, fault, Status.OK, started, latency, "", shapes)

    def stream(
        self,
        model: str,
        inputs: dict[str, np.ndarray],
        request_id: str,
        fault: str = "",
        parameters: dict[str, str] | None = None,
    ) -> Outcome:
        """One request to a decoupled model, read until its final response or the timeout.

        gRPC: a bidirectional stream with ``enable_empty_final_response`` (the client then
        knows the stream ended); a stream that times out is cancelled, as a client that gives
        up does. HTTP: Triton's ``generate_stream`` endpoint (server-sent events; the HTTP
        ``infer`` endpoint refuses decoupled models), read until the server closes it."""
        started = time.monotonic()
        try:
            if self.protocol == "grpc":
                done, count, error = self._grpc_stream(model, inputs, request_id, parameters)
            else:
                done, count, error = self._http_stream(model, inputs, parameters)
        except Exception as err:
            error, done, count = str(err), True, 0
        latency = time.monotonic() - started
        if error:
            return Outcome(request_id, model, fault, Status.ERROR, started, latency, error[:500])
        status = Status.OK if done else Status.TIMEOUT
        return Outcome(
            request_id, model, fault, status, started, latency, "", {"responses": (count,)}
        )

    def _grpc_stream(
        self,
        model: str,
        inputs: dict[str, np.ndarray],
        request_id: str,
        parameters: dict[str, str] | None,
    ) -> tuple[bool, int, str]:
        import queue

        tc = self._tc
        results: queue.Queue[tuple[Any, Any]] = queue.Queue()
        infer_inputs = []
        for name, array in inputs.items():
            item = tc.InferInput(name, list(array.shape), _triton_dtype(array))
            item.set_data_from_numpy(array)
            infer_inputs.append(item)
        self._client.start_stream(callback=lambda result, error: results.put((result, error)))
        done, count, error = False, 0, ""
        try:
            self._client.async_stream_infer(
                model,
                infer_inputs,
                request_id=request_id if self.send_ids else "",
                parameters=parameters or None,
                enable_empty_final_response=True,
            )
            deadline = time.monotonic() + self.timeout_s
            while not done and (left := deadline - time.monotonic()) > 0:
                try:
                    result, err = results.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                if err is not None:
                    return True, count, str(err)
                response = result.get_response()
                final = response.parameters.get("triton_final_response")
                done = bool(final is not None and final.bool_param)
                count += 0 if done and not response.outputs else 1
        finally:
            self._client.stop_stream(cancel_requests=not done)
        return done, count, error

    def _http_stream(
        self, model: str, inputs: dict[str, np.ndarray], parameters: dict[str, str] | None
    ) -> tuple[bool, int, str]:
        import json
        import urllib.request

        body = {name: array.tolist() for name, array in inputs.items()}
        body.update(parameters or {})
        request = urllib.request.Request(
            f"http://{self.address}/v2/models/{model}/generate_stream",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        count = 0
        with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
            for line in answer:
                if line.startswith(b"data:"):
                    count += 1
                    if b'"error"' in line:
                        return True, count, line.decode("utf-8", "replace")[:500]
        return True, count, ""

    def load_model(self, model: str, config: str | None = None) -> None:
        self._client.load_model(model, config=config)

    def model_config(self, model: str) -> dict[str, Any]:
        if self.protocol == "grpc":
            return dict(self._client.get_model_config(model, as_json=True)["config"])
        return dict(self._client.get_model_config(model))


def _triton_dtype(array: np.ndarray) -> str:
    return {
        np.dtype(np.float32): "FP32",
        np.dtype(np.int64): "INT64",
        np.dtype(np.int32): "INT32",
        np.dtype(np.object_): "BYTES",
    }[array.dtype]
