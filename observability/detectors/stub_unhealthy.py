"""stub_unhealthy: a python backend stub process died, failed to start, or was restarted.

Why from the log: when a stub dies, Triton's health endpoints can stay 200 (server#8604) and a
request sent straight to the dead instance just fails with no log text on 2.51; the line
``Stub process '<instance>' is not healthy`` appears when a BLS parent's call reaches it
(``pb_stub.cc``: "Failed to process the request(s) for model '<parent instance>' ..."), and
``Failed to initialize Python stub`` / ``Non-graceful termination detected`` when a stub
cannot start or was killed. One finding per unhealthy instance; the request named is the BLS
parent that was executing on the reporting instance when the line was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.requests import Lifecycle, log_ref, requests_of
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["StubUnhealthyDetector", "model_of_instance"]

_REPORTER = re.compile(r"for model '([^']+)'")
_INSTANCE = re.compile(r"_\d+_\d+$")

ADVICE = (
    "A python stub of this instance died (killed by the OOM killer or a signal, or crashed in "
    "native code): check dmesg and the stub's last output above the line. Requests to that "
    "instance fail until the model is reloaded (POST /v2/repository/models/<model>/load, or "
    "restart the server); health can stay 200 meanwhile (server#8604), so alert on this line "
    "and on the model's failure and error-response rates, not on /v2/health alone. Lower the "
    "stub's memory (shm-default-byte-size, batch sizes) if it was OOM-killed."
)


def model_of_instance(instance: str) -> str:
    """``router_0_7`` -> ``router``: Triton names instances ``<model>_<group>_<index>``."""
    return _INSTANCE.sub("", instance) if _INSTANCE.search(instance) else instance


@dataclass
class StubUnhealthyDetector:
    max_evidence: int = 5
    release_slack_s: float = 0.5
    kind: str = "stub_unhealthy"

    def detect(self, window: Window) -> list[Finding]:
        lines = window.logs(ev.StubHealth)
        if not lines:
            return []
        groups: dict[str, list[ev.StubHealth]] = {}
        for line in lines:
            groups.setdefault(line.instance or _reporter(line.detail) or "", []).append(line)
        reqs = requests_of(window)
        by_instance: dict[str, list[Lifecycle]] = {}
        for c in reqs.lifecycles:
            if c.instance:
                by_instance.setdefault(c.instance, []).append(c)
        return [self._finding(instance, group, by_instance) for instance, group in groups.items()]

    def _finding(
        self, instance: str, group: list[ev.StubHealth], by_instance: dict[str, list[Lifecycle]]
    ) -> Finding:
        first, last = group[0], group[-1]
        model = model_of_instance(instance) if instance else "unknown"
        slack = int(self.release_slack_s * 1e9)
        victims = [v for line in group if (v := _victim(line, by_instance, slack)) is not None]
        text = first.detail.strip().split("\n")[0]
        if "not healthy" in first.detail:
            summary = f"The python stub of {instance or model} is dead ('{_short(text)}')"
        elif "Non-graceful termination" in first.detail:
            summary = f"A python stub of {model} was terminated non-gracefully"
        else:
            summary = f"A python stub of {model} failed to start or restart ('{_short(text)}')"
        summary += f", seen {len(group)} time(s)"
        if victims:
            summary += (
                f"; request '{victims[0].request_id}' ({victims[0].model}) failed on it"
                " and every request to that instance fails until the model is reloaded."
            )
        else:
            summary += "; requests to that instance fail until the model is reloaded."
        evidence = tuple(
            Evidence("log", line.header.at_ns, log_ref(line.header.offset), line.detail.strip())
            for line in group[: self.max_evidence]
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=instance or None,
            request_id=victims[0].request_id if victims else None,
            first_seen_ns=first.header.at_ns,
            last_seen_ns=last.header.at_ns,
            summary=summary,
            evidence=evidence,
            advice=ADVICE,
        )


def _reporter(detail: str) -> str | None:
    m = _REPORTER.search(detail)
    return m.group(1) if m else None


def _victim(
    line: ev.StubHealth, by_instance: dict[str, list[Lifecycle]], slack_ns: int
) -> Lifecycle | None:
    """The request executing on the reporting (BLS parent) instance when the line was written;
    its release may be logged just before the error line (seen on 2.51), hence the slack."""
    reporter = _reporter(line.detail)
    at = line.header.at_ns
    for c in reversed(by_instance.get(reporter or "", [])):
        if c.executing_ns is not None and c.executing_ns <= at:
            if c.released_ns is None or c.released_ns >= at - slack_ns:
                return c
            return None
    return None


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
