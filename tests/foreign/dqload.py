"""The ``dq`` family's clients: id-less gRPC callers of a dynamic-batching pipeline.

Background (one thread per client, ``dq_worker``): clients 1 and 2 send ``dq_gateway`` a
QUERY [16] FP32 (its four dq_rank calls wait in dq_rank's batcher for up to 200 ms), client 3
is a bulk re-ranking job that sends ``dq_rank`` itself FEAT [2, 16] FP32 at the default
priority; each pauses ``PAUSE_S`` after an answer, 10 s client timeout. Injected clients
(``dq_inject``) send either to ``dq_gateway`` (``dq_front=gateway``, request parameters
forwarded, e.g. ``dq_fault=hang``) or to ``dq_rank`` (``dq_front=rank``, ``dq_rows`` rows,
``dq_priority`` the request's priority, 0 = the model's default), back to back (or
``dq_pause_s`` apart) for ``repeat_s``. No request ids anywhere. Every loop is bounded in
count (``cap``) and time (``until``); only outcomes are recorded.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

import numpy as np

from observability.load.client import _TIMEOUT_MARKERS, Outcome, Status

__all__ = ["PAUSE_S", "dq_inject", "dq_worker", "send"]

PAUSE_S = 0.2
TIMEOUT_S = 10.0


def send(
    client: object,
    front: str,
    rng: np.random.Generator,
    timeout_s: float,
    params: Mapping[str, object] | None = None,
    rows: int = 2,
    priority: int = 0,
) -> Outcome:
    """One id-less gRPC infer to ``dq_gateway`` (QUERY [16]) or ``dq_rank`` (FEAT [rows, 16])."""
    import tritonclient.grpc as grpcclient

    if front == "gateway":
        model, name, data = "dq_gateway", "QUERY", rng.standard_normal(16).astype(np.float32)
    else:
        model, name = "dq_rank", "FEAT"
        data = rng.standard_normal((rows, 16)).astype(np.float32)
    item = grpcclient.InferInput(name, list(data.shape), "FP32")
    item.set_data_from_numpy(data)
    kwargs: dict[str, object] = {"client_timeout": timeout_s}
    if params:
        kwargs["parameters"] = dict(params)
    if priority:
        kwargs["priority"] = priority
    started = time.monotonic()
    try:
        client.infer(model, [item], **kwargs)  # type: ignore[attr-defined]
    except Exception as err:  # the outcome is reported, not raised
        latency = time.monotonic() - started
        text = str(err)
        timed_out = any(m in text.lower() for m in _TIMEOUT_MARKERS)
        status = Status.TIMEOUT if timed_out and latency >= timeout_s * 0.9 else Status.ERROR
        return Outcome("", model, "", status, started, latency, text[:500])
    return Outcome("", model, "", Status.OK, started, time.monotonic() - started, "")


def dq_worker(
    url: str,
    seed: int,
    stop: object,
    until: float,
    add: Callable[[str, object, float], None],
    t0: float,
    cap: int,
    delay_s: float = 0.0,
) -> None:
    """Background client ``seed``: 1 and 2 call dq_gateway, 3 (and up) dq_rank with 2 rows."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    rng = np.random.default_rng(seed)
    front = "gateway" if seed <= 2 else "rank"
    try:
        stop.wait(delay_s)  # type: ignore[attr-defined]
        for _ in range(cap):
            if stop.is_set() or time.monotonic() > until:  # type: ignore[attr-defined]
                break
            add("healthy", send(client, front, rng, TIMEOUT_S), t0)
            stop.wait(PAUSE_S)  # type: ignore[attr-defined]
    finally:
        with contextlib.suppress(Exception):
            client.close()


def dq_inject(
    url: str,
    idx: int,
    params: Mapping[str, str | int | float],
    timeout_s: float,
    repeat_s: float,
    cap: int,
    label: str,
    add: Callable[[str, object, float], None],
    t0: float,
) -> None:
    """One injected client: ``dq_front``, ``dq_rows``, ``dq_priority`` pick what it sends and
    ``dq_pause_s`` its pause after an answer (not sent to Triton); the other parameters go
    with the request."""
    import tritonclient.grpc as grpcclient

    params = dict(params)
    front = str(params.pop("dq_front", "gateway"))
    rows = int(params.pop("dq_rows", 1))
    priority = int(params.pop("dq_priority", 0))
    pause = float(params.pop("dq_pause_s", 0))
    client = grpcclient.InferenceServerClient(url)
    rng = np.random.default_rng(1000 + idx)
    until = time.monotonic() + repeat_s
    try:
        for n in range(cap):
            add(label, send(client, front, rng, timeout_s, params, rows, priority), t0)
            if n + 1 >= cap or time.monotonic() >= until:
                break
            time.sleep(pause)
    finally:
        with contextlib.suppress(Exception):
            client.close()
