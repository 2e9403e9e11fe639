"""The ``gen`` family's clients: token streams over gRPC or HTTP ``generate_stream``.

Why a client of its own: the ``gen`` front doors take TensorRT-LLM's inputs (``text_input``
and ``max_tokens``, batched: ``[1, 1]``) and a user reaches them two ways, which one family
exercises side by side:

- gRPC: tritonclient's ``start_stream`` / ``async_stream_infer`` with
  ``enable_empty_final_response``, read to the final flag (``TritonClient.stream``); a stream
  that passes its deadline is cancelled (``stop_stream(cancel_requests=True)``);
- HTTP: ``POST /v2/models/<model>/generate_stream`` with a JSON body
  ``{"text_input": ..., "max_tokens": ..., <parameters>}`` as TensorRT-LLM's documentation
  shows it, read as server-sent events until the server closes the stream; a read that waits
  past the deadline closes the connection.

No request ids. A background client alternates its front door: ``gen_ensemble``, then
``gen_bls``, and so on. Request parameters ``gen_model`` (the front door) and ``gen_http``
(1: HTTP) are read by the client and not sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from observability.load.client import Outcome, Status

__all__ = ["FRONT_DOORS", "GenClient", "gen_inputs", "gen_worker"]

FRONT_DOORS = ("gen_ensemble", "gen_bls")
MAX_TOKENS = 12
CLIENT_KEYS = ("gen_model", "gen_http")
"""Parameters the client reads and does not send."""

Add = Callable[[str, object, float], None]


def gen_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A prompt of 3 to 12 words and ``max_tokens`` 12, batched ``[1, 1]``."""
    words = " ".join(f"w{int(x)}" for x in rng.integers(0, 3000, size=int(rng.integers(3, 13))))
    return {
        "text_input": np.array([[words.encode()]], dtype=np.object_),
        "max_tokens": np.array([[MAX_TOKENS]], dtype=np.int32),
    }


class GenClient:
    """One thread's client. ``urls`` is ``"<grpc host:port> <http://host:port>"``."""

    def __init__(self, urls: str, timeout_s: float, http: bool = False) -> None:
        from observability.load import TritonClient

        grpc_url, http_url = urls.split()
        self.timeout_s = timeout_s
        self.http = http
        self.http_url = http_url.rstrip("/")
        self.grpc = TritonClient(grpc_url, timeout_s=timeout_s, send_ids=False)
        self.sent = 0

    def close(self) -> None:
        self.grpc.close()

    def send(self, inputs: dict[str, np.ndarray], params: Mapping[str, Any]) -> Outcome:
        params = dict(params)
        model = str(params.pop("gen_model", "") or FRONT_DOORS[self.sent % 2])
        http = bool(int(params.pop("gen_http", 1 if self.http else 0)))
        self.sent += 1
        if not http:
            return self.grpc.stream(model, inputs, "", parameters=params or None)  # type: ignore[return-value]
        return self._generate_stream(model, inputs, params)

    def _generate_stream(
        self, model: str, inputs: dict[str, np.ndarray], params: Mapping[str, Any]
    ) -> Outcome:
        body: dict[str, Any] = {
            "text_input": inputs["text_input"].reshape(-1)[0].decode(),
            "max_tokens": int(inputs["max_tokens"].reshape(-1)[0]),
        }
        body.update(params)
        request = urllib.request.Request(
            f"{self.http_url}/v2/models/{model}/generate_stream",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        started = time.monotonic()
        count, error, status = 0, "", Status.OK
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                for line in answer:
                    if not line.startswith(b"data:"):
                        continue
                    if b'"error"' in line:
                        error = line.decode("utf-8", "replace")[5:].strip()
                        status = Status.ERROR
                        break
                    count += 1
                    if time.monotonic() - started > self.timeout_s:
                        status, error = Status.TIMEOUT, f"deadline after {count} events"
                        break
        except TimeoutError as err:
            status, error = Status.TIMEOUT, f"timed out after {count} events: {err}"
        except urllib.error.HTTPError as err:
            status = Status.ERROR
            error = f"HTTP {err.code}: {err.read().decode('utf-8', 'replace')}"
        except OSError as err:
            status, error = Status.ERROR, str(err)
        latency = time.monotonic() - started
        shapes = {"responses": (count,)} if status == Status.OK else {}
        return Outcome("", model, "", status, started, latency, error[:500], shapes)


def gen_worker(
    urls: str,
    seed: int,
    stop: threading.Event,
    until: float,
    add: Add,
    t0: float,
    pause_s: float,
    max_requests: int,
    delay_s: float = 0.0,
    http: bool = False,
) -> None:
    """A background client: one stream at a time, alternating the two front doors."""
    client = GenClient(urls, timeout_s=10, http=http)
    rng = np.random.default_rng(seed)
    client.sent = seed - 1  # the clients do not all start on the same front door
    try:
        stop.wait(delay_s)
        for _ in range(max_requests):
            if stop.is_set() or time.monotonic() > until:
                break
            outcome = client.send(gen_inputs(rng), {})
            add(f"healthy:{outcome.model}", outcome, t0)
            stop.wait(pause_s)
    finally:
        with contextlib.suppress(Exception):
            client.close()
