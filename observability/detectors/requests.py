"""Per-request lifecycles rebuilt from Triton's verbose log, shared by the request detectors.

Triton 2.51 logs each request's state machine (``INITIALIZED to PENDING``, ``PENDING to
EXECUTING``, ``EXECUTING to RELEASED``) with its id but without its model; the model is on the
``prepared:`` line, the instance on the ``model M, instance I, executing N requests`` line
that follows the batch's ``PENDING to EXECUTING`` lines, and response shapes on
``add response output`` lines that name neither model nor request. This module joins them
once, in one pass (linear in the log), so every detector reads the same answer:

* One id can have several lifecycles open at once: an ensemble and each of its steps share
  the client's id (``pipeline`` EXECUTING, then ``preprocess`` with the same id). Lifecycles
  of one id are paired last-in-first-out (a step is released before its ensemble), and a
  ``PENDING to EXECUTING`` takes the oldest queued lifecycle of the id.
* Requests without an id (``<id_unknown>``, logged as ``""``) cannot be told apart by their
  state lines and get no lifecycle there. Their batches are known from the instance lines
  (``instances.py``), though: when an instance releases a batch that held id-less requests,
  each of them becomes an *anonymous* lifecycle (``Requests.anonymous``: model, instance,
  times) and takes its outputs by the same join, so output shapes are read without ids too.
  They stay out of ``lifecycles``, which the id-based detectors walk.
* A response output is joined to the lifecycle released next among those executing when it
  was written, one output per name per release, the newest first: a python model sends its
  response inside ``execute`` and Triton releases the request right after, and a batch of N
  requests writes N outputs of the same name before its N releases (within a batch the
  pairing is not known). Once a model has answered
  ``_LEARN_RESPONSES`` times, it claims only the output names it returned in at least half
  of its responses: on a loaded machine another model's release can fall between an output
  and its own release, and would otherwise take it (49 to 65 of about 4,000 outputs in each
  of four recorded demo runs). (Joining to "the preceding executing line
  of the same pid" does not work: 2.51 prints the process id, the same on every line.)
* BLS parentage comes from ids: ``a.b.c`` is a child of the longest prefix ``a.b`` or ``a``
  that is itself a request in the window.

Results are cached per window object, so several detectors over one window pay once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from observability import events as ev
from observability.detectors.instances import Execution, instances_of
from observability.detectors.window import Window, per_window
from observability.findings import Evidence

__all__ = ["Lifecycle", "Requests", "execution_evidence", "log_ref", "requests_of"]

_MAX_UNCLAIMED_OUTPUTS = 512
"""Response outputs waiting for a release; older ones are dropped (their request was never
released in the window, e.g. a decoupled sender), which keeps each release's scan bounded."""


_OUTPUT_TO_RELEASE_NS = 250_000_000
"""How long before its release a request's output may have been written: a python model
releases within a millisecond of its response, an instance thread starved on a loaded
machine within tens of milliseconds."""

_LEARN_RESPONSES = 8
"""Responses with outputs after which a model's usual output names are trusted."""
_FORWARD_NS = 5_000_000
"""An ensemble's copy of a step's output is logged within this of the step's own line (0.1 ms
on the recordings; 5 ms leaves room for a starved thread)."""


def log_ref(offset: int) -> str:
    """The evidence reference of a log line: file and byte offset, stable across re-reads."""
    return f"triton.log@{offset}"


def execution_evidence(e: Execution, now: int) -> Evidence:
    """A batch still open at ``now``, by its ``executing`` line."""
    return Evidence(
        "log",
        e.start_ns,
        log_ref(e.offset),
        f"model {e.model}, instance {e.instance}, executing {e.count} requests; "
        f"not released after {e.age_s(now):.1f} s",
    )


@dataclass(eq=False)
class Lifecycle:
    """One request (or ensemble step) as the log tells it; ``None`` for what was not seen."""

    request_id: str
    model: str = ""
    prepared_ns: int | None = None
    pending_ns: int | None = None
    executing_ns: int | None = None
    released_ns: int | None = None
    instance: str | None = None
    pending_offset: int | None = None
    executing_offset: int | None = None
    released_offset: int | None = None
    outputs: list[ev.ResponseOutput] = field(default_factory=list)

    @property
    def started_ns(self) -> int | None:
        """When it entered Triton (queued or, if the queueing was not seen, executing)."""
        return self.pending_ns if self.pending_ns is not None else self.executing_ns

    @property
    def open(self) -> bool:
        return self.released_ns is None and self.started_ns is not None

    @property
    def state(self) -> str:
        if self.released_ns is not None:
            return "RELEASED"
        if self.executing_ns is not None:
            return "EXECUTING"
        return "PENDING" if self.pending_ns is not None else "INITIALIZED"


@dataclass
class Requests:
    """Every lifecycle of a window in start order, with indexes the detectors need."""

    lifecycles: list[Lifecycle]
    by_id: dict[str, list[Lifecycle]]
    instances: dict[str, set[str]]
    """Model -> instance names seen executing in the window (a lower bound of its count)."""
    anonymous: list[Lifecycle] = field(default_factory=list)
    """Released requests without an id, from their instance's batch, in release order."""

    @cached_property
    def answered(self) -> dict[str, list[Lifecycle]]:
        """Model -> its released requests, with ids or not, in release order: the responses
        the detectors that read answers' outputs walk (read-only)."""
        out: dict[str, list[Lifecycle]] = {}
        for c in [*self.lifecycles, *self.anonymous]:
            if c.released_ns is not None and c.model:
                out.setdefault(c.model, []).append(c)
        for done in out.values():
            done.sort(key=lambda c: c.released_ns or 0)
        return out

    def parent_id(self, request_id: str) -> str | None:
        """The nearest id prefix (``a.b`` of ``a.b.c``) that is a request in the window."""
        rid = request_id
        while "." in rid:
            rid = rid.rpartition(".")[0]
            if rid in self.by_id:
                return rid
        return None

    def outermost(self, request_id: str) -> Lifecycle | None:
        """The request the client sent under this id (an ensemble, not one of its steps)."""
        found = self.by_id.get(request_id)
        return found[0] if found else None

    def open_children(self, parent_ids: Iterable[str]) -> dict[str, list[Lifecycle]]:
        """Open lifecycles of BLS children (any depth), grouped by their nearest parent id."""
        wanted = set(parent_ids)
        out: dict[str, list[Lifecycle]] = {}
        if not wanted:
            return out
        for cycle in self.lifecycles:
            if not cycle.open or "." not in cycle.request_id:
                continue
            parent = self.parent_id(cycle.request_id)
            if parent in wanted:
                out.setdefault(parent, []).append(cycle)
        return out

    def ancestors(self, request_id: str) -> list[str]:
        """Parent ids of a request, nearest first."""
        out = []
        rid: str | None = request_id
        while rid is not None:
            rid = self.parent_id(rid)
            if rid is not None:
                out.append(rid)
        return out


@per_window
def requests_of(window: Window) -> Requests:
    """The window's request lifecycles, built once per window object."""
    batches = {
        e.end_offset: e
        for e in instances_of(window).executions
        if e.end_offset is not None and any(not r.request_id for r in e.requests)
    }
    return build(
        window.logs(
            ev.RequestPrepared,
            ev.RequestStateChange,
            ev.InstanceExecuting,
            ev.InstanceReleased,
            ev.ResponseOutput,
        ),
        batches,
    )


def build(records: Iterable[object], batches: Mapping[int, Execution] | None = None) -> Requests:
    """Lifecycles from log records in time order (pure; exposed for tests and benchmarks).

    ``batches``: instance executions by the offset of their release line, for the id-less
    requests they held (see the module docstring)."""
    lifecycles: list[Lifecycle] = []
    anonymous: list[Lifecycle] = []
    by_id: dict[str, list[Lifecycle]] = {}
    prepared: dict[str, deque[Lifecycle]] = {}
    queued: dict[str, deque[Lifecycle]] = {}
    executing: dict[str, list[Lifecycle]] = {}
    awaiting_instance: dict[str, list[Lifecycle]] = {}
    instances: dict[str, set[str]] = {}
    unclaimed: deque[ev.ResponseOutput] = deque(maxlen=_MAX_UNCLAIMED_OUTPUTS)
    seen_outputs: deque[ev.ResponseOutput] = deque(maxlen=64)
    names = _OutputNames()

    def new(rid: str) -> Lifecycle:
        cycle = Lifecycle(rid)
        lifecycles.append(cycle)
        by_id.setdefault(rid, []).append(cycle)
        return cycle

    # Dispatch on the exact type, the state lines first: they are most of the records, and a
    # chain of isinstance calls over two million records was a tenth of the corpus's analysis.
    for rec in records:
        if type(rec) is ev.RequestStateChange:
            rid = rec.request_id
            if not rid:
                continue
            at = rec.header.at_ns
            to = rec.to_state
            if to == "PENDING":
                waiting = prepared.get(rid)
                cycle = waiting.popleft() if waiting else new(rid)
                cycle.pending_ns, cycle.pending_offset = at, rec.header.offset
                queued.setdefault(rid, deque()).append(cycle)
            elif to == "EXECUTING":
                waiting = queued.get(rid)
                cycle = waiting.popleft() if waiting else new(rid)
                cycle.executing_ns, cycle.executing_offset = at, rec.header.offset
                executing.setdefault(rid, []).append(cycle)
                if cycle.model:
                    batch = awaiting_instance.setdefault(cycle.model, [])
                    batch.append(cycle)
                    if len(batch) > _MAX_UNCLAIMED_OUTPUTS:  # a backend that never says
                        del batch[0]
            elif to == "RELEASED":
                stack = executing.get(rid)
                if stack:
                    cycle = stack.pop(_releasing(stack, at, unclaimed, names))
                else:  # released from the queue (cancelled), or started before the window
                    waiting = queued.get(rid)
                    cycle = waiting.pop() if waiting else new(rid)
                cycle.released_ns, cycle.released_offset = at, rec.header.offset
                _claim(cycle, unclaimed, names.usual(cycle.model))
                names.learn(cycle)
        elif type(rec) is ev.RequestPrepared:
            if rec.request_id:
                cycle = new(rec.request_id)
                cycle.model, cycle.prepared_ns = rec.model, rec.header.at_ns
                prepared.setdefault(rec.request_id, deque()).append(cycle)
        elif type(rec) is ev.InstanceExecuting:
            instances.setdefault(rec.model, set()).add(rec.instance)
            batch = awaiting_instance.pop(rec.model, [])
            for cycle in batch[-rec.count :] if rec.count > 0 else ():
                cycle.instance = rec.instance
        elif type(rec) is ev.InstanceReleased:
            ended = batches.get(rec.header.offset) if batches else None
            if ended is None:
                continue
            for admitted in ended.requests:
                if admitted.request_id:
                    continue
                cycle = Lifecycle("", admitted.model, admitted.prepared_ns)
                cycle.executing_ns, cycle.instance = ended.start_ns, ended.instance
                cycle.released_ns, cycle.released_offset = rec.header.at_ns, rec.header.offset
                _claim(cycle, unclaimed, names.usual(cycle.model))
                names.learn(cycle)
                anonymous.append(cycle)
        elif type(rec) is ev.ResponseOutput:
            if not _forwarded(rec, seen_outputs):
                unclaimed.append(rec)
            seen_outputs.append(rec)
    return Requests(lifecycles, by_id, instances, anonymous)


def _forwarded(out: ev.ResponseOutput, seen: deque[ev.ResponseOutput]) -> bool:
    """Whether ``out`` is a tensor already logged, copied into another response: an ensemble
    passes its step's output on (to its caller or to the frontend), and Triton logs it again
    from another line of ``infer_response.cc`` (2.51: the step's at :174, the copy at :148,
    a tenth of a millisecond later). The copy belongs to no execution: the BLS parent
    released next took it as its own (``fr_features_growth``: a false shape_growth of
    fr_gateway's "SIGNALS", an output it does not have). A batch's outputs of one shape come
    from one line, so they are not copies of each other."""
    h = out.header
    for prev in reversed(seen):
        if h.at_ns - prev.header.at_ns > _FORWARD_NS:
            return False
        if (
            prev.header.source_line != h.source_line
            and prev.header.source_file == h.source_file
            and (prev.output, prev.dtype, prev.shape) == (out.output, out.dtype, out.shape)
        ):
            return True
    return False


class _OutputNames:
    """Which output names each model usually returns, learned from the join as it goes."""

    def __init__(self) -> None:
        self._responses: dict[str, int] = {}
        self._counts: dict[str, dict[str, int]] = {}
        self._usual: dict[str, frozenset[str]] = {}

    def usual(self, model: str) -> frozenset[str] | None:
        """Names in at least half of the model's responses; None while still learning."""
        return self._usual.get(model)

    def learn(self, cycle: Lifecycle) -> None:
        if not cycle.outputs or not cycle.model:
            return
        m = cycle.model
        n = self._responses[m] = self._responses.get(m, 0) + 1
        counts = self._counts.setdefault(m, {})
        names = frozenset([o.output for o in cycle.outputs])
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        if n < _LEARN_RESPONSES:
            return
        # A response with exactly the usual names changes no name's side of the half: the
        # usual ones gain a response each, the others stay under half. Recounted otherwise.
        if self._usual.get(m) != names:
            self._usual[m] = frozenset([k for k, c in counts.items() if 2 * c >= n])


def _releasing(
    stack: list[Lifecycle], at: int, unclaimed: deque[ev.ResponseOutput], names: _OutputNames
) -> int:
    """Which of one id's executing lifecycles a release ends: the newest (a step is released
    before its ensemble) unless an older one's model usually returns an output just written
    and the newer ones' models do not (an ensemble's steps overlap: its classifier step can
    start before its preprocess step's release is logged)."""
    top = len(stack) - 1
    if top == 0 or not unclaimed:
        return top
    for i in range(top, -1, -1):
        usual = names.usual(stack[i].model)
        if usual is None:
            return top
        if any(out.output in usual for _j, out in _recent(unclaimed, stack[i], at)):
            return i
    return top


def _recent(
    unclaimed: deque[ev.ResponseOutput], cycle: Lifecycle, released_ns: int
) -> Iterator[tuple[int, ev.ResponseOutput]]:
    """Unclaimed outputs (index, output), newest first, that ``cycle`` may have written: since
    it started executing and at most ``_OUTPUT_TO_RELEASE_NS`` before its release."""
    oldest = max(cycle.executing_ns or 0, released_ns - _OUTPUT_TO_RELEASE_NS)
    for i in range(len(unclaimed) - 1, -1, -1):
        out = unclaimed[i]
        if out.header.at_ns < oldest:
            return  # written in log order: the rest are older still
        yield i, out


def _claim(
    cycle: Lifecycle, unclaimed: deque[ev.ResponseOutput], usual: frozenset[str] | None = None
) -> None:
    """Give a released lifecycle the newest unclaimed output of each name written while it
    executed and at most ``_OUTPUT_TO_RELEASE_NS`` before its release; names its model does
    not usually return (``usual``, None while unknown) stay for others.

    Newest, not oldest: a python model writes its outputs just before its release, while an
    output left over by an earlier mistake is old; taking the oldest passed such a leftover
    from request to request (each took its predecessor's output, seen in a recorded run),
    and an error response with no output of its own then took one too."""
    if cycle.executing_ns is None or cycle.released_ns is None or not unclaimed:
        return
    taken: dict[str, int] = {}
    for i, out in _recent(unclaimed, cycle, cycle.released_ns):
        if out.output not in taken and (usual is None or out.output in usual):
            taken[out.output] = i
    for i in sorted(taken.values(), reverse=True):
        cycle.outputs.append(unclaimed[i])
        del unclaimed[i]
    cycle.outputs.reverse()
