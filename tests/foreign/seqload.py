"""The ``stateful`` family's clients: HTTP, sequences, a pinned model version.

Why a client of its own: ``observability.load.TritonClient`` sends neither sequence flags nor
a model version, and the stateful family exists to exercise what a sequence client does. Each
step of a sequence is two HTTP calls, as a sensor gateway makes them: ``sess_norm`` (not
batched) normalises the raw reading, then ``sess_tracker`` (sequence batcher) gets it with
``sequence_id`` and the start/end flags, at the version the client pins. No request ids.
The outputs are read only to pass READING on; nothing of them is recorded.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from observability.load.client import Outcome, Status

__all__ = [
    "SEQ_KEYS",
    "HttpClient",
    "SequenceClient",
    "failed",
    "inject_sequence",
    "sequence_worker",
    "warm_up",
]

STEPS = 4
"""Steps of a background client's sequence."""
SEQ_KEYS = ("seq_steps", "seq_fault_step", "seq_version", "seq_gap_s")
"""Injection parameters the client reads (and does not send): the sequence's length, the
1-based step that carries the other parameters, the version it pins, and the seconds between
the sends of the steps from the faulty one on (each sent without waiting for the one before,
as a pipelining client does, so that they queue behind it)."""

Add = Callable[[str, object, float], None]
"""``Outcomes.add`` of the recorder."""


class HttpClient:
    """One HTTP client for one thread (tritonclient's clients are not shared across threads):
    what the recorder's HTTP families' clients share."""

    def __init__(self, url: str, timeout_s: float) -> None:
        import tritonclient.http as tc

        self._tc: Any = tc
        self.address = url.removeprefix("http://").rstrip("/")
        self._client: Any = tc.InferenceServerClient(
            self.address, connection_timeout=timeout_s, network_timeout=timeout_s
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing must not mask the outcomes gathered
            self._client.close()


def failed(request_id: str, model: str, fault: str, started: float, err: Exception) -> Outcome:
    """The outcome of a call that raised: a timeout when the client library says so."""
    latency = time.monotonic() - started
    text = str(err)
    timed_out = "timed out" in text.lower() or "timeout" in text.lower()
    status = Status.TIMEOUT if timed_out else Status.ERROR
    return Outcome(request_id, model, fault, status, started, latency, text[:500])


class SequenceClient(HttpClient):
    """Sends one step of a sequence and checks its answer."""

    def call(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        want: str,
        version: str = "",
        sequence: tuple[int, bool, bool] = (0, False, False),
        params: Mapping[str, str | int | float] | None = None,
    ) -> tuple[Outcome, np.ndarray | None]:
        """One inference; ``sequence`` is ``(sequence_id, start, end)``; returns the outcome
        and the output ``want`` (``None`` on failure)."""
        tc = self._tc
        items = []
        for name, array in inputs.items():
            item = tc.InferInput(name, list(array.shape), "FP32")
            item.set_data_from_numpy(array.astype(np.float32))
            items.append(item)
        seq_id, start, end = sequence
        started = time.monotonic()
        try:
            result = self._client.infer(
                model,
                items,
                model_version=version,
                sequence_id=seq_id,
                sequence_start=start,
                sequence_end=end,
                parameters=dict(params) if params else None,
            )
        except Exception as err:
            return failed("", model, "", started, err), None
        latency = time.monotonic() - started
        shapes = {
            str(o["name"]): tuple(int(d) for d in o.get("shape", []))
            for o in result.get_response().get("outputs", [])
        }
        outcome = Outcome("", model, "", Status.OK, started, latency, "", shapes)
        return outcome, result.as_numpy(want)


def _step(
    client: SequenceClient,
    add: Add,
    t0: float,
    label: str,
    raw: np.ndarray,
    version: str,
    sequence: tuple[int, bool, bool],
    params: Mapping[str, str | int | float] | None = None,
) -> None:
    norm, reading = client.call("sess_norm", {"RAW": raw}, "READING")
    add(f"{label}:sess_norm", norm, t0)
    batch = (raw if reading is None else reading).reshape(1, 6)
    tracked, _ = client.call("sess_tracker", {"READING": batch}, "SCORE", version, sequence, params)
    add(label, tracked, t0)


def sequence_worker(
    url: str,
    seed: int,
    stop: threading.Event,
    until: float,
    add: Add,
    t0: float,
    pause_s: float,
    max_requests: int,
    delay_s: float = 0.0,
    version: str = "",
) -> None:
    """A background client: sequences of ``STEPS`` steps, one after the other, pinned to
    ``version`` (by default version ``seed``: client 1 to version 1, client 2 to version 2)."""
    client = SequenceClient(url, timeout_s=10)
    rng = np.random.default_rng(seed)
    version = version or str(seed)
    sent = 0
    try:
        stop.wait(delay_s)
        for k in range(max_requests):
            seq_id = seed * 1_000_000 + k + 1
            for step in range(STEPS):
                if sent >= max_requests or stop.is_set() or time.monotonic() > until:
                    return
                flags = (seq_id, step == 0, step == STEPS - 1)
                raw = rng.standard_normal(6).astype(np.float32)
                _step(client, add, t0, "healthy", raw, version, flags)
                sent += 1
                stop.wait(pause_s)
    finally:
        client.close()


def inject_sequence(
    url: str,
    params: Mapping[str, str | int | float],
    idx: int,
    timeout_s: float,
    label: str,
    add: Add,
    t0: float,
) -> None:
    """One faulty sequence (id ``900_000 + idx``): its steps before the faulty one are sent
    one after the other; the faulty one and the steps after it are sent from their own
    threads ``seq_gap_s`` apart, without waiting (each with its own client)."""
    steps = int(params.get("seq_steps", STEPS))
    fault_step = int(params.get("seq_fault_step", 1))
    version = str(params.get("seq_version", "1"))
    gap_s = float(params.get("seq_gap_s", 0.5))
    sent = {k: v for k, v in params.items() if k not in SEQ_KEYS}
    seq_id = 900_000 + idx
    rng = np.random.default_rng(900 + idx)
    client = SequenceClient(url, timeout_s=timeout_s)
    try:
        for step in range(1, fault_step):
            flags = (seq_id, step == 1, step == steps)
            _step(client, add, t0, label, rng.standard_normal(6).astype(np.float32), version, flags)
    finally:
        client.close()
    threads = []
    for step in range(fault_step, steps + 1):
        flags = (seq_id, step == 1, step == steps)
        raw = rng.standard_normal(6).astype(np.float32)
        extra = sent if step == fault_step else None
        th = threading.Thread(
            target=_pipelined,
            args=(url, timeout_s, add, t0, label, raw, version, flags, extra),
            daemon=True,
        )
        th.start()
        threads.append(th)
        time.sleep(gap_s)
    for th in threads:
        th.join(timeout_s + 5)


def _pipelined(
    url: str,
    timeout_s: float,
    add: Add,
    t0: float,
    label: str,
    raw: np.ndarray,
    version: str,
    flags: tuple[int, bool, bool],
    params: Mapping[str, str | int | float] | None,
) -> None:
    client = SequenceClient(url, timeout_s=timeout_s)
    try:
        _step(client, add, t0, label, raw, version, flags, params)
    finally:
        client.close()


def warm_up(url: str, count: int, add: Add) -> None:
    """``count`` two-step sequences, alternating versions 1 and 2, one at a time."""
    client = SequenceClient(url, timeout_s=30)
    rng = np.random.default_rng(99)
    t0 = time.monotonic()
    try:
        for k in range(count):
            seq_id = 800_000 + k
            version = str(1 + k % 2)
            for step in range(2):
                raw = rng.standard_normal(6).astype(np.float32)
                _step(client, add, t0, "warmup", raw, version, (seq_id, step == 0, step == 1))
    finally:
        client.close()
