"""The ``ex`` family's clients: python_backend's example clients, id-less, over gRPC.

Each background client sends, in turn (starting at a different place per client), the
requests of the examples' own clients (python_backend ``examples/*/client.py``): ``ex_bls``
(INPUT0, INPUT1 FP32 [4]), ``ex_bls_sync`` (the same and MODEL_NAME ``["ex_add_sub"]``),
``ex_bls_decoupled`` (IN INT32 [1], 1 to 4), and one gRPC stream each (``start_stream``,
``async_stream_infer`` with ``enable_empty_final_response``, read to the final flag or the
deadline, then ``stop_stream``, as ``repeat_client.py`` does) to the decoupled ``ex_repeat``
(IN INT32 [4], DELAY UINT32 [4] of 5 to 20 ms, WAIT UINT32 [1] = 5) and ``ex_square`` (IN
INT32 [1], 1 to 4). No request ids, no payload recorded: outcomes only. Every loop is
bounded in count (``cap``) and in time (``until``).

``observability.load.TritonClient`` maps FP32, INT32, INT64 and BYTES only; the repeat
example's DELAY and WAIT are UINT32, hence this module's own client.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from observability.load.client import Outcome, Status

__all__ = ["KINDS", "ex_inject", "ex_worker"]

KINDS = ("ex_bls", "ex_bls_sync", "ex_bls_decoupled", "ex_repeat", "ex_square")
"""The models the clients call, in the order each client goes round them."""
DECOUPLED = frozenset({"ex_repeat", "ex_square"})
Add = Callable[[str, object, float], None]


def inputs(model: str, rng: np.random.Generator, switches: Mapping[str, Any]) -> dict:
    """One request's inputs, as the examples' clients build them. ``switches`` change the
    data of a faulty request: ``ex_nan`` (INPUT0 carries a NaN), ``ex_in`` (IN's value)."""
    if model in ("ex_bls", "ex_bls_sync"):
        x0 = rng.random(4, dtype=np.float32)
        if switches.get("ex_nan"):
            x0[1] = np.nan
        out = {"INPUT0": x0, "INPUT1": rng.random(4, dtype=np.float32)}
        if model == "ex_bls_sync":
            out["MODEL_NAME"] = np.array(["ex_add_sub"], dtype=np.object_)
        return out
    n = int(switches.get("ex_in", rng.integers(1, 5)))
    if model == "ex_repeat":
        return {
            "IN": rng.integers(0, 100, size=4).astype(np.int32),
            "DELAY": rng.integers(5, 21, size=4).astype(np.uint32),
            "WAIT": np.array([5], dtype=np.uint32),
        }
    return {"IN": np.array([n], dtype=np.int32)}  # ex_bls_decoupled, ex_square


class ExClient:
    """One thread's gRPC client (tritonclient's clients are not shared across threads)."""

    def __init__(self, url: str, timeout_s: float) -> None:
        import tritonclient.grpc as grpcclient

        self.tc: Any = grpcclient
        self.client: Any = grpcclient.InferenceServerClient(url)
        self.timeout_s = timeout_s

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()

    def _inputs(self, data: Mapping[str, np.ndarray]) -> list[Any]:
        from tritonclient.utils import np_to_triton_dtype

        items = []
        for name, array in data.items():
            item = self.tc.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            item.set_data_from_numpy(array)
            items.append(item)
        return items

    def send(self, model: str, data: Mapping[str, np.ndarray], params: Mapping) -> Outcome:
        if model in DECOUPLED:
            return self._stream(model, data, params)
        started = time.monotonic()
        kwargs: dict[str, Any] = {"client_timeout": self.timeout_s}
        if params:
            kwargs["parameters"] = dict(params)
        try:
            self.client.infer(model, self._inputs(data), **kwargs)
        except Exception as err:  # the outcome is reported, not raised
            latency = time.monotonic() - started
            text = str(err)
            late = latency >= self.timeout_s * 0.9
            status = Status.TIMEOUT if "deadline" in text.lower() and late else Status.ERROR
            return Outcome("", model, "", status, started, latency, text[:500])
        return Outcome("", model, "", Status.OK, started, time.monotonic() - started)

    def _stream(self, model: str, data: Mapping[str, np.ndarray], params: Mapping) -> Outcome:
        results: queue.Queue[tuple[Any, Any]] = queue.Queue()
        started = time.monotonic()
        done, count, error = False, 0, ""
        self.client.start_stream(callback=lambda result, error: results.put((result, error)))
        try:
            self.client.async_stream_infer(
                model,
                self._inputs(data),
                parameters=dict(params) or None,
                enable_empty_final_response=True,
            )
            deadline = started + self.timeout_s
            while not done and (left := deadline - time.monotonic()) > 0:
                try:
                    result, err = results.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                if err is not None:
                    error = str(err)
                    break
                response = result.get_response()
                final = response.parameters.get("triton_final_response")
                done = bool(final is not None and final.bool_param)
                count += 0 if done and not response.outputs else 1
        except Exception as err:  # the outcome is reported, not raised
            error = str(err)
        finally:
            with contextlib.suppress(Exception):
                self.client.stop_stream(cancel_requests=not done)
        latency = time.monotonic() - started
        if error:
            return Outcome("", model, "", Status.ERROR, started, latency, error[:500])
        status = Status.OK if done else Status.TIMEOUT
        text = "" if done else f"no final response after {count} response(s)"
        return Outcome("", model, "", status, started, latency, text, {"responses": (count,)})


def ex_worker(
    url: str,
    seed: int,
    stop: threading.Event,
    until: float,
    add: Add,
    t0: float,
    cap: int,
    pause_s: float,
) -> None:
    """A background client: the five requests in turn until ``until``, at most ``cap``."""
    client = ExClient(url, 10)
    rng = np.random.default_rng(seed)
    try:
        for n in range(cap):
            if stop.is_set() or time.monotonic() > until:
                break
            model = KINDS[(n + seed) % len(KINDS)]
            add(f"healthy:{model}", client.send(model, inputs(model, rng, {}), {}), t0)
            stop.wait(pause_s)
    finally:
        client.close()


def ex_inject(
    url: str,
    idx: int,
    params: Mapping[str, Any],
    timeout_s: float,
    label: str,
    add: Add,
    t0: float,
) -> None:
    """One faulty request to ``params["ex_model"]``: ``ex_nan`` and ``ex_in`` change its data
    (see ``inputs``); the other parameters are sent as request parameters."""
    params = dict(params)
    model = str(params.pop("ex_model"))
    switches = {k: params.pop(k) for k in ("ex_nan", "ex_in") if k in params}
    client = ExClient(url, timeout_s)
    try:
        data = inputs(model, np.random.default_rng(1000 + idx), switches)
        add(label, client.send(model, data, params), t0)
    finally:
        client.close()
