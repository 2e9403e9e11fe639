"""Files that are not a bundle, read as one: a log someone pasted, a /metrics page, stats.

Why: what users have at hand when something went wrong is rarely a capture. It is the log
they copied out of ``docker logs`` into an issue, a ``curl :8002/metrics`` page, the JSON of
``/v2/models/stats``, a trace file. ``triton-obs analyze`` takes such a file, or a folder of
them, and reads each by what it holds (not by its name): the log through the same frames
as a live one (``collectors/logs/framing.py``), snapshots and trace files as a capture's.

Such files carry no capture times. The window is the events' own span and is evaluated at
its end (``analyze``); a snapshot is dated by its file's modification time, which usually
lies far after a pasted log, and then falls outside the log's window: it is noted.
"""

from __future__ import annotations

import json
from pathlib import Path

from observability.bundle.layout import LIMITS, Bundle, BundleError, BundleMeta, Limits

__all__ = ["kind_of", "open_loose"]

_SNIFF_BYTES = 64 * 1024


def kind_of(head: bytes) -> str:
    """``log``, ``metrics``, ``stats``, ``trace``, ``otlp`` or ``""`` (binary: not ours)
    from a file's first bytes."""
    if b"\x00" in head:
        return ""
    text = head.lstrip()
    if text.startswith((b"[", b"{")) and not text.startswith(b'{"log"'):
        kind = _json_kind(text)
        if kind:
            return kind
    lines = [ln.strip() for ln in text.splitlines()[:50] if ln.strip()]
    metric = sum(1 for ln in lines if ln.startswith((b"# HELP ", b"# TYPE ", b"nv_")))
    if lines and metric * 2 >= len(lines):
        return "metrics"
    return "log"


def _json_kind(text: bytes) -> str:
    """The kind of a JSON document from its start (it may be cut short: only keys count)."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    head = text[:4096]
    if isinstance(doc, dict):
        if "model_stats" in doc:
            return "stats"
        if "resourceSpans" in doc:
            return "otlp"
    listed = isinstance(doc, list) or text.startswith(b"[")
    if listed and (b'"timestamps"' in head or b'"model_name"' in head):
        return "trace"
    if b'"model_stats"' in head:
        return "stats"
    if b'"resourceSpans"' in head:
        return "otlp"
    return ""


def open_loose(path: Path | str, limits: Limits = LIMITS) -> Bundle:
    """A file, or a folder of files, as a bundle. Raises :class:`BundleError` when nothing
    in it is a Triton artifact."""
    path = Path(path)
    if path.is_symlink() or not path.exists():
        raise BundleError(f"{path} does not exist or is a symbolic link")
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
    notes: list[str] = []
    logs: list[Path] = []
    traces: list[Path] = []
    snaps: dict[str, list[tuple[int, Path]]] = {"metrics": [], "stats": [], "otlp": []}
    for file in files:
        if file.is_symlink():
            notes.append(f"skipped {file.name}: a symbolic link (never followed)")
            continue
        with file.open("rb") as fh:
            kind = kind_of(fh.read(_SNIFF_BYTES))
        if kind == "log":
            logs.append(file)
        elif kind == "trace":
            traces.append(file)
        elif kind in snaps:
            at_ms = int(file.stat().st_mtime * 1000) + len(snaps[kind])
            snaps[kind].append((at_ms, file))
        elif file.name not in ("source.yaml", "README.md", "PROVENANCE.md"):
            notes.append(f"skipped {file.name}: not a Triton log, page, stats or trace")
    if not (logs or traces or any(snaps.values())):
        raise BundleError(f"{path} holds no Triton log, /metrics page, stats or trace file")
    logs.sort(key=lambda p: (p.name != "triton.log", -p.stat().st_size))
    notes += [f"skipped {p.name}: one log is read, {logs[0].name}" for p in logs[1:]]
    if any(snaps.values()):
        notes.append("snapshots are dated by their files' modification time (not a capture)")
    meta = BundleMeta(1, path.name, "", "", "", sources={"loose": True}, clock={})
    return Bundle(
        root=path if path.is_dir() else path.parent,
        meta=meta,
        log=logs[0] if logs else None,
        traces=traces,
        metrics=sorted(snaps["metrics"]),
        stats=sorted(snaps["stats"]),
        otlp=sorted(snaps["otlp"]),
        notes=notes,
        source=path,
        limits=limits,
    )
