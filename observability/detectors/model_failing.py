"""model_failing: every request to a model fails because its own ``execute`` raises.

Why a kind of its own: a model that fails every request after a bad deploy is an outage its
clients see as errors, and the one thing its owner needs is the exception and where it was
raised. ``/metrics`` shows the outage (failures rise, successes stand still) but not its
cause, and the same counters are what a dead stub leaves (``stub_unhealthy``); the python
backend's error line per failed batch tells which (``backend_failures.py``). Before this kind
such a model was reported as a dead stub "with no line written", which sent its owner to dmesg
instead of to the traceback Triton had logged (tests/fixtures/foreign/README.md, Round 7).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from observability.detectors.backend_failures import (
    FAILURES,
    SUCCESSES,
    Failing,
    Raised,
    failing,
    raising,
    short,
)
from observability.detectors.requests import log_ref
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ModelFailing"]

_SUMMARY_CHARS = 300

ADVICE = (
    "The model's own code raises on every request (a bad deploy, a changed input, a missing "
    "dependency): read the exception and the frames above, fix model.py and load the model "
    "again, or roll back to the last version that served. The stub is alive: this is not an "
    "OOM kill. Clients get the exception's text in their error response; alert on the "
    "model's failure rate so the next bad deploy is caught in minutes."
)


@dataclass
class ModelFailing:
    min_failures: float = 5.0
    """Backend failures with no success, from /metrics, that make a failing model."""
    max_evidence: int = 5
    kind: str = "model_failing"

    def detect(self, window: Window) -> list[Finding]:
        runs = raising(window, failing(window, self.min_failures))
        # A caller that only passes a failing child's error up fails because of it: one
        # finding, the child's, naming its callers (one bug paged once, at its own code).
        passed_up = {
            m: child
            for m, (_, lines) in runs.items()
            if (child := _only_child(lines)) is not None and child in runs and child != m
        }
        callers: dict[str, list[Failing]] = {}
        for m, child in passed_up.items():
            callers.setdefault(child, []).append(runs[m][0])
        return [
            self._finding(f, lines, callers.get(m, []))
            for m, (f, lines) in runs.items()
            if m not in passed_up
        ]

    def _finding(self, f: Failing, lines: list[Raised], callers: list[Failing]) -> Finding:
        last = lines[-1]
        kinds = Counter(r.exception or "an error" for r in lines)
        what = last.exception or "an error"
        others = [k for k in kinds if k != what]
        where = f", raised at {last.frames[0]}" if last.frames else ""
        instances = sorted({r.instance for r in lines})
        summary = (
            f"Every request to {f.model} has failed in its backend for "
            f"{(f.last_ns - f.since_ns) / 1e9:.0f} s ({f.failures:g} failures, no success): "
            f"its execute raises {what}: {short(last.message.strip(), _SUMMARY_CHARS)}{where} "
            f"({len(lines)} error line(s) on {', '.join(instances)}"
            + (f"; also {', '.join(others)}" if others else "")
            + "). The stub is alive: Triton logged the exception for each failed batch."
        )
        if callers:
            summary += " Its BLS callers fail with it, passing its error up: " + ", ".join(
                f"{c.model} ({c.failures:g} failures)" for c in callers
            )
            summary += "."
        evidence = [
            Evidence(
                "log",
                r.line.header.at_ns,
                log_ref(r.line.header.offset),
                short(r.line.text.strip(), _SUMMARY_CHARS),
            )
            for r in [lines[0], *lines[1:][-(self.max_evidence - 2) :]]
        ]
        evidence.append(
            Evidence(
                "metrics",
                f.last_ns,
                f'{FAILURES}{{model="{f.model}",reason="BACKEND"}} @ {f.target}',
                f"rose by {f.failures:g} while {SUCCESSES} stayed at {f.successes:g}",
            )
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=f.model,
            instance=instances[0] if len(instances) == 1 else None,
            first_seen_ns=f.since_ns,
            last_seen_ns=f.last_ns,
            summary=summary,
            evidence=tuple(evidence),
            advice=ADVICE,
        )


def _only_child(lines: list[Raised]) -> str | None:
    """The one child whose error every line passes up, else ``None``."""
    children = {r.child for r in lines}
    return children.pop() if len(children) == 1 and "" not in children else None
