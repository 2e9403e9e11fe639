"""Decoupled response streams rebuilt from Triton's verbose log (gRPC), without request ids.

Why: Triton releases a decoupled request as soon as ``execute`` returns, before any of its
responses, so the request state machine says nothing about a token stream that stops half-way.
On 2.51 the gRPC stream handler still tells each stream's story, though none of its lines
names the model or the request:

* ``Process for ModelStreamInferHandler, rpc_ok=1, context 0, 0 step READ`` when a request is
  read from a client stream; the request's own ``prepared:`` line (model, id) follows within
  microseconds;
* ``ModelStreamInferHandler::StreamInferComplete, context 0, 0 step ISSUED, callback index N,
  flags F, response is nullptr B`` for each response handed to the client: ``N`` counts the
  responses of one request from 1, bit 0 of ``F`` is the final flag (``step
  CANCELLATION_ISSUED`` when the client cancelled).

2.51 prints ``context 0, 0`` for every stream, so responses are matched to streams by their
count: a response with index N belongs to the oldest open stream that has sent N - 1. With
several streams at the same count the match may swap two of them, which moves no stream's
quiet time by more than the gap between their responses. A stream with no final response and
no response for longer than its model's stall deadline is stalled.

HTTP ``generate_stream`` writes no end of a stream to the log (only ``HTTP using buffer`` per
response): only the in-model library (``bls.response_sender``) sees such a stream stall.
"""

from __future__ import annotations

from collections import deque
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
    """Every gRPC stream request of the records (log order), pure."""
    streams: list[LogStream] = []
    open_: list[LogStream] = []
    unpaired: deque[LogStream] = deque()
    for rec in records:
        if isinstance(rec, ev.StreamRequestRead):
            stream = LogStream(rec.header.at_ns, rec.header.offset)
            stream.last_ns, stream.last_offset = stream.opened_ns, stream.offset
            unpaired.append(stream)
            streams.append(stream)
            open_.append(stream)
        elif isinstance(rec, ev.RequestPrepared):
            while unpaired and rec.header.at_ns - unpaired[0].opened_ns > _PAIR_NS:
                unpaired.popleft()  # its prepared line is not in the window
            if unpaired:
                stream = unpaired.popleft()
                stream.model, stream.request_id = rec.model, rec.request_id
        elif isinstance(rec, ev.StreamResponse):
            owner = _owner(open_, rec.index)
            if owner is None:
                continue
            at = rec.header.at_ns
            # The final flag alone (an empty response, or a client's cancellation) ends a
            # quiet stretch too: a stream frozen until its client gave up shows as that gap.
            owner.gaps_ns.append(at - owner.last_ns)
            owner.last_ns, owner.last_offset = at, rec.header.offset
            if not rec.empty:
                owner.responses = rec.index
            if rec.final:
                owner.final_ns = at
                owner.cancelled = rec.step.startswith("CANCELLATION")
                open_.remove(owner)
    return [s for s in streams if s.model]


def _owner(open_: list[LogStream], index: int) -> LogStream | None:
    """The oldest open stream that has sent ``index - 1`` responses (else fewer)."""
    fewer = None
    for stream in open_:
        if stream.responses == index - 1:
            return stream
        if fewer is None and stream.responses < index:
            fewer = stream
    return fewer
