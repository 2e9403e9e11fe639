"""Stream stalled: a decoupled (streaming) request whose responses stopped before the final one.

Why a kind of its own: the LLM token stream that freezes half-way is not a hung request to
Triton — the request was released when ``execute`` returned, its responses come later from the
response sender, and nothing in the state machine, the metrics or the trace files says that one
stopped coming (a trace entry is only written at the final response). The client waits with a
half-written answer; no error is ever logged.

Two witnesses, the exact one first:

1. The in-model library (``bls.response_sender``, ``observability/bls/streams.py``) tracks every
   stream and reports one that sent nothing for its stall deadline *while it is stalled*: a
   ``STALLED stream`` line on the stub's stderr (Triton's log), a ``bls.stream.stalled`` marker
   span, the ``stream <model>`` span when the stream ends (``triton.stream.stalls``), and the
   gauge ``triton_obs_bls_streams_stalled{model,instance}``. It works for gRPC and HTTP
   (``generate_stream``) clients alike and names the request where it has an id.
2. Without the library, the verbose log's gRPC stream lines (``streams.py``): a stream read from
   a client, its responses counted, its final flag. A stream open with no response for longer
   than its model's stall deadline is stalled. HTTP streams leave no end in the log: only the
   library sees them.

The stall deadline of a model is learned like the hang deadline (``deadlines.py``): a multiple
of the p99 of its streams' gaps (time to the first response, then between responses), never
below ``floor_s`` nor above ``deadline_s``, with per-model overrides. A stream still stalled at
the window's end is critical; one that stalled and then resumed or finished is a warning (its
client saw the freeze). The library's witness wins for a model it reports on.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from observability import events as ev
from observability.detectors.callback_error import tracebacks
from observability.detectors.crashes import crashes
from observability.detectors.deadlines import DeadlinePolicy, p99
from observability.detectors.instances import Execution, instances_of
from observability.detectors.origins import CLIENT, STEP
from observability.detectors.requests import log_ref
from observability.detectors.streams import LogStream, decoupled_models, window_streams
from observability.detectors.target_down import gone_ns
from observability.detectors.waits import callees, origins_of
from observability.detectors.window import Window, per_window
from observability.findings import Evidence, Finding, Severity

__all__ = ["MARKER", "STALLED_LINE", "StreamStalled"]

MARKER = "bls.stream.stalled"
STALLED_LINE = re.compile(
    r"triton-obs bls: STALLED stream model=(?P<model>\S+) instance=(?P<instance>\S*)"
    r" request_id='(?P<rid>[^']*)' responses=(?P<responses>\d+) idle=(?P<idle>[\d.]+)s"
    r" stall=(?P<stall>[\d.]+)s age=(?P<age>[\d.]+)s(?: trace_id=(?P<trace>[0-9a-f]+))?"
)
STALLED_GAUGE = "triton_obs_bls_streams_stalled"

ADVICE = (
    "A decoupled model stopped sending responses on a stream without the final flag: its "
    "client waits on a half-written answer. Look at what the model's stream thread waits on "
    "(py-spy dump --pid <stub pid>): a generation step that blocks, a lock, a queue nobody "
    "fills, an exception swallowed in the thread before the final send. Always send "
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL in a finally block, check "
    "response_sender.is_cancelled() between tokens, and give clients a stream deadline."
)


_GAUGE_LAG_NS = 3_000_000_000
"""How long after a report the library's stalled gauge may still read its old value."""


@dataclass
class _Reported:
    """One stream the library reported stalled."""

    model: str
    instance: str
    request_id: str
    key: str
    first_ns: int
    last_ns: int
    idle_s: float
    responses: int
    trace_id: str = ""
    ended_ns: int | None = None
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class StreamStalled:
    """Streams stalled now (critical) or stalled and resumed (warning), per model."""

    kind: str = "stream_stalled"
    deadline_s: float = 10.0
    """The ceiling of every model's stall deadline."""
    floor_s: float = 2.0
    multiple: float = 10.0
    deadlines: Mapping[str, float] = field(default_factory=dict)
    max_named: int = 5

    def detect(self, window: Window) -> list[Finding]:
        reported = self._library(window)
        gauges = _gauge(window)
        stalled_gauge = {m for m, g in gauges.items() if g[0] > 0}
        out: list[Finding] = []
        for model in sorted({r.model for r in reported.values()} | stalled_gauge):
            mine = [r for r in reported.values() if r.model == model]
            out.append(self._library_finding(window, model, mine, gauges.get(model)))
        covered = {f.model for f in out}
        streams = window_streams(window)
        policy = DeadlinePolicy(
            self.deadline_s, self.floor_s, self.multiple, overrides=self.deadlines
        )
        streams = _recharged(window, streams)
        deaths = _deaths(window) if streams else []
        for model in sorted({s.model for s in streams} - covered):
            finding = self._log_finding(
                window, model, [s for s in streams if s.model == model], policy, deaths
            )
            if finding is not None:
                out.append(finding)
        return out

    # -- the library's witness ---------------------------------------------------------------
    def _library(self, window: Window) -> dict[str, _Reported]:
        streams: dict[str, _Reported] = {}
        for span in window.otlp_spans:
            a = span.attribute
            if span.name == MARKER:
                key = a("triton.stream.span_id") or a("triton.stream.trace_id") or span.trace_id
                seen = _Reported(
                    a("triton.bls.parent.model") or span.service,
                    a("triton.bls.parent.instance"),
                    a("triton.request_id"),
                    key,
                    span.start_ns,
                    span.start_ns,
                    _float(a("triton.stream.idle_s")),
                    int(_float(a("triton.stream.responses"))),
                    a("triton.stream.trace_id") or span.trace_id,
                )
                r = _merge(streams, seen)
                r.evidence.append(
                    Evidence(
                        "otlp",
                        span.start_ns,
                        f"trace {span.trace_id} span {span.span_id} ({MARKER})",
                        f"no response for {a('triton.stream.idle_s')} s after "
                        f"{a('triton.stream.responses')} response(s)",
                    )
                )
        for span in window.otlp_spans:
            if span.name.startswith("stream ") and span.span_id in streams:
                r = streams[span.span_id]
                r.ended_ns = span.end_ns
                r.evidence.append(
                    Evidence(
                        "otlp",
                        span.end_ns,
                        f"trace {span.trace_id} span {span.span_id} ({span.name})",
                        f"stream ended after {(span.end_ns - span.start_ns) / 1e9:.1f} s: "
                        f"{span.attribute('triton.stream.responses')} response(s), final "
                        f"{span.attribute('triton.stream.final')}, longest gap "
                        f"{span.attribute('triton.stream.max_gap_s')} s",
                    )
                )
        for rec in window.logs(ev.StubOutput):
            assert isinstance(rec, ev.StubOutput)
            for m in STALLED_LINE.finditer(rec.text):
                seen = _Reported(
                    m["model"],
                    m["instance"],
                    m["rid"],
                    m["trace"] or f"{m['model']}/{m['rid']}/{rec.offset}",
                    rec.at_ns,
                    rec.at_ns,
                    float(m["idle"]),
                    int(m["responses"]),
                    m["trace"] or "",
                )
                r = _merge(streams, seen)
                r.evidence.append(
                    Evidence("log", rec.at_ns, f"triton.log@{rec.offset}", m.group(0)[:300])
                )
        return streams

    def _library_finding(
        self,
        window: Window,
        model: str,
        streams: list[_Reported],
        gauge: tuple[float, int, str, Evidence] | None,
    ) -> Finding:
        now = window.until_ns
        still = [r for r in streams if r.ended_ns is None]
        # The gauge is the library's word on "now" (a stream that resumed has no span yet),
        # once a scrape well after the last report has read it (the library publishes it on
        # its own tick, after the report); without /metrics, or before such a scrape, a
        # reported stream whose span has not ended is taken as stalled (an older 0 would turn
        # the finding, and its alert's `for`, off for a moment).
        latest = max((r.last_ns for r in streams), default=0)
        fresh = gauge is not None and gauge[1] >= latest + _GAUGE_LAG_NS
        stalled_now = gauge[0] if gauge is not None and fresh else float(len(still))
        named = [r.request_id for r in streams if r.request_id][: self.max_named]
        ids = f" ({', '.join(repr(i) for i in named)})" if named else ""
        if stalled_now > 0:
            longest = max((r.idle_s + (now - r.last_ns) / 1e9 for r in still), default=0.0)
            summary = (
                f"{stalled_now:g} response stream(s) of {model} stalled now{ids}: open without "
                "their final response"
                + (f", the longest quiet for {longest:.1f} s" if longest else "")
            )
            severity = Severity.CRITICAL
        else:
            summary = (
                f"{len(streams)} response stream(s) of {model} stalled and then went on{ids}: "
                "their clients saw the stream freeze"
            )
            severity = Severity.WARNING
        summary += ". Reported by the in-model library (bls.response_sender)."
        evidence = [e for r in streams for e in r.evidence][: 2 * self.max_named]
        if gauge is not None and gauge[0] > 0:
            evidence.append(gauge[3])
        instances = {r.instance for r in streams if r.instance}
        return Finding(
            kind=self.kind,
            severity=severity,
            model=model,
            instance=next(iter(instances)) if len(instances) == 1 else None,
            request_id=named[0] if len(streams) == 1 and named else None,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=min((r.first_ns for r in streams), default=gauge[1] if gauge else now),
            last_seen_ns=now,
            evidence=tuple(evidence),
        )

    # -- the log's witness -------------------------------------------------------------------
    def _log_finding(
        self,
        window: Window,
        model: str,
        streams: list[LogStream],
        policy: DeadlinePolicy,
        deaths: list[int],
    ) -> Finding | None:
        now = window.until_ns
        gaps = [g / 1e9 for s in streams for g in s.gaps_ns]
        deadline = policy.deadline_s(model, gaps)
        # A stream open when the server died was lost with it, not stalled by a model.
        stalled = [
            s
            for s in streams
            if s.open
            and s.quiet_s(now) > deadline
            and not any(s.opened_ns <= d <= now for d in deaths)
        ]
        resumed = [s for s in streams if any(g / 1e9 > deadline for g in s.gaps_ns)]
        if not stalled and not resumed:
            return None
        why = policy.explain(model, gaps, window.whole_seconds)
        why = why.replace("executions", "response gaps")
        if stalled:
            summary = (
                f"{len(stalled)} gRPC response stream(s) of {model} stalled now: "
                + ", ".join(_describe(s, now) for s in stalled[: self.max_named])
                + (
                    f" and {len(stalled) - self.max_named} more"
                    if len(stalled) > self.max_named
                    else ""
                )
                + f"; past the {deadline:.3g} s stall deadline ({why})"
            )
            severity, shown = Severity.CRITICAL, stalled
            moved = next((s.charged_from for s in stalled if s.charged_from), "")
            if moved:
                summary += (
                    f" (the stream lines name no model: the stall was first charged to a "
                    f"{moved} stream, but {moved} sends its streams from inside its execute "
                    f"and released that stream's batch, so it is the other streamed model's)"
                )
            if len(stalled) == 1:
                died = _thread_died(window, stalled[0], deadline)
                summary += died or _next_calls(window, stalled[0], gaps)
        else:
            cancelled = sum(1 for s in resumed if s.cancelled)
            summary = (
                f"{len(resumed)} gRPC response stream(s) of {model} stalled and then went on, "
                f"the longest gap {max(max(s.gaps_ns) for s in resumed) / 1e9:.1f} s (stall "
                f"deadline {deadline:.3g} s: {why})"
                + (f"; {cancelled} of them ended when the client cancelled" if cancelled else "")
            )
            severity, shown = Severity.WARNING, resumed
        summary += (
            ". Read from the verbose log's stream lines, which name no request: a stream is "
            "matched to its responses by their count"
        )
        evidence = []
        for s in shown[: self.max_named]:
            who = f"request id: {s.request_id}" if s.request_id else "no request id"
            evidence.append(
                Evidence("log", s.opened_ns, log_ref(s.offset), f"stream read for {model} ({who})")
            )
            if s.responses:
                evidence.append(
                    Evidence(
                        "log",
                        s.last_ns,
                        log_ref(s.last_offset),
                        f"response {s.responses} of it, the last one; "
                        + ("no final response since" if s.open else "then the final one"),
                    )
                )
        named = [s.request_id for s in shown if s.request_id]
        return Finding(
            kind=self.kind,
            severity=severity,
            model=model,
            request_id=named[0] if len(shown) == 1 and named else None,
            summary=summary + ".",
            advice=ADVICE,
            first_seen_ns=min(now, min(s.last_ns for s in shown) + int(deadline * 1e9)),
            last_seen_ns=now,
            evidence=tuple(evidence),
        )


def _describe(s: LogStream, now: int) -> str:
    who = f"'{s.request_id}'" if s.request_id else "(no request id)"
    return (
        f"{who} quiet for {s.quiet_s(now):.1f} s after {s.responses} response(s), open "
        f"{(now - s.opened_ns) / 1e9:.1f} s"
    )


_MAX_CALLS_NAMED = 3
_CALL_HORIZON_S = (0.01, 1.0)
"""Bounds of how long after a stream's last response its next BLS call is looked for: the
p99 of its model's response gaps, within these."""


def _next_calls(window: Window, stream: LogStream, gaps_s: list[float]) -> str:
    """The BLS calls admitted right after the stalled stream's last response, as a clause of
    the finding. A decoupled model's ``execute`` returns at once (its request is released in a
    millisecond), so no open batch and no open call of it is left to name: what the log still
    shows is the stream's next step, a call to another model admitted within the usual gap
    after the last response (sum_lm_hang: the router's call to the language model that sent
    one token of three, 1.1 ms after the router's last response). The lines name no caller:
    with several streams open, the calls of another may fall in the same interval, so every
    call there is listed. A whole-second log lists the calls of that second."""
    held = _held_by(window, stream) or _ensemble_step(window, stream)
    if held:
        return held
    horizon_s = min(max(p99(gaps_s) if gaps_s else 0.0, _CALL_HORIZON_S[0]), _CALL_HORIZON_S[1])
    since = stream.last_ns
    until = since + int(horizon_s * 1e9)
    if window.whole_seconds:
        since = since - since % 1_000_000_000
        until = since + 999_999_999
    origin = origins_of(window)
    calls = [
        r
        for r in window.logs(ev.RequestPrepared)
        if since <= r.header.at_ns <= until
        and r.header.offset > stream.last_offset
        and r.model != stream.model
        and origin.get((r.header.at_ns, r.header.offset), CLIENT) != CLIENT
    ]
    calls = _not_anothers(window, stream.model, calls)
    if not calls:
        return ""
    if window.whole_seconds:
        counts: dict[str, int] = {}
        for r in calls:
            counts[r.model] = counts.get(r.model, 0) + 1
        named = ", ".join(f"{m} ({n})" for m, n in list(counts.items())[:_MAX_CALLS_NAMED])
        return (
            f"; BLS calls admitted in the second of its last activity (the log's times are "
            f"whole seconds, so they may be another stream's): {named}"
        )
    shown = ", ".join(
        f"{r.model} {(r.header.at_ns - stream.last_ns) / 1e6:.1f} ms"
        for r in calls[:_MAX_CALLS_NAMED]
    )
    last = "its last response" if stream.responses else "it was read"
    waiting = _still_executing(window, calls)
    # A call still executing is what the stream waits on, whichever came first (bg_child_hang:
    # the third call of the gap hung, the first two were answered).
    first, which = (waiting, "a BLS call still executing") if waiting else (calls[0], "the first")
    after_ms = (first.header.at_ns - stream.last_ns) / 1e6
    if waiting is None:
        which += " BLS call"
    return (
        f"; {which} admitted after {last} went to {first.model}, "
        f"{after_ms:.1f} ms after, {_fate(window, first)} (calls within its usual gap of "
        f"{horizon_s * 1e3:.0f} ms: {shown} after; with other streams open, one may be "
        "theirs)"
    )


def _thread_died(window: Window, stream: LogStream, deadline_s: float) -> str:
    """A clause naming the exception of a thread of the stream's model that died after its
    last response and within the deadline (bg_thread_dies: a decoupled model's sender thread
    raised after two words, and the stream never got its final response)."""
    horizon = stream.last_ns + int(deadline_s * 1e9)
    died = next(
        (
            tb
            for tb in tracebacks(window)
            if tb.kind == "thread"
            and tb.model == stream.model
            and tb.offset > stream.last_offset
            and tb.at_ns <= horizon
        ),
        None,
    )
    if died is None:
        return ""
    after_ms = max(died.at_ns - stream.last_ns, 0) / 1e6
    return (
        f"; a thread of {stream.model} died {after_ms:.0f} ms after the stream's last activity, "
        f"raising {died.exception or 'an exception'} (printed by Python into Triton's log): a "
        "stream whose sending thread dies never gets its final response"
    )


def _still_executing(window: Window, calls: list[ev.RequestPrepared]) -> ev.RequestPrepared | None:
    """The first of ``calls`` whose batch has not been released by the window's end."""
    batch = _batch_of(window)
    return next(
        (
            c
            for c in calls
            if (x := batch.get((c.header.at_ns, c.header.offset))) is not None and x.end_ns is None
        ),
        None,
    )


@per_window
def _batch_of(window: Window) -> dict[tuple[int, int], Execution]:
    """The batch each admitted request ran in, by its ``prepared:`` line (time, offset)."""
    return {
        (r.prepared_ns, r.offset): x for x in instances_of(window).executions for r in x.requests
    }


_SAME_REQUEST_NS = 1_000_000_000
"""A stream's request starts executing within this of its ``READ`` line."""


_IN_EXECUTE = 0.8
"""Share of a model's finished streams whose final response came before their batch's
release: a model that sends its streams from inside ``execute`` (a BLS model forwarding a
decoupled child's responses), not from a thread after it returned."""


def _recharged(window: Window, streams: list[LogStream]) -> list[LogStream]:
    """The streams, with an open one charged to a model that cannot hold it given to the
    other streamed model. ``streams.py`` charges a stall to the oldest stream at its count,
    whatever its model (gen_llm_stall: a gen_bls stream, where gen_ensemble's was stalled).
    A model that sends its streams from inside ``execute`` holds its batch while a stream of
    it is open: when the batch begun right after the stream's read has been released, the
    stream ended, and with one other streamed model in the window the stall is that one's."""
    models = {s.model for s in streams if s.model}
    if len(models) != 2:
        return streams

    def batch_of(s: LogStream) -> Execution | None:
        return next(iter(_batches_after_read(window, s)), None)

    inside = {
        m
        for m in models
        if _share_inside([s for s in streams if s.model == m and not s.open], batch_of)
        >= _IN_EXECUTE
    }
    out = []
    for s in streams:
        batch = batch_of(s) if s.open and s.model in inside else None
        if batch is not None and batch.end_ns is not None:
            (other,) = models - {s.model}
            s = replace(s, model=other, charged_from=s.model)
        out.append(s)
    return out


def _batches_after_read(window: Window, stream: LogStream) -> list[Execution]:
    """The batches of the stream's model begun within ``_SAME_REQUEST_NS`` after its read,
    oldest first: the first is its request's, when its model executes it."""
    starts, batches = _batches_by_start(window).get(stream.model, ([], []))
    lo = bisect_left(starts, stream.opened_ns)
    hi = bisect_right(starts, stream.opened_ns + _SAME_REQUEST_NS)
    return batches[lo:hi]


@per_window
def _batches_by_start(window: Window) -> dict[str, tuple[list[int], list[Execution]]]:
    """Model -> its batches' starts and the batches, in start order, read once per window."""
    by_model: dict[str, list[Execution]] = {}
    for e in instances_of(window).executions:
        by_model.setdefault(e.model, []).append(e)
    out = {}
    for model, batches in by_model.items():
        batches.sort(key=lambda e: e.start_ns)
        out[model] = ([e.start_ns for e in batches], batches)
    return out


def _share_inside(
    done: list[LogStream], batch_of: Callable[[LogStream], Execution | None]
) -> float:
    """Of finished streams, the share whose final response preceded their batch's release."""
    if len(done) < 5:
        return 0.0
    held = 0
    for s in done:
        batch = batch_of(s)
        held += (
            batch is not None
            and batch.end_ns is not None
            and s.final_ns is not None
            and s.final_ns <= batch.end_ns
        )
    return held / len(done)


def _ensemble_step(window: Window, stream: LogStream) -> str:
    """When the stalled stream is an ensemble's (a model no instance executes), its responses
    are its decoupled step's: the decoupled models admitted as ensemble steps in the window
    (gen_llm_stall: gen_llm, between gen_preprocessing and gen_postprocessing)."""
    if stream.model not in instances_of(window).instanceless:
        return ""
    decoupled = decoupled_models(window)
    origin = origins_of(window)
    steps = sorted(
        {
            r.model
            for r in window.logs(ev.RequestPrepared)
            if decoupled.get(r.model)
            and r.model != stream.model
            and origin.get((r.header.at_ns, r.header.offset)) == STEP
        }
    )
    if not steps:
        return ""
    named = ", ".join(steps)
    return (
        f"; {stream.model} is an ensemble: its stream carries the responses of its decoupled "
        f"step {named} (decoupled per its config), so {named} stopped sending them without "
        "the final flag, or a step after it stopped passing them on"
    )


def _held_by(window: Window, stream: LogStream) -> str:
    """When the stalled stream is sent from inside its model's ``execute`` (a BLS model that
    reads a decoupled child and forwards each response, as TensorRT-LLM's BLS does), its
    batch is still executing, and the stream's source is the decoupled call that batch made
    before its last response (gen_llm_stall_bls: gen_bls's call to gen_llm, released as
    soon as gen_llm's execute returned). A clause naming both, or ``""``."""
    running = {id(e) for e in instances_of(window).open.values()}
    batches = [e for e in _batches_after_read(window, stream) if id(e) in running]
    if len(batches) != 1:
        return ""
    batch = batches[0]
    decoupled = decoupled_models(window)
    made = [
        r
        for x in instances_of(window).executions
        if decoupled.get(x.model) and x.model != stream.model
        for r in x.requests
        if batch.start_ns <= r.prepared_ns <= stream.last_ns
    ]
    if not made:
        return ""
    call = max(made, key=lambda r: r.prepared_ns)
    return (
        f"; its batch on {batch.instance} has been executing since it was read "
        f"({(window.until_ns - batch.start_ns) / 1e9:.1f} s: the stream is sent from inside "
        f"its execute), and the last decoupled call it made before its last response went to "
        f"{call.model}: released when {call.model}'s execute returned, that call's responses "
        f"feed the stream, so {call.model} stopped sending them (no final flag), or the "
        "stream's own code stopped reading"
    )


def _not_anothers(
    window: Window, model: str, calls: list[ev.RequestPrepared]
) -> list[ev.RequestPrepared]:
    """The calls no running batch of another model, one seen calling that callee, explains:
    those are that model's (gs_reply_stall: gs_reply makes no BLS call, and the gs_toxicity
    calls right after its last response were gs_moderate's, whose batches call it)."""
    inst = instances_of(window)
    learned = callees(inst)
    out = []
    for r in calls:
        at = r.header.at_ns
        if not any(
            e.model != model
            and r.model in learned.get(e.model, ())
            and e.start_ns < at
            and (e.end_ns is None or e.end_ns >= at)
            for e in inst.executions
        ):
            out.append(r)
    return out


def _fate(window: Window, call: ev.RequestPrepared) -> str:
    """What became of a call: still executing (the stream waits on it), or released, when the
    stream's own code may have stopped after it as well as a decoupled callee's sends."""
    x = _batch_of(window).get((call.header.at_ns, call.header.offset))
    if x is None:
        return "and was not seen executing"
    if x.end_ns is None:
        return f"and is still executing on {x.instance}: the stream waits on it"
    released = f"and was released {(x.end_ns - call.header.at_ns) / 1e6:.1f} ms later"
    decoupled = decoupled_models(window).get(x.model)
    if decoupled is None:  # no config line in the window: either may be the cause
        return (
            f"{released}; nothing of the stream followed: its own code stopped after that "
            f"call (an exception swallowed in the thread that sends, a wait on something "
            f"else), or {x.model}, if decoupled, stopped sending without its final flag"
        )
    if decoupled:
        return (
            f"{released}, as a decoupled model's request is when its execute returns; "
            f"nothing of the stream followed: {x.model}'s responses may have stopped without "
            f"their final flag while the stream waits on them, or the stream's own code "
            f"stopped after the call"
        )
    return (
        f"{released}, answered ({x.model} is not decoupled); nothing of the stream followed: "
        "its own code stopped after that call (an exception swallowed in the thread that "
        "sends, a wait on something else)"
    )


def _gauge(window: Window) -> dict[str, tuple[float, int, str, Evidence]]:
    """Per model, the library's stalled-streams gauge at the last scrape (summed over
    instances): ``(value, at_ns, target, evidence)``; a model the page does not carry it for
    is absent (the library is not in that model, or /metrics is not read)."""
    last: dict[tuple[str, str], tuple[int, dict[str, float]]] = {}
    for target, at_ns, sample in window.samples(STALLED_GAUGE):
        model = sample.label("model")
        seen = last.get((target, model))
        if seen is None or at_ns > seen[0]:
            last[(target, model)] = (at_ns, {})
            seen = last[(target, model)]
        if at_ns == seen[0]:
            seen[1][sample.label("model_instance") or sample.label("instance")] = sample.value
    out: dict[str, tuple[float, int, str, Evidence]] = {}
    for (target, model), (at_ns, per_instance) in last.items():
        value = sum(per_instance.values())
        ref = f'{STALLED_GAUGE}{{model="{model}"}} @ {target}'
        text = f"{value:g} stalled at the last scrape"
        out[model] = (value, at_ns, target, Evidence("metrics", at_ns, ref, text))
    return out


def _merge(streams: dict[str, _Reported], seen: _Reported) -> _Reported:
    """The stream already known (by its key, or by its trace id: a stderr line names no
    span) updated with this sighting."""
    known = streams.get(seen.key)
    if known is None and seen.trace_id.strip("0"):
        known = next(
            (r for r in streams.values() if (r.model, r.trace_id) == (seen.model, seen.trace_id)),
            None,
        )
    if known is None:
        streams[seen.key] = seen
        return seen
    known.first_ns = min(known.first_ns, seen.first_ns)
    known.last_ns = max(known.last_ns, seen.last_ns)
    known.idle_s = max(known.idle_s, seen.idle_s)
    known.responses = max(known.responses, seen.responses)
    known.instance = known.instance or seen.instance
    known.request_id = known.request_id or seen.request_id
    return known


def _float(text: str | None) -> float:
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


def _deaths(window: Window) -> list[int]:
    """When the server died in the window: each crash (``crashes.py``) and a silent kill
    (``target_down.gone_ns``). sum_router_child_trace_crash: three streams read 0.9 s
    before a SIGSEGV were reported stalled for 29.8 s, to the window's end."""
    out = [c.at_ns for c in crashes(window.logs(ev.StubOutput))]
    gone = gone_ns(window)
    return [*out, gone] if gone is not None else out
