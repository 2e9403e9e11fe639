"""Files that are not a bundle, read as one: a log someone pasted, a /metrics page, stats.

Why: what users have at hand when something went wrong is rarely a capture. It is the log
they copied out of ``docker logs`` into an issue, a ``curl :8002/metrics`` page, the JSON of
``/v2/models/stats``, a trace file. ``triton-obs analyze`` takes such a file, or a folder of
them, and reads each by what it holds (not by its name): the log through the same frames
as a live one (``collectors/logs/framing.py``), snapshots and trace files as a capture's.

Some log viewers export newest first (server#8028, #4046): a log whose header times run
backwards is read from a reversed copy (its evidence offsets are the copy's), with a note.

Logs are kept the way log rotation leaves them: ``triton.log``, ``triton.log.1``,
``triton.log.2.gz``. A compressed file (gzip, bzip2, xz: told by its first bytes, not its
name) is read decompressed, within the log's size limit. Several logs whose header times
follow one another without overlapping are generations of one log: they are read as one,
oldest first (a hang that began before the last rotation has its start in an older file).
Logs whose times overlap come from different servers; the main one is read, with a note.

Such files carry no capture times. The window is the events' own span and is evaluated at
its end (``analyze``); a snapshot is dated by its file's modification time, which usually
lies far after a pasted log, and then falls outside the log's window: it is noted.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import BinaryIO

from observability.bundle.archive import extract_archive
from observability.bundle.layout import LIMITS, Bundle, BundleError, BundleMeta, Limits

__all__ = ["is_tar", "kind_of", "open_loose", "open_loose_archive"]

_SNIFF_BYTES = 64 * 1024
_STAMP = re.compile(rb"[IWEF]?(\d{4} \d\d:\d\d:\d\d\.\d{6}) +\d+ [^\s:\]]+:\d+\] ")
_ISO_STAMP = re.compile(
    rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d(?:\.\d+)?)Z? [IWEF] +\d+ [^\s:\]]+:\d+\] "
)
"""``--log-format ISO8601``: the year is there, and counts."""
_ORDER_LINES = 400
_HEAD_BYTES = 1 << 20
_NOT_ARTIFACTS = frozenset({".md", ".yaml", ".yml", ".py", ".sh", ".tgz", ".zip"})
"""What a folder of artifacts holds beside them (notes, sources, archives): never read."""
_Opener = Callable[[Path], io.BufferedIOBase]
_MAGIC: tuple[tuple[bytes, _Opener], ...] = (
    (b"\x1f\x8b", gzip.GzipFile),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
_ROTATION_SLACK_S = 1.0
"""A generation's last line may share its second with the next one's first."""
_CHUNK = 1 << 20
_DAMAGED = (OSError, EOFError, lzma.LZMAError, zlib.error)
"""What a damaged gzip, bzip2 or xz stream raises while it is read."""
_MAX_DEPTH = 3
_UNIX_MS = re.compile(r"(1[0-9]{12})\.(?:prom|json|txt)")
"""2001-09-09 to 2033-05-18 in milliseconds."""
_MAX_FILES = 20_000
"""A day of 10 s scrapes of /metrics and stats is 17,280 files."""


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


class _Work:
    """The temporary folder of what was extracted, decompressed or joined, made when first
    needed; the bundle owns it."""

    def __init__(self, folder: tempfile.TemporaryDirectory[str] | None = None) -> None:
        self.folder = folder

    def path(self, name: str) -> Path:
        if self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="triton-obs-loose-")
        made = Path(self.folder.name) / "made"
        made.mkdir(exist_ok=True)
        out = made / name
        n = 1
        while out.exists():
            n += 1
            out = out.with_name(f"{n}-{name}")
        return out


def open_loose_archive(path: Path | str, limits: Limits = LIMITS) -> Bundle:
    """A tar archive of files (not a bundle: no ``meta.json``) as a bundle: every regular
    file extracted flat, under the bundle archive's checks and limits, then read as a folder.
    The bundle owns the temporary folder: use it as a context manager."""
    path = Path(path)
    work = tempfile.TemporaryDirectory(prefix="triton-obs-loose-")
    try:
        files = Path(work.name) / "files"
        files.mkdir()
        notes = extract_archive(path, files, limits=limits, loose=True)
        bundle = open_loose(files, limits, _work=_Work(work))
    except BaseException:
        work.cleanup()
        raise
    bundle.notes[:0] = notes
    bundle.meta = replace(bundle.meta, bundle_id=_stem(path.name))
    bundle.source = path
    return bundle


def _stem(name: str) -> str:
    for suffix in (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def open_loose(path: Path | str, limits: Limits = LIMITS, *, _work: _Work | None = None) -> Bundle:
    """A file, or a folder of files, as a bundle. Raises :class:`BundleError` when nothing
    in it is a Triton artifact."""
    path = Path(path)
    if path.is_symlink() or not path.exists():
        raise BundleError(f"{path} does not exist or is a symbolic link")
    notes: list[str] = []
    files = [path] if path.is_file() else _files_under(path, notes)
    logs: list[Path] = []
    traces: list[Path] = []
    snaps: dict[str, list[tuple[int, Path]]] = {"metrics": [], "stats": [], "otlp": []}
    work = _work or _Work()
    by_mtime = 0
    shown_as: dict[Path, str] = {}
    """A decompressed copy -> the name of the file the user has."""
    for file in files:
        if file.suffix in _NOT_ARTIFACTS:
            continue
        if file.is_symlink():
            notes.append(f"skipped {file.name}: a symbolic link (never followed)")
            continue
        with file.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
        shown, mtime = file.name, file.stat().st_mtime
        opener = next((o for magic, o in _MAGIC if head.startswith(magic)), None)
        if opener is not None:
            plain = _decompressed(file, opener, work, limits, notes)
            if plain is None:
                continue
            file = plain
            shown_as[file] = shown
            with file.open("rb") as fh:
                head = fh.read(_SNIFF_BYTES)
        kind = kind_of(head)
        if kind == "log":
            logs.append(file)
        elif kind == "trace":
            traces.append(file)
        elif kind in snaps:
            named = _named_ms(shown)
            by_mtime += named is None
            at_ms = named or int(mtime * 1000) + len(snaps[kind])
            snaps[kind].append((at_ms, file))
        else:
            notes.append(f"skipped {shown}: not a Triton log, page, stats or trace")
    if not (logs or traces or any(snaps.values())):
        if work.folder is not None:
            work.folder.cleanup()
        raise BundleError(f"{path} holds no Triton log, /metrics page, stats or trace file")
    if by_mtime:
        notes.append(
            f"{by_mtime} snapshot(s) dated by their files' modification time (not a capture)"
        )
    # Snapshots all named by their capture time can say when the capture ended; one dated
    # by its file's time (often long after a pasted log) cannot.
    timed = by_mtime == 0 and any(snaps.values())
    sources = {"loose": True, "snapshots_timed": timed}
    meta = BundleMeta(1, path.name, "", "", "", sources=sources, clock={})
    log = _one_log(logs, work, notes, shown_as)
    if log is not None and _newest_first(log):
        shown = log.name
        log = _reversed(log, work.path(log.name))
        notes.append(f"{shown} runs newest first (a log viewer's export): read reversed")
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
        _workdir=work.folder,
    )


def _named_ms(name: str) -> int | None:
    """The capture time a bundle gives a snapshot's name (``1795615741872.prom``: unix ms),
    when the name is one: such files keep their true times without ``meta.json``."""
    m = _UNIX_MS.fullmatch(name)
    return int(m.group(1)) if m else None


def _files_under(folder: Path, notes: list[str]) -> list[Path]:
    """The files of a folder and of its subfolders (``metrics/``, ``logs/``: however the user
    sorted them), a few levels deep and at most ``_MAX_FILES``; hidden folders and linked
    ones are not entered."""
    found: list[Path] = []
    level = [folder]
    for _ in range(_MAX_DEPTH):
        deeper: list[Path] = []
        for here in level:
            for entry in sorted(here.iterdir()):
                if entry.is_symlink() and entry.is_dir():
                    notes.append(f"skipped {entry.relative_to(folder)}/: a linked folder")
                elif entry.is_dir():
                    if not entry.name.startswith("."):
                        deeper.append(entry)
                elif entry.is_file() or entry.is_symlink():
                    found.append(entry)
        level = deeper
    if len(found) > _MAX_FILES:
        notes.append(f"read the first {_MAX_FILES} of {len(found)} files")
        found = found[:_MAX_FILES]
    return found


def _decompressed(
    file: Path, opener: _Opener, work: _Work, limits: Limits, notes: list[str]
) -> Path | None:
    """``file`` decompressed into the work folder, or None with a note: a tar archive (a
    bundle or a folder sent whole is opened as an archive, not from inside a folder), a
    damaged stream (what came out before the damage is kept), or more than a log may hold."""
    try:
        with opener(file) as src:
            src.read(512)  # a stream damaged from its start holds nothing to read
    except _DAMAGED as err:
        notes.append(f"skipped {file.name}: cannot be decompressed ({err})")
        return None
    if is_tar(file):  # told through the compression, by its first header
        notes.append(f"skipped {file.name}: an archive inside the folder (open it alone)")
        return None
    name = file.name
    for suffix in _COMPRESSED_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    out = work.path(name)
    copied = 0
    try:
        with opener(file) as src, out.open("wb") as dst:
            while chunk := src.read(_CHUNK):
                copied += len(chunk)
                if copied > limits.log_bytes:
                    notes.append(f"{file.name}: read up to {limits.log_bytes} bytes, its limit")
                    break
                dst.write(chunk)
    except _DAMAGED as err:
        notes.append(f"{file.name}: damaged after {copied} bytes ({err}); read what came before")
    return out


def is_tar(path: Path) -> bool:
    """Whether ``path`` starts as a tar archive, compressed or not; a stream too damaged to
    tell is no archive (what it holds is read as a file, up to the damage)."""
    try:
        return tarfile.is_tarfile(path)
    except _DAMAGED:
        return False


def _one_log(
    logs: list[Path], work: _Work, notes: list[str], shown_as: dict[Path, str]
) -> Path | None:
    """The log to read: generations of one rotated log joined oldest first, else the main
    one (``triton.log``, or the largest), with a note on the others."""
    if len(logs) < 2:
        return logs[0] if logs else None
    spans = [(span, p) for p in logs if (span := _span(p)) is not None]
    spans.sort(key=lambda sp: sp[0])
    if len(spans) == len(logs) and all(
        a[1] <= b[0] + _ROTATION_SLACK_S for (a, _), (b, _) in pairwise(spans)
    ):
        names = [shown_as.get(p, p.name) for _, p in spans]
        out = work.path(min((p.name for _, p in spans), key=len))
        with out.open("wb") as dst:
            for _, p in spans:
                with p.open("rb") as src:
                    shutil.copyfileobj(src, dst, _CHUNK)
                if not _ends_with_newline(p):
                    dst.write(b"\n")
        notes.append(
            f"read {len(names)} logs as one, oldest first (rotated generations): "
            f"{', '.join(names)}; evidence offsets are the joined copy's"
        )
        return out
    logs = sorted(logs, key=lambda p: (p.name != "triton.log", -p.stat().st_size))
    notes += [
        f"skipped {shown_as.get(p, p.name)}: one log is read, {shown_as.get(logs[0], logs[0].name)}"
        for p in logs[1:]
    ]
    return logs[0]


def _ends_with_newline(p: Path) -> bool:
    with p.open("rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def _span(log: Path) -> tuple[float, float] | None:
    """The first and last header times of a log, or None when either cannot be read or it
    runs newest first (then it is no generation to join)."""
    with log.open("rb") as fh:
        first = [t for line in _head_lines(fh) if (t := _when(line))]
        fh.seek(0, 2)
        fh.seek(max(0, fh.tell() - _SNIFF_BYTES))
        last = [t for line in fh.read().splitlines() if (t := _when(line))]
    if not first or not last:
        return None
    if len(first) >= 3 and first[0] > first[-1] + 0.01:
        return None
    return first[0], max(last)


def _head_lines(fh: BinaryIO) -> list[bytes]:
    """The first lines of a log, from a bounded read (one line may be a dumped tensor)."""
    return fh.read(_HEAD_BYTES).splitlines()[:_ORDER_LINES]


def _when(line: bytes) -> float | None:
    """A line's header time in seconds, on a scale where only order counts."""
    m = _STAMP.search(line, 0, 120)
    if m is not None:
        return _seconds(m.group(1))
    iso = _ISO_STAMP.search(line, 0, 160)
    if iso is None:
        return None
    year, month, day, hh, mm = (int(g) for g in iso.groups()[:5])
    return (((year * 12 + month) * 31 + day) * 24 + hh) * 3600 + mm * 60 + float(iso.group(6))


def _newest_first(log: Path) -> bool:
    """Whether the header times of the log's first lines run backwards: jumps back of more
    than 10 ms outweigh jumps forward (a viewer may keep each burst of lines in order)."""
    with log.open("rb") as fh:
        stamps = [
            _seconds(m.group(1)) for line in _head_lines(fh) if (m := _STAMP.search(line, 0, 120))
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


def _reversed(log: Path, out: Path) -> Path:
    lines = log.read_bytes().splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    out.write_bytes(b"".join(reversed(lines)))
    return out
