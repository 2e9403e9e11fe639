"""The ``gs`` family's clients: long-lived gRPC streams with several requests on each.

Many users send their requests over gRPC streams (``start_stream(callback)``, then
``async_stream_infer`` for each), to ordinary models as well as decoupled ones, because a
stream keeps many requests in flight from one client cheaply. Each background client holds
its stream(s) **for the whole window** (``Plan``): ``mixed``, one stream carrying requests to
both models in turn (on tritonserver 2.51 this aborts the server within seconds: see
``gs_mixed_stream_crash``), or ``split``, one stream per model (two
``InferenceServerClient`` objects: tritonclient allows one stream each). A stream is topped
up to ``Plan.inflight`` outstanding requests whenever ``Plan.low`` or fewer are left, then the
client pauses ``Plan.pause_s``. On the non-decoupled ``gs_moderate`` a request gets exactly
one response; on the decoupled ``gs_reply`` (sent with ``enable_empty_final_response``) 3 to
6, the last carrying ``triton_final_response``.

No request ids. The client tells its requests apart by the chat's own message number, the
``MSG_ID`` [1] INT64 tensor each model echoes on every response (an error response names it
as ``msg=<n>``). Each request's outcome is decided in the stream callback: ``ok`` at its
final response, ``error`` at an error naming it (or at an error of the stream itself, for
every request on it), ``timeout`` when it has been outstanding ``timeout_s`` without its
final response (the client forgets it: one cannot cancel a single request of a stream),
``cancelled`` when the client cancelled the stream with it outstanding
(``stop_stream(cancel_requests=True)``), ``open`` when still outstanding at the end (the
stream is then cancelled). Every loop is bounded in count (``cap``) and in time (``until``).
No payload is recorded, only outcomes.

Injected clients (``gs_inject``) open streams of their own: either one faulty request
(request parameters) followed by healthy requests to the same model on the same stream for
``repeat_s`` seconds, or (``gs_cancel_after_ms``) rounds of: 8 requests on each of two new
streams (one per model), both cancelled that many ms later with requests outstanding, then 8
more on each of two fresh streams, read to their end, 2 s apart.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

import numpy as np

__all__ = ["MODELS", "PLANS", "GsStream", "Plan", "gs_inject", "gs_worker"]

MODELS = ("gs_moderate", "gs_reply")
DECOUPLED = frozenset({"gs_reply"})
INFLIGHT = 6
"""Requests a background client keeps outstanding on its stream at most."""
LOW = 2
"""A client tops up when this many or fewer of its requests are outstanding."""
PAUSE_S = 1.0
"""The pause after each top-up."""
CLIENT_KEYS = ("gs_model", "gs_cancel_after_ms")
"""Injection parameters the client reads and does not send."""
_MSG = re.compile(r"msg=(\d+)")

Add = Callable[[str, object, float], None]


class GsStatus(str, Enum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    OPEN = "open"


@dataclass
class _Req:
    msg_id: int
    model: str
    label: str
    started: float
    timeout_s: float
    responses: int = 0


@dataclass(frozen=True)
class Row:
    """What ``record.Outcomes.add`` reads of an outcome."""

    model: str
    status: GsStatus
    started: float
    latency_s: float
    error: str = ""


def inputs(model: str, rng: np.random.Generator, msg_id: int) -> dict[str, np.ndarray]:
    """A chat message's embedding (gs_moderate) or a prompt of 4 to 24 token ids (gs_reply),
    with the message number."""
    mid = np.array([msg_id], dtype=np.int64)
    if model == "gs_moderate":
        return {"MESSAGE": rng.standard_normal(16).astype(np.float32), "MSG_ID": mid}
    prompt = rng.integers(1, 5000, size=int(rng.integers(4, 25))).astype(np.int32)
    return {"PROMPT": prompt, "MSG_ID": mid}


class GsStream:
    """One gRPC stream of a client and the requests outstanding on it."""

    def __init__(self, client: Any, tc: Any, add: Add, t0: float) -> None:
        self.client, self.tc, self.add, self.t0 = client, tc, add, t0
        self.lock = threading.Lock()
        self.pending: dict[int, _Req] = {}
        self.closing = False
        self.late = 0
        self.forgotten: set[int] = set()
        """Requests the client gave up on that Triton has not finished: a stream stopped
        without cancelling would wait for them."""
        self.unmatched: list[str] = []
        client.start_stream(callback=self._on_response)

    def _finish(self, req: _Req, status: GsStatus, error: str = "") -> None:
        """Record ``req`` (the caller holds the lock and has removed it from ``pending``)."""
        row = Row(req.model, status, req.started, time.monotonic() - req.started, error)
        self.add(req.label, row, self.t0)

    def _on_response(self, result: Any, error: Any) -> None:
        with self.lock:
            if error is not None:
                text = str(error)
                found = _MSG.search(text)
                req = self.pending.pop(int(found.group(1)), None) if found else None
                if req is not None:
                    self._finish(req, GsStatus.ERROR, text)
                elif not self.closing:  # the stream itself failed: every request on it
                    self.unmatched.append(text[:200])
                    for mid in list(self.pending):
                        self._finish(self.pending.pop(mid), GsStatus.ERROR, text)
                return
            response = result.get_response()
            ids = result.as_numpy("MSG_ID")
            if ids is None:  # an empty final response: names no request
                return
            mid = int(ids.reshape(-1)[0])
            req = self.pending.get(mid)
            if req is None:  # answered after the client gave up on it
                self.late += 1
                final = response.parameters.get("triton_final_response")
                if final is None or final.bool_param:
                    self.forgotten.discard(mid)
                return
            req.responses += 1
            final = response.parameters.get("triton_final_response")
            if req.model not in DECOUPLED or (final is not None and final.bool_param):
                self._finish(self.pending.pop(req.msg_id), GsStatus.OK)

    def send(
        self,
        model: str,
        data: Mapping[str, np.ndarray],
        label: str,
        timeout_s: float,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        from tritonclient.utils import np_to_triton_dtype

        items = []
        for name, array in data.items():
            item = self.tc.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            item.set_data_from_numpy(array)
            items.append(item)
        msg_id = int(data["MSG_ID"][0])
        started = time.monotonic()
        with self.lock:
            self.pending[msg_id] = _Req(msg_id, model, label, started, timeout_s)
        try:
            self.client.async_stream_infer(
                model,
                items,
                parameters=dict(params) if params else None,
                enable_empty_final_response=model in DECOUPLED,
            )
        except Exception as err:  # the outcome is recorded, not raised
            with self.lock:
                req = self.pending.pop(msg_id, None)
                if req is not None:
                    self._finish(req, GsStatus.ERROR, str(err))

    def expire(self) -> None:
        """Forget the requests outstanding past their timeout (recorded as ``timeout``)."""
        now = time.monotonic()
        with self.lock:
            for mid, req in list(self.pending.items()):
                if now - req.started >= req.timeout_s:
                    del self.pending[mid]
                    self.forgotten.add(mid)
                    text = f"no final response after {req.responses} response(s)"
                    self._finish(req, GsStatus.TIMEOUT, text)

    def outstanding(self) -> int:
        with self.lock:
            return len(self.pending)

    def close(self, cancel: bool, status: GsStatus = GsStatus.OPEN) -> int:
        """Stop the stream (cancelling it when asked or when requests are outstanding);
        record what is still outstanding with ``status``. Returns how many that was."""
        with self.lock:
            self.closing = True
            left = list(self.pending.values())
            self.pending.clear()
            forgotten = bool(self.forgotten)
            for req in left:
                text = f"{status.value} after {req.responses} response(s)"
                self._finish(req, status, text)
        with contextlib.suppress(Exception):
            self.client.stop_stream(cancel_requests=cancel or bool(left) or forgotten)
        return len(left)


def _client(url: str) -> tuple[Any, Any]:
    import tritonclient.grpc as tc

    return tc.InferenceServerClient(url), tc


@dataclass(frozen=True)
class Plan:
    split: bool
    """False: one stream per client carries both models' requests; True: two streams per
    client (two ``InferenceServerClient`` objects, tritonclient allows one stream each), one
    for gs_moderate's requests and one for gs_reply's."""
    inflight: int
    """Requests kept outstanding on each stream at most."""
    low: int
    """A stream is topped up when this many or fewer of its requests are outstanding."""
    pause_s: float = PAUSE_S

    def text(self) -> str:
        if self.split:
            return (
                "two gRPC streams (`start_stream`) for the whole window, one carrying its "
                "`gs_moderate` requests and one its `gs_reply` requests, each with up to "
                f"{self.inflight} outstanding (topped up to {self.inflight} whenever "
                f"{self.low} or fewer are left, then a {self.pause_s:g} s pause)"
            )
        return (
            "one gRPC stream (`start_stream`) for the whole window carrying requests to "
            f"both models in turn, up to {self.inflight} outstanding (topped up to "
            f"{self.inflight} whenever {self.low} or fewer are left, then a "
            f"{self.pause_s:g} s pause)"
        )


PLANS: dict[str, Plan] = {
    "mixed": Plan(split=False, inflight=INFLIGHT, low=LOW, pause_s=0.5),
    "split": Plan(split=True, inflight=4, low=0, pause_s=1.5),
}


@dataclass
class _Lane:
    """A stream and the models whose requests it carries, in turn."""

    stream: GsStream
    models: tuple[str, ...]
    sent: int = 0


def _drain(lanes: list[_Lane], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while any(lane.stream.outstanding() for lane in lanes) and time.monotonic() < deadline:
        for lane in lanes:
            lane.stream.expire()
        time.sleep(0.05)


def _carry(
    lanes: list[_Lane],
    plan: Plan,
    rng: np.random.Generator,
    next_id: Callable[[], int],
    stop: threading.Event,
    until: float,
    cap: int,
    label: Callable[[str], str],
) -> None:
    """Keep up to ``plan.inflight`` requests outstanding on each lane's stream until
    ``until`` or ``cap`` requests sent in all."""
    sent = 0
    while sent < cap and not stop.is_set() and time.monotonic() < until:
        topped = False
        for lane in lanes:
            lane.stream.expire()
            if lane.stream.outstanding() > plan.low:
                continue
            while lane.stream.outstanding() < plan.inflight and sent < cap:
                model = lane.models[lane.sent % len(lane.models)]
                lane.stream.send(model, inputs(model, rng, next_id()), label(model), 10.0)
                lane.sent += 1
                sent += 1
            topped = True
        stop.wait(plan.pause_s if topped else 0.05)


def _lanes(url: str, plan: Plan, add: Add, t0: float, first: int) -> tuple[list[_Lane], list]:
    """The client's streams: one for both models, or one per model (``plan.split``)."""
    order = MODELS[first % 2 :] + MODELS[: first % 2]
    groups = [(m,) for m in order] if plan.split else [order]
    lanes, clients = [], []
    for models in groups:
        client, tc = _client(url)
        clients.append(client)
        lanes.append(_Lane(GsStream(client, tc, add, t0), models))
    return lanes, clients


def _close(lanes: list[_Lane], clients: list) -> None:
    for lane in lanes:
        lane.stream.close(cancel=False)
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


def gs_worker(
    url: str,
    seed: int,
    stop: threading.Event,
    until: float,
    add: Add,
    t0: float,
    cap: int,
    delay_s: float = 0.0,
    plan_name: str = "split",
) -> None:
    """A background client: its stream(s) for the whole window (see ``Plan``)."""
    plan = PLANS[plan_name]
    rng = np.random.default_rng(seed)
    counter = iter(range(seed * 1_000_000, seed * 1_000_000 + 10 * cap))
    stop.wait(delay_s)
    lanes, clients = _lanes(url, plan, add, t0, seed)
    try:
        _carry(lanes, plan, rng, lambda: next(counter), stop, until, cap, lambda m: f"healthy:{m}")
        _drain(lanes, 3.0)
    finally:
        _close(lanes, clients)


def gs_inject(
    url: str,
    idx: int,
    params: Mapping[str, Any],
    timeout_s: float,
    repeat_s: float,
    label: str,
    add: Add,
    t0: float,
) -> None:
    """An injected client (see the module's docstring); its streams are split by model."""
    params = dict(params)
    model = str(params.pop("gs_model", "gs_moderate"))
    cancel_after_ms = params.pop("gs_cancel_after_ms", None)
    plan = PLANS["split"]
    rng = np.random.default_rng(1000 + idx)
    # The faulty request stays outstanding: the stream is topped up while it is the only one.
    carry = replace(plan, inflight=plan.inflight + 1, low=plan.low + 1)
    counter = iter(range(900_000_000 + idx * 1_000_000, 900_000_000 + (idx + 1) * 1_000_000))
    until = time.monotonic() + repeat_s
    never = threading.Event()
    if cancel_after_ms is None:  # the faulty request, then healthy ones on the same stream
        client, tc = _client(url)
        lane = _Lane(GsStream(client, tc, add, t0), (model,))
        try:
            lane.stream.send(model, inputs(model, rng, next(counter)), label, timeout_s, params)
            same = f"{label} (same stream):{model}"
            _carry([lane], carry, rng, lambda: next(counter), never, until, 400, lambda m: same)
            _drain([lane], 3.0)
        finally:
            _close([lane], [client])
        return
    for _ in range(20):  # rounds: streams cancelled with requests outstanding, then new ones
        if time.monotonic() >= until:
            break
        doomed, clients = _lanes(url, plan, add, t0, 0)
        for lane in doomed:
            m = lane.models[0]
            for _k in range(8):
                lane.stream.send(m, inputs(m, rng, next(counter)), f"{label}:cancelled:{m}", 10)
        time.sleep(float(cancel_after_ms) / 1000.0)
        for lane in doomed:
            lane.stream.close(cancel=True, status=GsStatus.CANCELLED)
        for client in clients:
            with contextlib.suppress(Exception):
                client.close()
        fresh, clients = _lanes(url, plan, add, t0, 0)
        for lane in fresh:
            m = lane.models[0]
            for _k in range(8):
                lane.stream.send(m, inputs(m, rng, next(counter)), f"{label}:new stream:{m}", 10)
        _drain(fresh, 10.5)
        _close(fresh, clients)
        time.sleep(2.0)
