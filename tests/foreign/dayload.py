"""The ``day`` family's clients: an ordinary production day's noise, no request ids.

Four client threads, two per front door, one of each pair over gRPC and one over HTTP:
client 1 calls ``day_classify`` over gRPC, client 2 over HTTP, client 3 ``day_triage``
over gRPC, client 4 over HTTP. Every request carries a client deadline of ``DEADLINE_S``
(gRPC ``client_timeout``: the server is told the call was cancelled; HTTP
``network_timeout``: the client just stops waiting). A document is DOC [64] FP32 (DOC[0] its
page count, 1 to 4; ``day_triage`` takes it as a batch of one, [1, 64]).

What production sends besides good documents, drawn per request (``Mix``):

* invalid requests that Triton refuses itself, one kind after another: a wrong shape (DOC
  [63]), a wrong datatype (DOC as FP64), a missing input (no input at all), an unknown model
  name (``day_clasify``, a typo) and a version that does not exist (``7``);
* on ``day_classify``, empty documents (DOC all zeros), which the model answers with an
  error response, and scanned documents of 40 pages, which take 1.5 s against the 1 s
  deadline (the client times out; the model finishes them anyway);
* on the gRPC clients, cancellations: ``async_infer`` cancelled 2 to 10 ms after it was sent
  (the user navigated away).

The traffic is not flat (``rate``): a quiet start, a ramp, a short burst at twice the
normal rate, back to normal. A fifth thread probes as a Kubernetes readiness probe and a
dashboard do, every second: ``/v2/health/ready``, ``/v2/health/live`` and the two front
doors' metadata (``/v2/models/<m>``), over HTTP.

Every loop is bounded in count (``cap``) and in time (``until``). No payload is recorded,
only outcomes, labelled ``healthy:<model>`` (a good document), ``noise:<kind>`` (one of the
above) or ``probe:<what>``.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

__all__ = ["DEADLINE_S", "day_inject", "day_worker", "rate", "text"]

DEADLINE_S = 1.0
BASE_PAUSE_S = 0.3
"""The pause after each request at the normal rate (a rate of 2 halves it)."""
CLIENTS = {1: ("day_classify", "grpc"), 2: ("day_classify", "http"), 3: ("day_triage", "grpc")}
"""Client number -> (front door, protocol); 4 (and any other) is day_triage over HTTP."""
INVALID = ("wrong_shape", "wrong_dtype", "missing_input", "unknown_model", "unknown_version")
PROBES = (
    ("ready", "/v2/health/ready"),
    ("live", "/v2/health/live"),
    ("meta:day_classify", "/v2/models/day_classify"),
    ("meta:day_triage", "/v2/models/day_triage"),
)
SHAPE = (
    (0.0, 0.35),
    (10.0, 0.35),
    (22.0, 1.0),
    (32.0, 1.0),
    (32.001, 2.0),
    (38.0, 2.0),
    (38.001, 1.0),
)
"""(seconds after the capture started, rate): quiet, a ramp, steady, a burst at 2x, steady."""

Add = Callable[[str, object, float], None]


class Status(str, Enum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Outcome:
    status: Status
    started: float
    latency_s: float
    error: str = ""


@dataclass(frozen=True)
class Mix:
    """The shares of each kind of request a client sends."""

    invalid: float = 0.04
    empty: float = 0.02
    slow: float = 0.01
    cancel: float = 0.015


MIX = Mix()


def rate(at_s: float) -> float:
    """The traffic's rate at ``at_s`` seconds after the capture started (1: normal)."""
    for (t_a, r_a), (t_b, r_b) in itertools.pairwise(SHAPE):
        if t_a <= at_s < t_b:
            return r_a + (r_b - r_a) * (at_s - t_a) / (t_b - t_a)
    return SHAPE[-1][1]


def text() -> str:
    return (
        "four id-less clients (`tests.foreign.dayload`), client 1 `day_classify` over gRPC, "
        "client 2 `day_classify` over HTTP, client 3 `day_triage` over gRPC, client 4 "
        "`day_triage` over HTTP, every request with a 1 s client deadline (gRPC "
        "`client_timeout`, HTTP `network_timeout`); a document is DOC [64] FP32 (DOC[0] its "
        f"page count, 1 to 4; [1, 64] to day_triage); per request: {MIX.invalid:.0%} invalid "
        "requests Triton refuses itself (in turn a wrong shape DOC [63], a wrong datatype FP64, "
        "no input at all, the unknown model `day_clasify`, the missing version 7), on "
        f"day_classify {MIX.empty:.0%} empty documents (DOC all zeros: the model answers an "
        f"error response) and {MIX.slow:.0%} 40-page scans (1.5 s: the client times out), on "
        f"the gRPC clients {MIX.cancel:.1%} cancelled 2 to 10 ms after sending "
        "(`async_infer(...).cancel()`); a pause of 0.3 s divided by the rate after each: "
        "0.35 x for 10 s (a quiet start), a ramp to 1 x at 22 s, a burst at 2 x from 32 s to "
        "38 s, then 1 x; a fifth thread probes every second over HTTP `/v2/health/ready`, "
        "`/v2/health/live`, `/v2/models/day_classify` and `/v2/models/day_triage`"
    )


class _Client:
    """One tritonclient (gRPC or HTTP) for one thread."""

    def __init__(self, grpc_url: str, http_url: str, http: bool) -> None:
        self.http = http
        if http:
            import tritonclient.http as tc

            self._tc: Any = tc
            self._client: Any = tc.InferenceServerClient(
                http_url.removeprefix("http://").rstrip("/"),
                connection_timeout=DEADLINE_S,
                network_timeout=DEADLINE_S,
            )
        else:
            import tritonclient.grpc as tc

            self._tc = tc
            self._client = tc.InferenceServerClient(grpc_url.removeprefix("grpc://"))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()

    def _inputs(self, arrays: Mapping[str, np.ndarray]) -> list[Any]:
        items = []
        for name, array in arrays.items():
            dtype = {np.float32: "FP32", np.float64: "FP64"}[array.dtype.type]
            item = self._tc.InferInput(name, list(array.shape), dtype)
            item.set_data_from_numpy(array)
            items.append(item)
        return items

    def infer(
        self,
        model: str,
        arrays: Mapping[str, np.ndarray],
        version: str = "",
        params: Mapping[str, Any] | None = None,
        deadline_s: float = DEADLINE_S,
    ) -> Outcome:
        items = self._inputs(arrays)
        started = time.monotonic()
        try:
            if self.http:
                self._client.infer(
                    model, items, model_version=version, parameters=dict(params or {}) or None
                )
            else:
                self._client.infer(
                    model,
                    items,
                    model_version=version,
                    parameters=dict(params or {}) or None,
                    client_timeout=deadline_s,
                )
        except Exception as err:  # the outcome is recorded, not raised
            text = str(err)
            low = text.lower()
            timed_out = "deadline" in low or "timed out" in low
            status = Status.TIMEOUT if timed_out else Status.ERROR
            return Outcome(status, started, time.monotonic() - started, text[:300])
        return Outcome(Status.OK, started, time.monotonic() - started)

    def cancelled(self, model: str, arrays: Mapping[str, np.ndarray], after_s: float) -> Outcome:
        """gRPC only: ``async_infer``, then ``cancel()`` ``after_s`` later."""
        items = self._inputs(arrays)
        done: list[tuple[Any, Any]] = []
        started = time.monotonic()
        ctx = self._client.async_infer(
            model,
            items,
            lambda result, error: done.append((result, error)),
            client_timeout=DEADLINE_S,
        )
        time.sleep(after_s)
        ctx.cancel()
        end = time.monotonic() + DEADLINE_S
        while not done and time.monotonic() < end:
            time.sleep(0.002)
        latency = time.monotonic() - started
        if not done:
            return Outcome(Status.TIMEOUT, started, latency, "no callback")
        _result, error = done[0]
        if error is None:
            return Outcome(Status.OK, started, latency, "answered before the cancel")
        text = str(error)
        status = Status.CANCELLED if "cancel" in text.lower() else Status.ERROR
        return Outcome(status, started, latency, text[:300])


def _document(rng: np.random.Generator, pages: int) -> np.ndarray:
    doc = rng.standard_normal(64).astype(np.float32)
    doc[0] = float(pages)
    return doc


def _invalid(client: _Client, model: str, kind: str, rng: np.random.Generator) -> Outcome:
    doc = _document(rng, 2)
    batched = model == "day_triage"

    def shaped(a: np.ndarray) -> np.ndarray:
        return a.reshape(1, -1) if batched else a

    if kind == "wrong_shape":
        return client.infer(model, {"DOC": shaped(doc[:63])})
    if kind == "wrong_dtype":
        return client.infer(model, {"DOC": shaped(doc.astype(np.float64))})
    if kind == "missing_input":
        return client.infer(model, {})
    if kind == "unknown_model":
        return client.infer("day_clasify", {"DOC": doc})
    return client.infer(model, {"DOC": shaped(doc)}, version="7")


def day_worker(
    urls: str,
    seed: int,
    stop: Any,
    until: float,
    add: Add,
    t0: float,
    cap: int,
    delay_s: float,
) -> None:
    """A background client (``CLIENTS``) until ``until``, at most ``cap`` requests; client
    1 also runs the prober, in a thread of its own."""
    grpc_url, http_url = urls.split()
    prober = None
    if seed == 1:
        prober = threading.Thread(
            target=_prober, args=(http_url, stop, until, add, t0, cap), daemon=True
        )
        prober.start()
    model, proto = CLIENTS.get(seed, ("day_triage", "http"))
    http = proto == "http"
    client = _Client(grpc_url, http_url, http)
    rng = np.random.default_rng(seed)
    invalid_turn = seed  # each client starts its round of invalid kinds elsewhere
    try:
        stop.wait(delay_s)
        for _ in range(cap):
            now = time.monotonic()
            if stop.is_set() or now > until:
                break
            u = rng.random()
            classify = model == "day_classify"
            if u < MIX.invalid:
                kind = INVALID[invalid_turn % len(INVALID)]
                invalid_turn += 1
                add(f"noise:{kind}", _invalid(client, model, kind, rng), t0)
            elif classify and u < MIX.invalid + MIX.empty:
                add(
                    "noise:empty_document",
                    client.infer(model, {"DOC": np.zeros(64, np.float32)}),
                    t0,
                )
            elif classify and u < MIX.invalid + MIX.empty + MIX.slow:
                add("noise:long_scan", client.infer(model, {"DOC": _document(rng, 40)}), t0)
            elif not http and u > 1.0 - MIX.cancel:
                doc = _document(rng, int(rng.integers(1, 5)))
                arrays = {"DOC": doc if classify else doc.reshape(1, 64)}
                after = float(rng.uniform(0.002, 0.010))
                add("noise:cancelled", client.cancelled(model, arrays, after), t0)
            else:
                doc = _document(rng, int(rng.integers(1, 5)))
                arrays = {"DOC": doc if classify else doc.reshape(1, 64)}
                add(f"healthy:{model}", client.infer(model, arrays), t0)
            stop.wait(BASE_PAUSE_S / rate(time.monotonic() - t0))
    finally:
        client.close()
        if prober is not None:
            prober.join(timeout=5)


def _prober(http_url: str, stop: Any, until: float, add: Add, t0: float, cap: int) -> None:
    base = http_url.rstrip("/")
    if not base.startswith("http://"):
        base = f"http://{base}"
    for _ in range(cap):
        if stop.is_set() or time.monotonic() > until:
            break
        for what, path in PROBES:
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"{base}{path}", timeout=DEADLINE_S) as answer:
                    answer.read()
                outcome = Outcome(Status.OK, started, time.monotonic() - started)
            except Exception as err:  # a probe's failure is an outcome
                outcome = Outcome(Status.ERROR, started, time.monotonic() - started, str(err))
            add(f"probe:{what}", outcome, t0)
        stop.wait(1.0)


def day_inject(
    urls: str,
    idx: int,
    params: Mapping[str, Any],
    label: str,
    add: Add,
    t0: float,
) -> None:
    """One ``day_classify`` document with ``params`` as request parameters, from a gRPC
    client of its own with the usual 1 s deadline."""
    grpc_url, http_url = urls.split()
    client = _Client(grpc_url, http_url, False)
    rng = np.random.default_rng(1000 + idx)
    try:
        add(label, client.infer("day_classify", {"DOC": _document(rng, 2)}, params=params), t0)
    finally:
        client.close()
