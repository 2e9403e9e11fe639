"""Decoupled response streams rebuilt from Triton's verbose log (gRPC), without request ids.

Why: Triton releases a decoupled request as soon as ``execute`` returns, before any of its
responses, so the request state machine says nothing about a token stream that stops half-way.
On 2.51 the gRPC stream handler still tells each stream's story, though none of its lines
names the model or the request:

* ``Process for ModelStreamInferHandler, rpc_ok=1, context 0, 0 step READ`` when a request is
  read from a client stream. The handler's single completion-queue thread then issues the
  request synchronously, so the request's own ``prepared:`` line (model, id) follows within
  microseconds and before the next ``READ``; no ``prepared:`` line means the request failed
  before it was issued, and no response of it goes through the callback below;
* ``ModelStreamInferHandler::StreamInferComplete, context 0, 0 step ISSUED, callback index N,
  flags F, response is nullptr B`` for each response callback of that request: ``N`` counts
  its callbacks from 1 (an empty, final-flag-only send counts too), bit 0 of ``F`` is the final
  flag (``step CANCELLATION_ISSUED`` when the client cancelled).

``context 0, 0`` are the stream's and the request's unique ids, which release builds print as 0
(``NEXT_UNIQUE_ID`` is 0 unless Triton is built without ``NDEBUG``): nothing on a response line
tells two streams apart, only its count. So:

* A ``READ`` is paired with the first ``prepared:`` line after it (and before the next
  ``READ``, within ``_PAIR_NS``) of a *streamed* model: one that comes first after a ``READ``
  at least as often as it comes later. A BLS child of the streamed model (a ``tokenizer``
  called as soon as the stream's ``execute`` starts) can slip in between a ``READ`` and its own
  line, but it comes first only by chance and later after nearly every ``READ``.
* A response with index N belongs to one of the open streams that have had N - 1 callbacks;
  it is given to the one of them that got to N - 1 *last* (the most recently active). Every
  assignment moves one stream from N - 1 to N, as the truth does, so the streams at each count
  are as many as the true ones, and the quiet times at a count (since each got to it) come out
  element by element *no shorter* than the true ones (taking the newest leaves the oldest;
  the truth can only leave newer ones). Hence the guarantee: a stream stalled for T seconds
  is always shown by an open stream at the same count quiet for at least T seconds, and a
  stall that ended by a response shows as a gap at least as long — whatever healthy streams
  interleave, whatever their lengths and at whichever count the stall happens. Two kinds of
  mistake remain, neither of which hides a stall: two streams at the same count may swap
  (each takes the other's later story), and when several streams are at one count without a
  pause (streams of the same count overlapping for longer than the stall deadline, i.e. a
  sustained rate of new streams times the gap between responses well above one) the oldest
  of them looks quiet since that busy stretch began, which can read as a stall. Where streams
  of different models are at the same count, a stall may be charged to a stream of another
  model that got to that count within one response gap of it.
* A response that no open stream can own (no stream at N - 1) comes from a stream read before
  the records begin: it is followed from there, as a stream of no model, and never reported.
  Until the first such response, that stream can take the place of a stream of the window at
  the same count (a swap, as above).

A stream with no final response and no response for longer than its model's stall deadline is
stalled.

HTTP ``generate_stream`` writes no end of a stream to the log (only ``HTTP using buffer`` per
response): only the in-model library (``bls.response_sender``) sees such a stream stall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from observability import events as ev

__all__ = ["LogStream", "log_streams"]

_PAIR_NS = 20_000_000
"""A stream read and the ``prepared:`` line of its request are microseconds apart."""


@dataclass(eq=False)
class LogStream:
    """One request read from a gRPC stream, and its responses."""

    opened_ns: int
    offset: int
    model: str = ""
    request_id: str = ""
    responses: int = 0
    """The index of its last response that carried one (an empty final send does not)."""
    callbacks: int = 0
    """Its response callbacks so far, empty ones included: what the next index follows."""
    last_ns: int = 0
    """The last activity: the open, then each response."""
    last_offset: int = 0
    final_ns: int | None = None
    cancelled: bool = False
    gaps_ns: list[int] = field(default_factory=list)
    """Time from the open to the first response, then between responses and to the final
    flag."""

    @property
    def open(self) -> bool:
        return self.final_ns is None

    def quiet_s(self, now_ns: int) -> float:
        return (now_ns - self.last_ns) / 1e9


def log_streams(records: Iterable[object]) -> list[LogStream]:
    """Every gRPC stream request of the records (log order) whose request is named, pure."""
    records = list(records)
    streams = _read_streams(records)
    at_count: dict[int, list[LogStream]] = {}
    """Open streams by callbacks so far, each list in the order they got to that count."""
    for rec in records:
        if isinstance(rec, ev.StreamRequestRead):
            stream = streams.get(id(rec))
            if stream is not None:
                at_count.setdefault(0, []).append(stream)
        elif isinstance(rec, ev.StreamResponse):
            waiting = at_count.get(rec.index - 1)
            if waiting:
                owner = waiting.pop()  # the one that got to index - 1 last
            elif rec.final:
                continue  # the end of a stream read before the records begin
            else:  # a stream read before the records begin: follow it from here
                owner = LogStream(rec.header.at_ns, rec.header.offset)
                owner.last_ns = owner.opened_ns
            at = rec.header.at_ns
            # The final flag alone (an empty response, or a client's cancellation) ends a
            # quiet stretch too: a stream frozen until its client gave up shows as that gap.
            owner.gaps_ns.append(at - owner.last_ns)
            owner.last_ns, owner.last_offset = at, rec.header.offset
            owner.callbacks = rec.index
            if not rec.empty:
                owner.responses = rec.index
            if rec.final:
                owner.final_ns = at
                owner.cancelled = rec.step.startswith("CANCELLATION")
            else:
                at_count.setdefault(rec.index, []).append(owner)
    return list(streams.values())


def _read_streams(records: list[object]) -> dict[int, LogStream]:
    """The stream of each ``READ`` whose request's ``prepared:`` line is found, keyed by the
    ``id`` of its read record, in log order."""
    reads: list[tuple[ev.StreamRequestRead, list[ev.RequestPrepared]]] = []
    for rec in records:
        if isinstance(rec, ev.StreamRequestRead):
            reads.append((rec, []))
        elif isinstance(rec, ev.RequestPrepared) and reads:
            read, candidates = reads[-1]
            if rec.header.at_ns - read.header.at_ns <= _PAIR_NS:
                candidates.append(rec)
    first: Counter[str] = Counter()
    later: Counter[str] = Counter()
    for _, candidates in reads:
        if candidates:
            first[candidates[0].model] += 1
            later.update({p.model for p in candidates[1:]} - {candidates[0].model})
    streamed = {m for m, n in first.items() if n >= later[m]}
    out: dict[int, LogStream] = {}
    for read, candidates in reads:
        own = next((p for p in candidates if p.model in streamed), None)
        if own is None:
            continue  # the request failed before it was issued, or its line is not here
        stream = LogStream(read.header.at_ns, read.header.offset, own.model, own.request_id)
        stream.last_ns, stream.last_offset = stream.opened_ns, stream.offset
        out[id(read)] = stream
    return out
