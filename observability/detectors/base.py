"""The detector protocol and the registry that runs every detector over a window."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from observability.detectors.window import Window
from observability.findings import Finding

__all__ = ["Detector", "DetectorFailure", "detector_kind", "run_detectors"]

log = logging.getLogger(__name__)


class Detector(Protocol):
    """One pathology. ``detect`` is pure over the window; settings live on the instance."""

    kind: str

    def detect(self, window: Window) -> list[Finding]: ...


@dataclass(frozen=True)
class DetectorFailure:
    """A detector that raised on a window: it reported nothing there."""

    kind: str
    error: str
    """The exception's type and message."""

    def __str__(self) -> str:
        return f"{self.kind}: {self.error}"[:300]


def run_detectors(
    detectors: Iterable[Detector], window: Window, failed: list[DetectorFailure] | None = None
) -> list[Finding]:
    """Every detector's findings; a detector that raises is logged and skipped, so one bug
    never hides the other findings. ``failed`` gets each that raised, for a caller that tells
    its user (or Prometheus) what could not be looked at."""
    out: list[Finding] = []
    for detector in detectors:
        try:
            out.extend(detector.detect(window))
        except Exception as err:
            kind = detector_kind(detector)
            log.exception("detector %s failed", kind)
            if failed is not None:
                failed.append(DetectorFailure(kind, f"{type(err).__name__}: {err}"))
    return sorted(out, key=lambda f: (-f.severity.rank, f.first_seen_ns, f.kind, f.model))


def detector_kind(detector: object) -> str:
    """What a detector is named by: the kind it reports."""
    return str(getattr(detector, "kind", detector))


def by_kind(findings: Sequence[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.kind, []).append(finding)
    return grouped
