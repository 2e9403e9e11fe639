"""The bundle: the offline interchange format, one folder a capture.

```
DIR/meta.json                 {"format": 1, "bundle_id", "triton_version", "started_at",
                               "ended_at", "sources": {...}, "clock": {...}}
DIR/triton.log                the verbose log for the window
DIR/trace.json, trace.json.N  Triton trace files
DIR/metrics/<unix_ms>.prom    /metrics snapshots, exactly as scraped
DIR/stats/<unix_ms>.json      /v2/models/stats snapshots
DIR/otlp/<unix_ms>.json       OTLP JSON export requests
```
Any part may be absent. Reading never fails on a bad part: it is skipped with a note, so a
truncated or partly broken bundle still gives what it can.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "Bundle", "BundleError", "BundleMeta", "open_bundle", "snapshot_name"]

FORMAT = 1
_SNAPSHOT = re.compile(r"^(\d{10,16})\.(prom|json)$")
_TRACE = re.compile(r"^trace\.json(?:\.(\d+))?$")


class BundleError(ValueError):
    """The folder is not a bundle at all (no folder, no meta.json, or an unreadable one)."""


@dataclass(frozen=True)
class BundleMeta:
    format: int
    bundle_id: str
    triton_version: str
    started_at: str
    ended_at: str
    sources: dict[str, Any] = field(default_factory=dict)
    clock: dict[str, Any] = field(default_factory=dict)

    @property
    def year(self) -> int:
        """The log's year: glog lines carry month and day only."""
        try:
            return datetime.fromisoformat(self.started_at).year
        except ValueError:
            return datetime.now().year

    @property
    def epoch_minus_monotonic_ns(self) -> int | None:
        value = self.clock.get("epoch_ns_minus_monotonic_ns")
        return int(value) if isinstance(value, (int, float)) else None

    @property
    def log_utc_offset_s(self) -> int:
        value = self.clock.get("log_utc_offset_s", 0)
        return int(value) if isinstance(value, (int, float)) else 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": self.format,
                "bundle_id": self.bundle_id,
                "triton_version": self.triton_version,
                "started_at": self.started_at,
                "ended_at": self.ended_at,
                "sources": self.sources,
                "clock": self.clock,
            },
            indent=2,
            sort_keys=True,
        )


def snapshot_name(unix_ms: int, suffix: str) -> str:
    return f"{unix_ms}.{suffix}"


@dataclass
class Bundle:
    root: Path
    meta: BundleMeta
    log: Path | None
    traces: list[Path]
    metrics: list[tuple[int, Path]]
    stats: list[tuple[int, Path]]
    otlp: list[tuple[int, Path]]
    notes: list[str] = field(default_factory=list)
    """What was skipped and why."""


def _snapshots(folder: Path, suffix: str, notes: list[str]) -> list[tuple[int, Path]]:
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        m = _SNAPSHOT.match(path.name)
        if m and m.group(2) == suffix and path.is_file():
            found.append((int(m.group(1)), path))
        else:
            notes.append(f"skipped {path.relative_to(folder.parent)}: not <unix_ms>.{suffix}")
    return sorted(found)


def _read_meta(root: Path) -> BundleMeta:
    path = root / "meta.json"
    if not path.is_file():
        raise BundleError(f"{root} is not a bundle: it has no meta.json")
    try:
        raw = json.loads(path.read_text(errors="replace"))
    except ValueError as err:
        raise BundleError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise BundleError(f"{path} must hold a JSON object")
    fmt = raw.get("format")
    if fmt != FORMAT:
        raise BundleError(f"{path}: bundle format {fmt!r} is not supported (this reads {FORMAT})")
    return BundleMeta(
        format=FORMAT,
        bundle_id=str(raw.get("bundle_id") or root.resolve().name),
        triton_version=str(raw.get("triton_version", "")),
        started_at=str(raw.get("started_at", "")),
        ended_at=str(raw.get("ended_at", "")),
        sources=raw.get("sources") if isinstance(raw.get("sources"), dict) else {},
        clock=raw.get("clock") if isinstance(raw.get("clock"), dict) else {},
    )


def open_bundle(root: Path | str) -> Bundle:
    """List a bundle's parts; raises :class:`BundleError` only when it is no bundle at all."""
    root = Path(root)
    if not root.is_dir():
        raise BundleError(f"{root} is not a folder")
    meta = _read_meta(root)
    notes: list[str] = []
    traces = sorted(
        (p for p in root.iterdir() if _TRACE.match(p.name) and p.is_file()),
        key=lambda p: -1 if p.name == "trace.json" else int(p.name.rsplit(".", 1)[1]),
    )
    log = root / "triton.log"
    return Bundle(
        root=root,
        meta=meta,
        log=log if log.is_file() else None,
        traces=traces,
        metrics=_snapshots(root / "metrics", "prom", notes),
        stats=_snapshots(root / "stats", "json", notes),
        otlp=_snapshots(root / "otlp", "json", notes),
        notes=notes,
    )
