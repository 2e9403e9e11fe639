"""Which signals a window holds, and which finding kinds it therefore cannot see.

Why: during an outage on a pipeline whose requests carried no ids, the triage app said, in
green, "No findings: the detectors see nothing wrong" while every instance of a model was
held; on a Triton without ``--log-verbose`` every log-based detector is blind the same way.
"No findings" is only a verdict for the kinds whose signals were there. This module says, for
a window, which of ``catalogue.SIGNALS`` it holds, whether its requests carry ids, and which
kinds (``Pathology.needs``) it cannot see, so ``watch``, ``analyze`` and the app say so
instead of calling the window healthy.

The verbose log is judged by its request and instance lines. A quiet window holds none even
on a verbose server, so they are missing only when something else shows requests were served
(a success counter that moved on /metrics, an inference count that moved in the stats, or a
log with no verbose line at all while metrics show traffic); otherwise the verdict is
``idle``: nothing to tell either way, and no kind is called blind for it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from observability import events as ev
from observability.catalogue import CATALOGUE, SIGNALS
from observability.detectors.target_down import refused
from observability.detectors.window import Window

__all__ = ["PRESENT", "Coverage", "Signal", "coverage"]

PRESENT, PARTLY, MISSING, IDLE = "present", "partly", "missing", "idle"

_VERBOSE = (ev.RequestPrepared, ev.RequestStateChange, ev.InstanceExecuting, ev.InstanceReleased)
_SUCCESS = "nv_inference_request_success"
_LIBRARY_SERIES = (
    "triton_obs_bls_thread_pool_capacity",
    "triton_obs_bls_calls_total",
    "triton_obs_bls_calls",  # before 0.2
)
_LIBRARY_LINE = "triton-obs bls:"
_UNKNOWN_ID = "<id_unknown>"


@dataclass(frozen=True)
class Signal:
    name: str
    """One of ``catalogue.SIGNALS``, or ``request_ids``."""
    state: str
    """``present``, ``partly`` (request ids: some requests), ``missing`` or ``idle``."""
    detail: str


@dataclass(frozen=True)
class Coverage:
    signals: tuple[Signal, ...]
    blind: tuple[str, ...]
    """Finding kinds none of whose needed signal sets is present: the window says nothing
    about them, good or bad."""

    def state(self, name: str) -> str:
        return next((s.state for s in self.signals if s.name == name), MISSING)

    @property
    def lacking(self) -> list[Signal]:
        """Signals missing (or, for request ids, partly there), in ``SIGNALS`` order."""
        return [s for s in self.signals if s.state in (MISSING, PARTLY)]

    def lines(self) -> list[str]:
        """What a reader must know before trusting "no findings", one sentence each."""
        out = [f"{s.detail}." for s in self.lacking]
        if self.blind:
            out.append(f"Cannot be seen in this window: {', '.join(self.blind)}.")
        return out


def coverage(window: Window) -> Coverage:
    """The window's signals and the kinds it is blind to (pure over the window)."""
    logs = window.logs()
    up = _scraped(window)
    traffic = _traffic(window)
    signals = (
        _log(logs, window.log_read),
        _verbose(logs, traffic, window.log_read),
        _metrics(up),
        _stats(window, up),
        _library(window, logs),
        _request_ids(logs),
    )
    present = {s.name for s in signals if s.state in (PRESENT, PARTLY)}
    idle = {s.name for s in signals if s.state == IDLE}
    seen = present | idle  # an idle signal may be there: no kind is called blind for it
    blind = tuple(p.kind for p in CATALOGUE if not any(alt <= seen for alt in p.needs))
    return Coverage(signals, blind)


def _log(logs: list[object], read: bool) -> Signal:
    if logs:
        return Signal("log", PRESENT, f"{len(logs)} log records")
    if read:
        return Signal("log", PRESENT, "the log was read and Triton wrote nothing in the window")
    return Signal("log", MISSING, f"No log was read: {SIGNALS['log']} is missing")


def _verbose(logs: list[object], traffic: bool, read: bool) -> Signal:
    lines = sum(1 for r in logs if isinstance(r, _VERBOSE))
    if lines:
        return Signal("verbose_log", PRESENT, f"{lines} request and instance lines")
    if not logs and not read:
        why = "no log was read"
    elif traffic:
        why = "requests were served but the log has no request or instance line: is Triton "
        why += "started with --log-verbose 1?"
    else:
        return Signal("verbose_log", IDLE, "No request in the window: verbosity unknown")
    return Signal(
        "verbose_log",
        MISSING,
        f"No verbose log ({why}); hangs and deadlocks are seen only from /metrics (a "
        "model that stops completing, model_stalled; one that loses capacity at once with "
        "its queue never empty, hung_request), without the request, instance or call they "
        "are stuck on",
    )


def _scraped(window: Window) -> dict[str, int]:
    """Successful scrapes per kind of target (``metrics``, ``stats``)."""
    out: dict[str, int] = defaultdict(int)
    for s in window.scrapes:
        if s.up:
            out[s.target.split(" ", 1)[0]] += 1
    return out


def _metrics(up: dict[str, int]) -> Signal:
    if up.get("metrics"):
        return Signal("metrics", PRESENT, f"{up['metrics']} scrapes of /metrics")
    return Signal(
        "metrics",
        MISSING,
        "No /metrics scrape succeeded: outages without the verbose log (model_stalled) and "
        "queues behind busy instances cannot be seen",
    )


def _stats(window: Window, up: dict[str, int]) -> Signal:
    if up.get("stats") or window.model_stats:
        return Signal("stats", PRESENT, f"{len(window.model_stats)} model statistics")
    answer = next(
        (s.error for s in window.scrapes if s.target.startswith("stats") and refused(s)), None
    )
    if answer is not None:
        return Signal(
            "stats",
            MISSING,
            f"/v2/models/stats refused every scrape ({answer}): the endpoint wants a token "
            "(PyTriton's default security, or an auth proxy), so a second witness is missing",
        )
    return Signal("stats", MISSING, "No /v2/models/stats snapshot: a second witness is missing")


def _library(window: Window, logs: list[object]) -> Signal:
    if any(window.samples(name) for name in _LIBRARY_SERIES):
        return Signal("library", PRESENT, "the in-model library's series on /metrics")
    if any(s.name.startswith("bls") for s in window.otlp_spans):
        return Signal("library", PRESENT, "the in-model library's spans")
    if any(isinstance(r, ev.StubOutput) and _LIBRARY_LINE in r.text for r in logs):
        return Signal("library", PRESENT, "the in-model library's log lines")
    return Signal(
        "library",
        MISSING,
        "No sign of the in-model library (observability.bls): BLS calls hung inside a model "
        "are seen only as the parent request's hang, HTTP streams not at all",
    )


def _request_ids(logs: list[object]) -> Signal:
    with_id = without = 0
    for r in logs:
        if isinstance(r, ev.RequestPrepared):
            if r.request_id and r.request_id != _UNKNOWN_ID:
                with_id += 1
            else:
                without += 1
    total = with_id + without
    if not total:
        return Signal("request_ids", IDLE, "No prepared request in the window")
    if not without:
        return Signal("request_ids", PRESENT, f"all {total} requests carry an id")
    text = (
        f"{without} of {total} requests carry no request id: findings name their model and "
        "instance, and BLS calls are matched to callers by timing"
    )
    return Signal("request_ids", MISSING if not with_id else PARTLY, text)


def _traffic(window: Window) -> bool:
    """Whether requests completed in the window, by a witness other than the log."""
    seen: dict[tuple[str, str], float] = {}
    for target, _at, sample in window.samples(_SUCCESS):
        key = (target, repr(sample.labels))
        if key in seen and sample.value != seen[key]:
            return True
        seen[key] = sample.value
    counts: dict[str, int] = {}
    for stats in window.model_stats:
        if stats.model in counts and stats.inference_count != counts[stats.model]:
            return True
        counts[stats.model] = stats.inference_count
    return False
