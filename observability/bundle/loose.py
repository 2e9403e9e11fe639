"""Files that are not a bundle, read as one: a log someone pasted, a /metrics page, stats.

Why: what users have at hand when something went wrong is rarely a capture. It is the log
they copied out of ``docker logs`` into an issue, a ``curl :8002/metrics`` page, the JSON of
``/v2/models/stats``, a trace file. ``triton-obs analyze`` takes such a file, or a folder of
them, and reads each by what it holds (not by its name): the log through the same frames
as a live one (``collectors/logs/framing.py``), snapshots and trace files as a capture's.

Some log viewers export newest first (server#8028, #4046): a log whose header times run
backwards is read from a reversed copy (its evidence offsets are the copy's), with a note.

Such files carry no capture times. The window is the events' own span and is evaluated at
its end (``analyze``); a snapshot is dated by its file's modification time, which usually
lies far after a pasted log, and then falls outside the log's window: it is noted.
"""

from __future__ import annotations

import json
import re
import tempfile
from itertools import pairwise
from pathlib import Path

from observability.bundle.layout import LIMITS, Bundle, BundleError, BundleMeta, Limits

__all__ = ["kind_of", "open_loose"]

_SNIFF_BYTES = 64 * 1024
_STAMP = re.compile(rb"[IWEF]?(\d{4} \d\d:\d\d:\d\d\.\d{6}) +\d+ [^\s:\]]+:\d+\] ")
_ORDER_LINES = 400
_NOT_ARTIFACTS = frozenset({".md", ".yaml", ".yml", ".py", ".sh", ".gz", ".tgz", ".zip"})
"""What a folder of artifacts holds beside them (notes, sources, archives): never read."""


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
        if file.suffix in _NOT_ARTIFACTS:
            continue
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
        else:
            notes.append(f"skipped {file.name}: not a Triton log, page, stats or trace")
    if not (logs or traces or any(snaps.values())):
        raise BundleError(f"{path} holds no Triton log, /metrics page, stats or trace file")
    logs.sort(key=lambda p: (p.name != "triton.log", -p.stat().st_size))
    notes += [f"skipped {p.name}: one log is read, {logs[0].name}" for p in logs[1:]]
    if any(snaps.values()):
        notes.append("snapshots are dated by their files' modification time (not a capture)")
    meta = BundleMeta(1, path.name, "", "", "", sources={"loose": True}, clock={})
    log = logs[0] if logs else None
    work = None
    if log is not None and _newest_first(log):
        work = tempfile.TemporaryDirectory(prefix="triton-obs-loose-")
        log = _reversed(log, Path(work.name))
        notes.append(f"{logs[0].name} runs newest first (a log viewer's export): read reversed")
    return Bundle(
        root=path if path.is_dir() else path.parent,
        meta=meta,
        log=log,
        traces=traces,
        metrics=sorted(snaps["metrics"]),
        stats=sorted(snaps["stats"]),
        otlp=sorted(snaps["otlp"]),
        notes=notes,
        source=path,
        limits=limits,
        _workdir=work,
    )


def _newest_first(log: Path) -> bool:
    """Whether the header times of the log's first lines run backwards: jumps back of more
    than 10 ms outweigh jumps forward (a viewer may keep each burst of lines in order)."""
    with log.open("rb") as fh:
        stamps = [
            _seconds(m.group(1))
            for line, _ in zip(fh, range(_ORDER_LINES), strict=False)
            if (m := _STAMP.search(line, 0, 120))
        ]
    pairs = list(pairwise(stamps))
    back = sum(a - b for a, b in pairs if a - b > 0.01)
    forth = sum(b - a for a, b in pairs if b - a > 0.01)
    return len(pairs) >= 3 and back > 3 * forth


def _seconds(stamp: bytes) -> float:
    """``MMDD HH:MM:SS.ffffff`` -> seconds (a month is 31 days: only order matters)."""
    day = int(stamp[:2]) * 31 + int(stamp[2:4])
    hh, mm, ss = stamp[5:].split(b":")
    return day * 86400 + int(hh) * 3600 + int(mm) * 60 + float(ss)


def _reversed(log: Path, folder: Path) -> Path:
    lines = log.read_bytes().splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    out = folder / log.name
    out.write_bytes(b"".join(reversed(lines)))
    return out
