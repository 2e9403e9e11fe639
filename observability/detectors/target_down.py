"""Target down: Triton's endpoints stopped answering the collector.

Why: when Triton is gone (crashed, killed by the OOM killer, restarting, network cut) every
other detector goes quiet — no log lines, no metrics — and silence looks like health. The
collector records each scrape attempt (``ScrapeStatus``: up or down, and the error), so a run
of consecutive failed scrapes is the one signal that says "we are blind, and why".

Rule: a target (``metrics <url>`` or ``stats <url>``) whose last ``min_consecutive`` or more
scrapes failed, spanning at least ``min_down_s``, is down: a critical finding quoting the
errors. When it answers again the outage is over: the finding becomes ``info`` (what happened,
for the record) and no longer alerts.

One finding for Triton as a whole, since it is the server, not a model, that is unreachable:
``model`` is ``""`` (the JSON form needs a string; ``""`` means "no model, the server"), and
the evidence names each target that failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["Outage", "TargetDown", "outages"]


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
        if not found:
            return []
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
                f"({', '.join(o.target for o in shown)})."
            )
        evidence = tuple(
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
        return [
            Finding(
                kind=self.kind,
                severity=Severity.CRITICAL if down else Severity.INFO,
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
