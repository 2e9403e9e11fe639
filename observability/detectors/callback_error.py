"""callback_error: an exception in a BLS done-callback or asyncio task, and the request it broke.

Why it needs its own detector: asyncio prints these (``Exception in callback ...``, ``Task
exception was never retrieved``) from the python stub straight into Triton's stream, with no
log prefix and no timestamp, and nothing else records them. The awaiting request then either
never gets its result (a hang) or answers an error; on 2.51 an error response from a python
model is not logged at all and counts as a success in the statistics and metrics. So the
traceback is the only server-side trace of the failure.

Model: the innermost ``.../<model>/<version>/model.py`` frame (or the ``at``/``defined at``
location asyncio prints), since the traceback may pass through wrappers such as our BLS
instrumentation. Request: the log cannot tell which request's coroutine raised, so among
the model's requests executing when the traceback was printed (or up to ``lookback_s``
before: task exceptions are printed at garbage collection) that were released *without any
response output* (an error response has no outputs) or are still open, the detector names
the one whose BLS child answered just before (a done-callback runs on the child's response);
it names none when that is not unique.

When no frame names a model (the callback lives in a shared package outside the model
repository), the instance lifecycles do: a done-callback runs on a BLS child's response, so
its model is that of the one batch that was open when a child batch was released just before
the traceback and then went on waiting (still open, or released far later), on a model that
calls the child's (``waits.callees``). Without the verbose log nothing names it.
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass, replace

from observability import events as ev
from observability.detectors.instances import Execution, instances_of
from observability.detectors.loads import clock
from observability.detectors.requests import Lifecycle, Requests, log_ref, requests_of
from observability.detectors.waits import callees
from observability.detectors.window import Window, per_window
from observability.findings import Evidence, Finding, Severity

__all__ = ["CallbackErrorDetector", "Traceback", "held_batch", "tracebacks"]

_STARTS = {
    "Exception in callback": "callback",
    "Task exception was never retrieved": "task",
    "Exception in default exception handler": "callback",
    "Exception in thread ": "thread",
}
"""What opens an error block, and its kind. ``thread``: ``threading.excepthook``'s print of a
thread that died (a decoupled model's sender thread, as in Triton's ``repeat`` example: its
stream then never gets its final response; bg_thread_dies)."""
_CONTINUES = ("handle:", "future:", "Traceback", "During handling", "The above exception", " ")
_EXC = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")
_MODEL_FILE = re.compile(r"/([^/\s\"']+)/\d+/model\.py\b")
_ANY_MODEL_FILE = re.compile(r"/([^/\s\"']+)/\d+/[^/\s\"']+\.py\b")

ADVICE = (
    "Fix the exception shown (a KeyError on an output name usually means the callback reads a "
    "name the child model does not return: check its config's outputs). Asyncio only prints "
    "these: wrap done-callback bodies in try/except and resolve the awaited future with "
    "set_exception, await or add a done-callback to every task you create, and answer a "
    "pb_utils.TritonError instead of waiting for a result that will never come. Count error "
    "responses yourself (observability.bls callback/task wrappers do): Triton 2.51 counts a "
    "python model's error response as a success."
)


@dataclass(frozen=True)
class Traceback:
    """One asyncio error block as printed by a stub."""

    kind: str
    """``callback``, ``task`` or ``thread``."""
    at_ns: int
    offset: int
    lines: tuple[str, ...]
    model: str
    exception: str


@per_window
def tracebacks(window: Window) -> list[Traceback]:
    """Asyncio error blocks in the window's stub output, in order (read-only: one list per
    window, for this detector, ``held_batch`` and ``hung_request``)."""
    out: list[Traceback] = []
    block: list[ev.StubOutput] = []
    for rec in window.logs(ev.StubOutput):
        text = rec.text.rstrip("\r\n")
        start = _opener(text)
        if start is not None:
            if block:
                out.append(_traceback(block))
            block = [rec]
        elif block and (text.startswith(_CONTINUES) or _ends_block(block, text)):
            block.append(rec)
        elif block:
            out.append(_traceback(block))
            block = []
    if block:
        out.append(_traceback(block))
    return out


def _opener(text: str) -> str | None:
    """The kind of asyncio error block ``text`` opens, if it does. asyncio prints through the
    ``logging`` module, so a model that configures logging (``logging.basicConfig``, as
    ordinary code does) gets the opener behind its own prefix: ``2026-11-26 02:46:50,460 ERROR
    asyncio: Exception in callback ...`` or ``ERROR:asyncio:Exception in callback ...``
    (``nz_callback_error``: missed while it only matched at the line's start). A prefix
    counts when it names the ``asyncio`` logger, so a model's own text that merely quotes
    the words does not open a block."""
    for prefix, kind in _STARTS.items():
        i = text.find(prefix)
        if i == 0 or (i > 0 and "asyncio" in text[:i]):
            return kind
    return None


def _ends_block(block: list[ev.StubOutput], text: str) -> bool:
    """The exception line (``KeyError: 'LOGITS'``) that closes a traceback."""
    return (
        any(r.text.startswith("Traceback") for r in block)
        and _opener(block[-1].text) is None
        and _EXC.match(text) is not None
        and _EXC.match(block[-1].text.rstrip()) is None
    )


def _traceback(block: list[ev.StubOutput]) -> Traceback:
    lines = tuple(r.text.rstrip("\r\n") for r in block)
    kind = _opener(lines[0]) or "callback"
    model = ""
    for pattern in (_MODEL_FILE, _ANY_MODEL_FILE):
        found = [m.group(1) for line in lines for m in pattern.finditer(line)]
        if found:
            model = found[-1]
            break
    exception = lines[-1] if len(lines) > 1 and _EXC.match(lines[-1]) else ""
    if not exception:  # the task line says it: "... exception=KeyError('LOGITS')>"
        m = re.search(r"exception=(\w+\(.*\))>", lines[0] + " " + " ".join(lines[1:2]))
        exception = m.group(1) if m else ""
    return Traceback(kind, block[0].at_ns, block[0].offset, lines, model, exception)


@dataclass
class CallbackErrorDetector:
    """Every asyncio callback/task exception a stub printed, with its model and request."""

    lookback_s: float = 1.0
    severity_unattributed: Severity = Severity.WARNING
    kind: str = "callback_error"

    def detect(self, window: Window) -> list[Finding]:
        blocks = list(tracebacks(window))
        if not blocks:
            return []
        owners: dict[int, Execution] = {}
        named = {i for i, tb in enumerate(blocks) if tb.model}
        for i, tb in enumerate(blocks):
            if tb.kind == "callback":
                owner = _waiting_batch(window, tb) if not tb.model else held_batch(window, tb)
                if owner is not None:
                    owners[i] = owner
                    blocks[i] = Traceback(
                        tb.kind, tb.at_ns, tb.offset, tb.lines, owner.model, tb.exception
                    )
        tied: dict[int, list[str]] = {}
        victims = _victims(blocks, requests_of(window), int(self.lookback_s * 1e9), tied)
        told: list[tuple[Finding, list[Traceback]]] = []
        repeats: dict[tuple[str, str, str], list[Traceback]] = {}
        for i, (tb, v) in enumerate(zip(blocks, victims, strict=True)):
            same: list[Traceback] = []
            if v is None and i not in owners and not tied.get(i):
                same = repeats.setdefault((tb.model, tb.kind, tb.exception), [])
                same.append(tb)
                if len(same) > 1:
                    continue  # told once, with its count (a callback that raises each time)
            finding = self._finding(window, tb, v, tied.get(i, []), owners.get(i), i in named)
            told.append((finding, same))
        return [_repeated(f, same) for f, same in told]

    def _finding(
        self,
        window: Window,
        tb: Traceback,
        victim: Lifecycle | None,
        tied: list[str],
        owner: Execution | None = None,
        named: bool = False,
    ) -> Finding:
        what = _WHAT[tb.kind]
        model = tb.model or "unknown"
        summary = f"{model}: {what} raised {tb.exception or 'an exception'}"
        if tb.kind == "task":
            summary += " and nobody retrieved it"
        evidence = [Evidence("log", tb.at_ns, log_ref(tb.offset), "\n".join(tb.lines))]
        if victim is None and owner is not None:
            held = owner.age_s(window.until_ns)
            which = (
                f"; the one batch of it running then that went on waiting is {owner.instance}'s "
                if named
                else "; no frame names the model: the one batch waiting on a BLS child "
                f"answered just before it is {owner.instance}'s "
            )
            summary += (
                which + f"(batch of {owner.count}), "
                + (f"still waiting after {held:.1f} s." if owner.open else
                   f"released only {held:.1f} s after it started.")
            )  # fmt: skip
            evidence.append(
                Evidence(
                    "log",
                    owner.start_ns,
                    log_ref(owner.offset),
                    f"model {owner.model}, instance {owner.instance}, executing {owner.count} "
                    "requests" + ("; not released since" if owner.open else ""),
                )
            )
            severity = Severity.CRITICAL
        elif victim is None:
            summary += "; the result it should have delivered is lost (the awaiting request "
            summary += "hangs or answers an error, which Triton 2.51 logs nowhere)."
            if tied:
                summary += (
                    " The log cannot tell which request it broke: one of "
                    + ", ".join(f"'{r}'" for r in tied)
                    + " (released together)."
                )
            severity = self.severity_unattributed
        else:
            if victim.released_ns is None:
                outcome = "is still waiting for it"
            else:
                outcome = "was then answered without any output (an error response, which "
                outcome += "Triton 2.51 neither logs nor counts as a failure)"
            summary += f"; request '{victim.request_id}' {outcome}."
            severity = Severity.CRITICAL
            evidence.append(_victim_evidence(victim))
        return Finding(
            kind=self.kind,
            severity=severity,
            model=model,
            instance=victim.instance if victim else (owner.instance if owner else None),
            request_id=victim.request_id if victim else None,
            first_seen_ns=tb.at_ns,
            last_seen_ns=tb.at_ns if victim is None else (victim.released_ns or window.until_ns),
            summary=summary,
            evidence=tuple(evidence),
            advice=ADVICE,
        )


_WHAT = {"callback": "a BLS done-callback", "task": "an asyncio task", "thread": "a thread it ran"}


def _repeated(finding: Finding, same: list[Traceback]) -> Finding:
    """An unattributed traceback printed again and again (a callback that raises on every
    call) is one finding with its count and its last time, not one per print: a log with
    the same exception 3,000 times gave 3,000 findings that share one ``Finding.key``.
    ``same``: the finding's traceback and its later prints (filled after the finding)."""
    if len(same) < 2:
        return finding
    last = same[-1]
    return replace(
        finding,
        last_seen_ns=last.at_ns,
        summary=f"{finding.summary} The same exception was printed {len(same)} times, the "
        f"last at {clock(last.at_ns)}.",
        evidence=(
            *finding.evidence,
            Evidence("log", last.at_ns, log_ref(last.offset), "\n".join(last.lines)),
        ),
    )


_CALLBACK_GAP_NS = 500_000_000
"""A done-callback runs within milliseconds of its BLS child's response: half a second is
ample on a loaded 2-core machine and far shorter than any hang."""


_TIE_NS = 2_000_000
"""Releases this close together are one moment on a busy machine: no order between them."""


def _victims(
    blocks: list[Traceback],
    reqs: Requests,
    lookback_ns: int,
    tied: dict[int, list[str]] | None = None,
) -> list[Lifecycle | None]:
    """For each traceback, the request of its model that it broke, or None when not unique.

    A done-callback runs when a BLS child's response arrives, so the request it broke had a
    child released within ``_CALLBACK_GAP_NS`` before the traceback and then answered no
    output; among several such, the one whose child was released last (a request hung on
    another child, whose children finished seconds earlier, is not a candidate). A
    swallowed task is reported when it is collected, as its request answers an error: the
    first request released with no output within the gap after it (or, on a loaded machine,
    just before it: see ``_task_lag``). Without either, the only
    request of the model that executed around the traceback with no
    response output (an error response, or none yet) is taken. A sweep over both in time order
    keeps the cost linear in the log.
    """
    child_releases: dict[str, list[int]] = {}
    for c in reqs.lifecycles:
        if c.released_ns is not None and "." in c.request_id:
            parent = reqs.parent_id(c.request_id)
            if parent is not None:
                child_releases.setdefault(parent, []).append(c.released_ns)
    starts = sorted(
        (c for c in reqs.lifecycles if c.executing_ns is not None),
        key=lambda c: c.executing_ns or 0,
    )
    order = sorted(range(len(blocks)), key=lambda i: blocks[i].at_ns)
    active: dict[str, dict[int, Lifecycle]] = {}
    used: set[int] = set()
    out: list[Lifecycle | None] = [None] * len(blocks)
    i = 0
    for b in order:
        tb = blocks[b]
        while i < len(starts) and (starts[i].executing_ns or 0) <= tb.at_ns:
            active.setdefault(starts[i].model, {})[id(starts[i])] = starts[i]
            i += 1
        pool = active.get(tb.model, {})
        for key, c in list(pool.items()):
            if c.released_ns is not None and c.released_ns < tb.at_ns - lookback_ns:
                del pool[key]  # finished long before: never a candidate again
        candidates = [c for key, c in pool.items() if key not in used]
        # When each candidate's tell-tale happened: for a done-callback, its BLS child's
        # response (just before the traceback); for a swallowed task, the request's own error
        # answer (asyncio reports the task when it is collected, as the request ends).
        marks: dict[int, int] = {}
        for c in candidates:
            if tb.kind == "task":
                if not c.outputs and c.released_ns is not None:
                    lag = _task_lag(tb.at_ns, c.released_ns)
                    if lag is not None:
                        marks[id(c)] = -lag
                continue
            if c.released_ns is not None and c.released_ns < tb.at_ns:
                continue  # answered before the callback ran: not the request it broke
            near = [
                t
                for t in child_releases.get(c.request_id, ())
                if tb.at_ns - _CALLBACK_GAP_NS <= t <= tb.at_ns
            ]
            if near:
                marks[id(c)] = max(near)
        if tb.kind == "task" and marks:
            # Outputs are joined to releases by order; two releases in the same instant may
            # have swapped theirs, so a neighbour of a silent release is a suspect too.
            silent = [c.released_ns or 0 for c in candidates if id(c) in marks]
            for c in candidates:
                r = c.released_ns
                if (
                    id(c) not in marks
                    and r is not None
                    and (lag := _task_lag(tb.at_ns, r)) is not None
                    and any(abs(r - t) < _TIE_NS for t in silent)
                ):
                    marks[id(c)] = -lag
        victim: Lifecycle | None = None
        # A broken request answers without outputs (or not at all); its busy neighbours,
        # whose children happened to answer in the same half second, answer with outputs.
        broken = [c for c in candidates if id(c) in marks and not c.outputs]
        if tb.kind == "callback" and (waiting := _still_waiting(tb, candidates, marks)):
            victim = waiting
        elif len(broken) == 1 and (tb.kind == "callback" or len(marks) == 1):
            victim = broken[0]
        elif marks:
            best = max(marks.values())
            winners = [c for c in candidates if best - marks.get(id(c), best - _TIE_NS) < _TIE_NS]
            victim = winners[0] if len(winners) == 1 else None
            if victim is None and tied is not None:
                tied[b] = sorted(c.request_id for c in winners)
        else:
            quiet = [c for c in candidates if not c.outputs]
            victim = quiet[0] if len(quiet) == 1 else None
        if victim is not None:
            used.add(id(victim))
            out[b] = victim
    return out


def _task_lag(tb_ns: int, released_ns: int) -> int | None:
    """How far a release is from a swallowed task's traceback, releases after it first; None
    beyond the gap. The stub's text carries no time of its own (it takes the time of the
    Triton line before it) and reaches the log through another pipe, so on a loaded machine
    the request's release can be written before the traceback that explains it."""
    if tb_ns <= released_ns <= tb_ns + _CALLBACK_GAP_NS:
        return released_ns - tb_ns
    if tb_ns - _CALLBACK_GAP_NS <= released_ns < tb_ns:
        return _CALLBACK_GAP_NS + tb_ns - released_ns
    return None


def _still_waiting(
    tb: Traceback, candidates: list[Lifecycle], marks: dict[int, int]
) -> Lifecycle | None:
    """The one request with a child answered just before the traceback that then went on
    waiting (released more than the gap later, or not at all): a broken callback leaves its
    request waiting for a result that never comes, while busy neighbours — whose outputs the
    order-based join may have mixed up — answer at once."""
    late = [
        c
        for c in candidates
        if id(c) in marks and (c.released_ns is None or c.released_ns > tb.at_ns + _CALLBACK_GAP_NS)
    ]
    return late[0] if len(late) == 1 else None


def _victim_evidence(c: Lifecycle) -> Evidence:
    if c.released_ns is None:
        detail = f"[request id: {c.request_id}] EXECUTING since {c.executing_ns}, not released"
        return Evidence("log", c.executing_ns or 0, c.request_id, detail)
    detail = (
        f"[request id: {c.request_id}] Setting state from EXECUTING to RELEASED "
        f"(model {c.model}, no 'add response output' line: an error response)"
    )
    ref = log_ref(c.released_offset) if c.released_offset is not None else c.request_id
    return Evidence("log", c.released_ns, ref, detail)


def held_batch(window: Window, tb: Traceback) -> Execution | None:
    """The batch of the traceback's own model that its callback broke, when one only of
    them was running then and went on waiting well past it (xl_callback_error: the gather's
    done-callback raised and xl_gateway_0_1's batch waited to the end of the window)."""
    return _held(window).get((tb.model, tb.at_ns))


@per_window
def _held(window: Window) -> dict[tuple[str, int], Execution | None]:
    """:func:`held_batch` of every traceback of the window, in one sweep per model: the
    batches running at each traceback and ending more than a callback's gap after it. A
    callback that raised on every request printed 17,000 tracebacks in a 1M-line log, and
    a scan of the model's batches for each took 17 s."""
    wanted: dict[str, list[int]] = {}
    for tb in tracebacks(window):
        if tb.model:
            wanted.setdefault(tb.model, []).append(tb.at_ns)
    long: dict[str, list[Execution]] = {}
    for e in instances_of(window).executions:
        if e.model in wanted and (e.end_ns is None or e.end_ns - e.start_ns > _CALLBACK_GAP_NS):
            long.setdefault(e.model, []).append(e)
    out: dict[tuple[str, int], Execution | None] = {}
    for model, times in wanted.items():
        batches = sorted(long.get(model, ()), key=lambda e: e.start_ns)
        running: list[tuple[float, int, Execution]] = []  # (end, tie-breaker, batch)
        i = 0
        for at in sorted(set(times)):
            while i < len(batches) and batches[i].start_ns <= at:
                e = batches[i]
                heapq.heappush(running, (math.inf if e.end_ns is None else e.end_ns, i, e))
                i += 1
            while running and running[0][0] <= at + _CALLBACK_GAP_NS:
                heapq.heappop(running)  # ended too soon: it never qualifies again
            out[(model, at)] = running[0][2] if len(running) == 1 else None
    return out


def _waiting_batch(window: Window, tb: Traceback) -> Execution | None:
    """The batch whose done-callback raised, when no traceback frame names its model: the
    only one open when a child batch of a model it calls was released just before the
    traceback, that then went on waiting (see the module docstring)."""
    inst = instances_of(window)
    released = [
        e
        for e in inst.executions
        if e.end_ns is not None and tb.at_ns - _CALLBACK_GAP_NS <= e.end_ns <= tb.at_ns
    ]
    if not released:
        return None
    last = max(e.end_ns or 0 for e in released)  # the response that ran the callback
    children = {e.model for e in released if last - (e.end_ns or 0) < _TIE_NS}
    calls = callees(inst)
    waiting = [
        e
        for e in inst.executions
        if e.start_ns <= tb.at_ns
        and (e.end_ns is None or e.end_ns > tb.at_ns + _CALLBACK_GAP_NS)
        and e.model not in children
        and (e.model not in calls or calls[e.model] & children)
    ]
    return waiting[0] if len(waiting) == 1 else None
