"""Decoupled response streams rebuilt from Triton's verbose log (gRPC), without request ids.

Why: Triton releases a decoupled request as soon as ``execute`` returns, before any of its
responses, so the request state machine says nothing about a token stream that stops half-way.
On 2.51 the gRPC stream handler still tells each stream's story, though none of its lines
names the model or the request:

* ``Process for ModelStreamInferHandler, rpc_ok=1, context 0, 0 step READ`` when a request is
  read from a client stream. The handler's one completion-queue thread issues the request at
  once, so the request's own ``prepared:`` line (model, id) follows within microseconds and
  before the next ``READ``; a request that fails before it is prepared has no such line and
  no response of it is logged as below;
* ``ModelStreamInferHandler::StreamInferComplete, context 0, 0 step ISSUED, callback index N,
  flags F, response is nullptr B`` for each response callback of that request: ``N`` counts
  its callbacks from 1 (an empty, final-flag-only send counts too), bit 0 of ``F`` is the final
  flag (``step CANCELLATION_ISSUED`` when the client cancelled).

``context 0, 0`` are the stream's and the request's unique ids, which release builds print as
0 (``NEXT_UNIQUE_ID`` is 0 under ``NDEBUG``): nothing on a response line tells two streams
apart but its count. So:

* A ``READ`` is paired with the first ``prepared:`` line after it (before the next ``READ``,
  within ``_PAIR_NS``) of a *streamed* model: one that comes first after a ``READ`` at least as
  often as it comes later. A BLS child the streamed model calls at once (a ``tokenizer``) can
  slip in between another ``READ`` and its own line, but comes first only by chance. A
  ``READ`` with no such line is left out (its request failed before it was prepared).
* A response with index N goes to a stream that has had N - 1 callbacks, so the streams at
  each count are as many as the true ones. Which of them is decided per count and per *busy
  stretch* of it (a run of the log during which some stream is at that count; no stream is
  in two): the streams of a stretch leave it in the order they came, unless the stretch reads
  as its oldest stream stalled while the others went through (``_relayed``). In arrival order
  each stream that passed a stalled one would have waited there for the next one to arrive;
  with the oldest left out, their gaps are their own again. The oldest is taken as stalled
  when the gaps in arrival order are (median) at least ``_RELAY`` times those with it left
  out, and those are real gaps, not lines of one batched step written together (at least
  1 / ``_RELAY`` of the count's typical gap: the median gap of the streams alone at that
  count, or of all the records, the smaller). It then stays until the stretch's last response
  (or the end), and the rest of the stretch is read the same way. Several oldest streams
  stalled at once (a model's worker pool held by slow streams) are read the same way, all
  together, when leaving them out gives every passing stream the gaps of a stream alone at
  that count (``_stalled_together``).
* A request its model never answers gets no callback at all, not even a cancellation one:
  when its client gives up, the handler's ``Cancellation notification received ... step
  ISSUED`` (no stream named) ends the stream that has waited longest for a first response,
  if it has waited long (``_unanswered``), instead of leaving it at count 0 to take the next
  stream's first response.

What that gives:

* A stream alone at its count keeps its own story.
* A stall keeps its quiet time, at any count (the one before an empty final send too),
  whatever streams of whatever lengths interleave, as long as the streams that pass its count
  meanwhile do not crowd it: each gone from that count before the next arrives, with gaps of
  similar length. In ``tests/fixtures/foreign/llm_stream_stall`` the stalled count is reached
  every ~0.25 s by a stream that leaves it 4 ms later; the oldest open stream at the stalled
  count (the previous rule) handed the stall on to each of them.
* Where a count stays crowded (other streams at it at once, continuously: a queue for the
  first response, dozens of streams a second through each count, a batched model writing
  every stream's response of a step together), a stall there cannot be told from the crowd
  passing through, and it is missed rather than invented. Taking the most recently active
  stream at each count would never miss one, but reads every crowd that lasts as a stall (its
  first stream waits until the crowd thins out: tens of false stalls a minute on a simulated
  LLM at 30 streams a second with a 1 s first-token queue).
* Streams of one stretch may swap stories. In arrival order no gap comes out longer than the
  longest true one of its stretch; read as a stall, the oldest stream's gap or quiet time is
  the whole stretch, at least the stall's. The stall is charged to the oldest stream of its
  stretch, which may be another model's stream at the same count.
* A stream read before the records begin is followed from its first response that no stream
  here can own, as a stream of no model (never reported); until then it can take the place of
  one at the same count.

A stream with no final response and no response for longer than its model's stall deadline is
stalled.

HTTP ``generate_stream`` writes no end of a stream to the log (only ``HTTP using buffer`` per
response): only the in-model library (``bls.response_sender``) sees such a stream stall.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from observability import events as ev
from observability.detectors.window import Window, per_window

__all__ = ["LogStream", "decoupled_models", "log_streams", "window_streams"]


@per_window
def decoupled_models(window: Window) -> dict[str, bool]:
    """Model -> whether its config, as the python backend logged it at load (the last one in
    the window), is decoupled: a decoupled request is released when ``execute`` returns, its
    responses still to come, so a released call of it may still be what a caller waits on."""
    return {c.model: c.decoupled for c in window.logs(ev.ModelConfig)}


_PAIR_NS = 20_000_000
"""A stream read and the ``prepared:`` line of its request are microseconds apart."""

_RELAY = 2.0
"""How much longer (median) the gaps of a busy stretch must be in arrival order than with its
oldest stream left out, for that stream to be taken as stalled."""


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
    """Its response callbacks so far, empty ones included: the count the next one follows."""
    last_ns: int = 0
    """The last activity: the open, then each response."""
    last_offset: int = 0
    final_ns: int | None = None
    cancelled: bool = False
    gaps_ns: list[int] = field(default_factory=list)
    """Time from the open to the first response, then between responses and to the final
    flag."""
    charged_from: str = ""
    """The model this stream's stall was first charged to, when that model was ruled out
    (``stream_stalled``: it sends its streams from inside its execute, and released the
    stream's batch)."""

    @property
    def open(self) -> bool:
        return self.final_ns is None

    def quiet_s(self, now_ns: int) -> float:
        return (now_ns - self.last_ns) / 1e9


@dataclass(slots=True)
class _At:
    """A stream reaching a count (``item``: the stream, ``None`` before it is known), or a
    response leaving it (``item``: the response), at a place in the records."""

    pos: int
    at: int
    item: object


_Stretch = tuple[list[_At], list[_At], bool]
"""A busy stretch of one count: the streams reaching it, the responses leaving it, and whether
it ended (the last stream there left)."""


@per_window
def window_streams(window: Window) -> list[LogStream]:
    """The window's gRPC streams, rebuilt once per window (``stream_stalled`` and
    ``shape_growth`` read them; neither changes them)."""
    return log_streams(
        window.logs(
            ev.StreamRequestRead, ev.RequestPrepared, ev.StreamResponse, ev.FrontendCancellation
        )
    )


def log_streams(records: Iterable[object]) -> list[LogStream]:
    """Every gRPC stream request of the records (log order) whose request is named, pure."""
    records = list(records)
    streams = _read_streams(records)
    arrivals: list[_At] = []  # at count 0: the streams read
    leaving: dict[int, list[_At]] = {}  # per count, the responses that leave it
    in_order: dict[int, deque[int]] = {0: deque()}
    gaps: list[int] = []  # every count taken in arrival order: the typical gap of the records
    firsts: list[int] = []  # of those, the waits for a first response
    for pos, rec in enumerate(records):
        if isinstance(rec, ev.FrontendCancellation):
            waiting = in_order[0]
            if _unanswered(rec, waiting, firsts):
                leaving.setdefault(0, []).append(_At(pos, rec.header.at_ns, rec))
                waiting.popleft()
            continue
        if isinstance(rec, ev.StreamResponse) and rec.index >= 1:
            at = rec.header.at_ns
            leaving.setdefault(rec.index - 1, []).append(_At(pos, at, rec))
            there = in_order.get(rec.index - 1)
            if there:
                gaps.append(at - there.popleft())
                if rec.index == 1:
                    firsts.append(gaps[-1])
            if not rec.final:
                in_order.setdefault(rec.index, deque()).append(at)
        elif isinstance(rec, ev.StreamRequestRead) and id(rec) in streams:
            arrivals.append(_At(pos, rec.header.at_ns, streams[id(rec)]))
            in_order[0].append(rec.header.at_ns)
    pooled = _median(gaps) if gaps else 0.0
    for count in range(max(leaving, default=-1) + 1):
        reached: list[_At] = []
        for stream, left in _match(arrivals, leaving.get(count, []), pooled):
            rec = left.item
            if isinstance(rec, ev.FrontendCancellation):
                if isinstance(stream, LogStream):
                    _gave_up(stream, rec)
                continue
            assert isinstance(rec, ev.StreamResponse)
            owner = stream if isinstance(stream, LogStream) else _before_records(rec)
            _respond(owner, rec)
            if not rec.final:
                reached.append(_At(left.pos, left.at, owner))
        arrivals = sorted(reached, key=lambda a: a.pos)
    return list(streams.values())


def _before_records(rec: ev.StreamResponse) -> LogStream:
    """A stream read before the records begin, followed from its first response here."""
    stream = LogStream(rec.header.at_ns, rec.header.offset)
    stream.last_ns = stream.opened_ns
    return stream


_UNANSWERED_NS = 1_000_000_000
"""A stream's client that cancels after waiting at least this long for a first response, and
at least ``_FIRST_WAITS`` times the usual wait, is taken to have given up on that response."""

_FIRST_WAITS = 10


def _unanswered(rec: ev.FrontendCancellation, waiting: deque[int], firsts: list[int]) -> bool:
    """Whether a stream's cancellation is its oldest unanswered request's client giving up.

    A request its model never answered (its instance or the model's own worker pool held by
    others) gets no callback at all, not even ``CANCELLATION_ISSUED``: its client's deadline
    leaves only the handler's ``Cancellation notification received for
    ModelStreamInferHandler, ... step ISSUED``, which names no stream. Kept waiting at count
    0, it would take the next first response of any stream (another model's) and charge that
    stream its own wait. Taken here is the longest wait for a first response, when it is long
    (``_UNANSWERED_NS``, ``_FIRST_WAITS`` times the usual): a client that cancels a stream
    in the middle, the other case, leaves the fresh streams at count 0 alone."""
    if rec.handler != "ModelStreamInferHandler" or not rec.detail.endswith(" step ISSUED"):
        return False
    if not waiting:
        return False
    waited = rec.header.at_ns - waiting[0]
    usual = _median(firsts) if firsts else 0.0
    return waited >= _UNANSWERED_NS and waited >= _FIRST_WAITS * usual


def _gave_up(stream: LogStream, rec: ev.FrontendCancellation) -> None:
    """A stream whose client cancelled before its first response: it ends there."""
    _heard(stream, rec.header)
    stream.final_ns = stream.last_ns
    stream.cancelled = True


def _respond(owner: LogStream, rec: ev.StreamResponse) -> None:
    # The final flag alone (an empty response, or a client's cancellation) ends a quiet
    # stretch too: a stream frozen until its client gave up shows as that gap.
    _heard(owner, rec.header)
    owner.callbacks = rec.index
    if not rec.empty:
        owner.responses = rec.index
    if rec.final:
        owner.final_ns = owner.last_ns
        owner.cancelled = rec.step.startswith("CANCELLATION")


def _heard(stream: LogStream, header: ev.LogRecord) -> None:
    """A line of the stream's: the quiet time before it is one of its gaps."""
    stream.gaps_ns.append(header.at_ns - stream.last_ns)
    stream.last_ns, stream.last_offset = header.at_ns, header.offset


def _match(arrivals: list[_At], leaving: list[_At], pooled: float) -> list[tuple[object, _At]]:
    """Each response leaving one count with the stream it belongs to (``None``: a stream
    read before the records)."""
    orphans, stretches = _stretches(arrivals, leaving)
    out: list[tuple[object, _At]] = [(None, left) for left in orphans]
    alone = [dep[0].at - arr[0].at for arr, dep, ended in stretches if ended and len(arr) == 1]
    typical = min(_median(alone), pooled) if len(alone) >= 3 else pooled
    work = stretches
    while work:
        arr, dep, ended = work.pop()
        k = 1 if _relayed(arr, dep, ended, typical) else 0
        if not k and len(alone) >= 3:
            k = _stalled_together(arr, dep, ended, _median(alone))
        if k:
            rest_orphans, rest = _stretches(arr[k:], dep[:-k] if ended else dep)
            if not rest_orphans:  # none: every response but the last k left another behind
                if ended:
                    out += zip([a.item for a in arr[:k]], dep[-k:], strict=True)
                work += rest
                continue
        out += zip([a.item for a in arr[: len(dep)]], dep, strict=True)
    return out


def _stretches(arrivals: list[_At], leaving: list[_At]) -> tuple[list[_At], list[_Stretch]]:
    """The responses that leave a count no stream is at (their streams were read before the
    records), and the busy stretches of the count."""
    orphans: list[_At] = []
    out: list[_Stretch] = []
    arr: list[_At] = []
    dep: list[_At] = []
    i = j = 0
    while i < len(arrivals) or j < len(leaving):
        if j == len(leaving) or (i < len(arrivals) and arrivals[i].pos < leaving[j].pos):
            arr.append(arrivals[i])
            i += 1
        elif not arr:
            orphans.append(leaving[j])
            j += 1
        else:
            dep.append(leaving[j])
            j += 1
            if len(dep) == len(arr):
                out.append((arr, dep, True))
                arr, dep = [], []
    if arr:
        out.append((arr, dep, False))
    return orphans, out


def _relayed(arr: list[_At], dep: list[_At], ended: bool, typical: float) -> bool:
    """Whether the oldest stream of a busy stretch stalled while the others went through the
    count: compared are the gaps in arrival order (each response to the stream that came
    ``i``-th) and with the oldest left out (to the one that came next)."""
    shared = len(dep) - 1 if ended else len(dep)
    if shared < 1:
        return False  # no other stream left the count meanwhile: both read the same
    x = _median([dep[i].at - arr[i].at for i in range(shared)])
    y = _median([dep[i].at - arr[i + 1].at for i in range(shared)])
    return x >= _RELAY * y and _RELAY * y >= typical


_TOGETHER_MAX = 16
"""The most streams of one count taken as stalled at once."""


def _stalled_together(arr: list[_At], dep: list[_At], ended: bool, alone: float) -> int:
    """How many of the oldest streams of a busy stretch stalled at once while the others went
    through the count (0: none): several streams held together (a model's worker pool full of
    slow ones, bg_pool_exhausted) make every later stream that passes them read, in arrival
    order, as if it had waited for the stalled ones to leave; one left out is not enough.

    ``k`` of them are taken as stalled when, with them left out, each response goes to a
    stream already there and the streams' gaps are (median) those of a stream alone at the
    count, within ``_RELAY`` times, over at least three responses, while in arrival order they
    are ``_RELAY`` squared times longer. A crowd that keeps a count busy (a queue) is never
    read so: its gaps in arrival order are its own streams' already, and leaving the oldest
    out only shortens them below a lone stream's."""
    for k in range(2, min(len(arr), _TOGETHER_MAX + 1)):
        shared = len(dep) - k if ended else len(dep)
        if shared < 3 or shared + k > len(arr):
            break  # too few to judge, or fewer streams left at the count than taken out
        if any(dep[i].pos < arr[i + k].pos for i in range(shared)):
            continue  # a response before the stream it would go to
        y = _median([dep[i].at - arr[i + k].at for i in range(shared)])
        x = _median([dep[i].at - arr[i].at for i in range(shared)])
        if alone / _RELAY <= y <= alone * _RELAY and x >= _RELAY * _RELAY * y:
            return k
    return 0


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


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
            continue  # the request failed before it was prepared, or its line is not here
        stream = LogStream(read.header.at_ns, read.header.offset, own.model, own.request_id)
        stream.last_ns, stream.last_offset = stream.opened_ns, stream.offset
        out[id(read)] = stream
    return out
