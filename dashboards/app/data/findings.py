"""Findings as the pages need them: stable ids, counts, related findings, evidence text.

Why ids are hashes of the finding's key: the key (kind, model, instance, request) is how the
store updates a finding seen again, so a link to a finding keeps working while a collector
keeps re-detecting it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dashboards.app.data.text import plain
from observability.catalogue import CATALOGUE
from observability.findings import Finding, iso
from observability.store import Store

__all__ = [
    "FindingRow",
    "counts",
    "finding_id",
    "load_findings",
    "log_excerpt",
    "log_offset",
    "metric_names_for",
    "related",
    "rows",
]

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
_LOG_REF = re.compile(r"@(\d+)$")
_METRIC_REF = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{")
_KIND_METRICS = {p.kind: p.metrics for p in CATALOGUE}


def finding_id(finding: Finding) -> str:
    """A short id stable across detection passes (derived from the finding's key)."""
    return hashlib.sha1(json.dumps(finding.key).encode()).hexdigest()[:12]


def load_findings(store: Store, active_only: bool = False) -> list[Finding]:
    """Most severe first, then oldest first: the order someone on call reads them in."""
    found = store.findings(active_only=active_only)
    return sorted(found, key=lambda f: (_SEVERITY_ORDER.get(f.severity.value, 9), f.first_seen_ns))


@dataclass(frozen=True)
class FindingRow:
    id: str
    severity: str
    kind: str
    model: str
    request_id: str
    first_seen: str
    last_seen: str
    summary: str


def rows(findings: list[Finding]) -> list[FindingRow]:
    return [
        FindingRow(
            finding_id(f),
            f.severity.value,
            f.kind,
            f.model,
            f.request_id or "",
            iso(f.first_seen_ns),
            iso(f.last_seen_ns),
            f.summary,
        )
        for f in findings
    ]


def counts(findings: list[Finding], field: str) -> dict[str, int]:
    """How many findings per severity, kind or model."""
    return dict(
        Counter(
            str(getattr(f, field).value if field == "severity" else getattr(f, field))
            for f in findings
        ).most_common()
    )


def _family(request_id: str | None) -> str | None:
    return request_id.split(".", 1)[0] if request_id else None


def related(findings: list[Finding], finding: Finding, slack_s: float = 30.0) -> list[Finding]:
    """Findings about the same client request, or the same model at overlapping times:
    a hung BLS call, the hung request holding it and the saturation it causes are one story."""
    slack = int(slack_s * 1e9)
    family = _family(finding.request_id)
    out = []
    for other in findings:
        if other is finding or other.key == finding.key:
            continue
        same_request = family is not None and _family(other.request_id) == family
        overlaps = (
            other.first_seen_ns <= finding.last_seen_ns + slack
            and finding.first_seen_ns <= other.last_seen_ns + slack
        )
        if same_request or (other.model == finding.model and overlaps):
            out.append(other)
    return out


def log_offset(ref: str) -> int | None:
    """The byte offset of a log evidence reference (``triton.log@12345``), if it has one."""
    match = _LOG_REF.search(ref)
    return int(match.group(1)) if match else None


def log_excerpt(
    log: Path | None, offset: int, base: int = 0, max_lines: int = 12, max_bytes: int = 16384
) -> str | None:
    """The exact log text at ``offset`` (the line and what the stub printed after it, such as
    a traceback), made safe to show; ``None`` when the file is not at hand or does not match."""
    if log is None or offset < base:
        return None
    try:
        with log.open("rb") as fh:
            fh.seek(offset - base)
            chunk = fh.read(max_bytes)
    except OSError:
        return None
    if not chunk:
        return None
    lines = chunk.decode("utf-8", errors="replace").split("\n")
    # The line itself, then following lines that have no log header (a traceback's body).
    taken = [lines[0]]
    for line in lines[1 : max_lines + 1]:
        if not line or _has_header(line):
            break
        taken.append(line)
    return plain("\n".join(taken))


_HEADER = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ |^\d{4}-\d\d-\d\dT")


def _has_header(line: str) -> bool:
    return bool(_HEADER.match(line))


def metric_names_for(finding: Finding) -> list[str]:
    """Metric series that show this finding: those its evidence cites, then the kind's usual."""
    names: list[str] = []
    for ev in finding.evidence:
        if ev.source == "metrics":
            match = _METRIC_REF.match(ev.ref)
            if match and match.group(1) not in names:
                names.append(match.group(1))
    for name in _KIND_METRICS.get(finding.kind, ("nv_inference_pending_request_count",)):
        if name not in names:
            names.append(name)
    return names[:3]
