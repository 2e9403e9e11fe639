"""Target down: Triton's endpoints stopped answering the collector.

Why: when Triton is gone (crashed, killed by the OOM killer, restarting, network cut) every
other detector goes quiet — no log lines, no metrics — and silence looks like health. The
collector records each scrape attempt (``ScrapeStatus``: up or down, and the error), so a run
of consecutive failed scrapes is the one signal that says "we are blind, and why".

Rule: a target (``metrics <url>`` or ``stats <url>``) whose last ``min_consecutive`` or more
scrapes failed, spanning at least ``min_down_s``, is down: a critical finding quoting the
errors. When it answers again the outage is over: the finding becomes a ``warning`` (what
happened: requests in flight were lost, and a restart, told by counters starting again from
zero, lost every one) and no longer alerts (the alert reads Prometheus' own ``up``).

One finding for Triton as a whole, since it is the server, not a model, that is unreachable:
``model`` is ``""`` (the JSON form needs a string; ``""`` means "no model, the server"), and
the evidence names each target that failed.

A crash says why (``crashes.py``): the fatal signal and the backtrace Triton printed lead the
finding. Without scrapes (a log alone), a crash after which the log stops is the finding on
its own; one after which the log goes on was followed by a restart (``info``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.backend_failures import per_scrape
from observability.detectors.crashes import Crash, crashes
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["Outage", "TargetDown", "gone_ns", "outages", "refused"]


@dataclass(frozen=True)
class Outage:
    """A run of consecutive failed scrapes of one target."""

    target: str
    first_ns: int
    last_ns: int
    failures: int
    errors: tuple[str, ...]
    """Distinct error messages, in order of first appearance (at most 3)."""
    recovered_ns: int | None
    """The first successful scrape after the run; None while still down."""


_REFUSED = re.compile(r"\bHTTP Error (401|403|404)\b")


def refused(scrape: ev.ScrapeStatus) -> bool:
    """A scrape Triton answered with a refusal, not one that did not reach it: PyTriton's
    default security guards /v2/models/stats with a token, and the capture got 403 on each
    (pt_healthy_guarded)."""
    return not scrape.up and _REFUSED.search(scrape.error) is not None


def outages(scrapes: Iterable[ev.ScrapeStatus]) -> list[Outage]:
    """Runs of consecutive failures per target, in time order (linear in the scrapes)."""
    runs: dict[str, list[ev.ScrapeStatus]] = {}
    out: list[Outage] = []

    def close(target: str, recovered: int | None) -> None:
        failed = runs.pop(target)
        errors: list[str] = []
        for s in failed:
            if s.error and s.error not in errors and len(errors) < 3:
                errors.append(s.error)
        out.append(
            Outage(target, failed[0].at_ns, failed[-1].at_ns, len(failed), tuple(errors), recovered)
        )

    for scrape in sorted(scrapes, key=lambda s: s.at_ns):
        if refused(scrape):
            continue  # the server answered: it refuses us (a token it wants), it is not down
        if not scrape.up:
            runs.setdefault(scrape.target, []).append(scrape)
        elif scrape.target in runs:
            close(scrape.target, scrape.at_ns)
    for target in list(runs):
        close(target, None)
    return sorted(out, key=lambda o: o.first_ns)


@dataclass
class TargetDown:
    """``min_consecutive`` failed scrapes over ``min_down_s``: Triton is unreachable."""

    kind: str = "target_down"
    min_consecutive: int = 3
    min_down_s: float = 1.0

    def detect(self, window: Window) -> list[Finding]:
        found = [
            o
            for o in outages(window.scrapes)
            if o.failures >= self.min_consecutive
            and (o.last_ns - o.first_ns) / 1e9 >= self.min_down_s
        ]
        crashed = crashes(window.logs(ev.StubOutput))
        if not found:
            return [self._crash_finding(window, crashed[-1])] if crashed else []
        # The finding is about now: the targets still down, else the latest outage.
        down = [o for o in found if o.recovered_ns is None]
        shown = down or [max(found, key=lambda o: o.first_ns)]
        first = min(o.first_ns for o in shown)
        last = max(o.last_ns if o.recovered_ns is None else o.recovered_ns for o in shown)
        since = (last - first) / 1e9
        if down:
            summary = (
                f"Triton has been unreachable for {since:.1f} s: "
                f"{sum(o.failures for o in down)} consecutive scrapes of "
                f"{', '.join(o.target for o in down)} failed "
                f"({(down[0].errors or ('no error text',))[0]})."
            )
        else:
            summary = (
                f"Triton was unreachable for {since:.1f} s and answers again "
                f"({', '.join(o.target for o in shown)})"
                + (
                    ": it restarted (its counters started again from zero), and every request "
                    "in flight was lost."
                    if _restarted(window, first, last)
                    else "."
                )
            )
        crash = next((c for c in reversed(crashed) if c.at_ns <= last), None)
        if crash is not None:
            summary = f"{_crash_text(crash)} {summary}"
        scraped = tuple(
            Evidence(
                "metrics" if o.target.startswith("metrics") else "stats",
                o.last_ns,
                o.target,
                f"{o.failures} consecutive failed scrapes from the first at "
                f"{(o.first_ns - first) / 1e9:+.1f} s"
                + (
                    f", up again {(o.recovered_ns - o.last_ns) / 1e9:.1f} s after the last"
                    if o.recovered_ns is not None
                    else ", still down"
                )
                + (f"; errors: {' | '.join(o.errors)}" if o.errors else ""),
            )
            for o in shown
        )
        evidence = (_crash_evidence(crash), *scraped) if crash else scraped
        return [
            Finding(
                kind=self.kind,
                severity=Severity.CRITICAL if down else Severity.WARNING,
                model="",
                summary=summary,
                advice=(
                    "Check that tritonserver is running (its exit status, the end of its log, "
                    "the kernel log for the OOM killer) and that its HTTP and metrics ports "
                    "are reachable from the collector (--http-port, --metrics-port, bind "
                    "address, firewall). While it is down no other detector can see anything; "
                    "a restart loses in-flight requests, so also check the clients' errors."
                ),
                first_seen_ns=first,
                last_seen_ns=last,
                evidence=evidence,
            )
        ]

    def _crash_finding(self, window: Window, crash: Crash) -> Finding:
        """A crash seen in the log without scrapes to say whether Triton came back: the log
        going on well after it (a dead server writes nothing) says it was restarted."""
        ends = max(0, (window.last_log_ns or crash.at_ns) - crash.at_ns)
        restarted = ends > 10_000_000_000
        summary = _crash_text(crash) + (
            " Its log goes on after it: the server was restarted, and what was in flight at "
            "the crash was lost."
            if restarted
            else f" Its log ends {ends / 1e9:.1f} s later: the server is gone, and what was in "
            "flight was lost."
        )
        return Finding(
            kind=self.kind,
            severity=Severity.INFO if restarted else Severity.CRITICAL,
            model="",
            summary=summary,
            advice=CRASH_ADVICE,
            first_seen_ns=crash.at_ns,
            last_seen_ns=crash.at_ns + ends,
            evidence=(_crash_evidence(crash),),
        )


CRASH_ADVICE = (
    "tritonserver crashed in native code: keep the backtrace from its log (and a core dump: "
    "ulimit -c unlimited), note what it was doing (the last requests and models before the "
    "signal), and look for the frames in Triton's issues; upgrade, or avoid the code path "
    "(a backend option, tracing, a BLS feature) the backtrace goes through. Run it under a "
    "supervisor that restarts it, and alert on this finding: health checks are blind while "
    "it is down and clients see connection errors."
)


def _crash_text(crash: Crash) -> str:
    through = f", backtrace through {', '.join(crash.frames[:3])}" if crash.frames else ""
    return f"tritonserver crashed: {crash.what} ('Signal ({crash.signal}) received.'{through})."


def _crash_evidence(crash: Crash) -> Evidence:
    return Evidence(
        "log",
        crash.at_ns,
        f"triton.log@{crash.offset}",
        f"Signal ({crash.signal}) received."
        + (f" backtrace: {' <- '.join(crash.frames[:5])}" if crash.frames else ""),
    )


_LOG_SILENT_NS = 2_000_000_000
"""A log whose last line is no later than this after an outage began fell silent with it."""


def gone_ns(window: Window) -> int | None:
    """When the server went away for good, killed without a word (SIGKILL, the OOM killer):
    the time of its last log line, when its scrapes fail from about then to the window's end.
    Its open batches then died with it; they are not hangs (emb_server_killed)."""
    down = [
        o
        for o in outages(window.scrapes)
        if o.recovered_ns is None and o.failures >= TargetDown.min_consecutive
    ]
    if not down:
        return None
    began = min(o.first_ns for o in down)
    last = window.last_log_ns
    if last is None or last > began + _LOG_SILENT_NS:
        return None
    return last


def restarted_ns(window: Window) -> int | None:
    """When the server last went away and came back as a new process (its counters started
    again from zero, :func:`_restarted`): the first failed scrape of that outage. What the old
    process had open died then, unlogged when it was killed (emb_server_restart: kill -9 and
    a start 4 s later); its batches are not hangs, though the new process reloads the same
    models under the same instance names. A model load logged while the scrapes fail tells it
    sooner, and without counters: Triton loads its models before it opens its endpoints, so a
    load it logs while they refuse is a new process starting."""
    loads = [r.header.at_ns for r in window.logs(ev.ModelStateChange) if r.state == "loading"]
    back = [
        o
        for o in outages(window.scrapes)
        if o.failures >= TargetDown.min_consecutive
        and (
            any(o.first_ns < at < (o.recovered_ns or window.until_ns + 1) for at in loads)
            or (o.recovered_ns is not None and _restarted(window, o.first_ns, o.recovered_ns))
        )
    ]
    return max((o.first_ns for o in back), default=None)


_COUNT = "nv_inference_count"


def _restarted(window: Window, down_ns: int, up_ns: int) -> bool:
    """Whether Triton's counters fell across an outage: a new process counts from zero."""
    totals = per_scrape(window, _COUNT)
    before = [v for at, v in sorted(totals.items()) if at <= down_ns]
    after = [v for at, v in sorted(totals.items()) if at >= up_ns]
    return bool(before and after) and after[0] < before[-1]
