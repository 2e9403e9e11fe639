"""Findings: the one output of detectors, in a JSON form fixed for every consumer.

Alert rules, dashboards, the triage app and outside tools all read this shape:
``{"kind", "severity", "model", "instance", "request_id", "trace_id", "first_seen",
"last_seen", "summary", "evidence": [{"source", "at", "ref", "detail"}], "advice"}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from observability.catalogue import KINDS

__all__ = [
    "KINDS",
    "Evidence",
    "Finding",
    "Severity",
    "iso",
    "parse_iso",
]

EVIDENCE_SOURCES = ("log", "metrics", "stats", "trace", "otlp", "config")


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"critical": 2, "warning": 1, "info": 0}[self.value]


def iso(at_ns: int) -> str:
    """ISO 8601 UTC with microseconds: sortable, and what every consumer parses."""
    return datetime.fromtimestamp(at_ns / 1e9, tz=timezone.utc).isoformat(timespec="microseconds")


def parse_iso(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1e9)


@dataclass(frozen=True)
class Evidence:
    source: str
    at_ns: int
    ref: str
    """Where to look: ``triton.log:12345`` (byte offset), a metric series, a trace id."""
    detail: str

    def __post_init__(self) -> None:
        if self.source not in EVIDENCE_SOURCES:
            raise ValueError(f"evidence source {self.source!r} is not one of {EVIDENCE_SOURCES}")

    def to_dict(self) -> dict[str, str]:
        return {
            "source": self.source,
            "at": iso(self.at_ns),
            "ref": self.ref,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: Severity
    model: str
    summary: str
    advice: str
    first_seen_ns: int
    last_seen_ns: int
    instance: str | None = None
    request_id: str | None = None
    trace_id: str | None = None
    evidence: tuple[Evidence, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"finding kind {self.kind!r} is not one of {KINDS}")

    @property
    def key(self) -> tuple[str, str, str | None, str | None]:
        """Identity across detection cycles: the same problem seen again updates, not adds."""
        return (self.kind, self.model, self.instance, self.request_id)

    def merged(self, newer: Finding) -> Finding:
        """This finding seen again: keeps first_seen, takes the newer text and evidence."""
        return replace(
            newer,
            first_seen_ns=min(self.first_seen_ns, newer.first_seen_ns),
            last_seen_ns=max(self.last_seen_ns, newer.last_seen_ns),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity.value,
            "model": self.model,
            "instance": self.instance,
            "request_id": self.request_id,
            "trace_id": self.trace_id,
            "first_seen": iso(self.first_seen_ns),
            "last_seen": iso(self.last_seen_ns),
            "summary": self.summary,
            "evidence": [e.to_dict() for e in self.evidence],
            "advice": self.advice,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            kind=data["kind"],
            severity=Severity(data["severity"]),
            model=data["model"],
            instance=data.get("instance"),
            request_id=data.get("request_id"),
            trace_id=data.get("trace_id"),
            first_seen_ns=parse_iso(data["first_seen"]),
            last_seen_ns=parse_iso(data["last_seen"]),
            summary=data["summary"],
            evidence=tuple(
                Evidence(e["source"], parse_iso(e["at"]), e["ref"], e["detail"])
                for e in data.get("evidence", [])
            ),
            advice=data["advice"],
        )
