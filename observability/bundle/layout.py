"""The bundle: the offline interchange format, one folder (or one ``.tar.gz`` of it) a capture.

```
DIR/meta.json                 {"format": 1, "bundle_id", "triton_version", "started_at",
                               "ended_at", "sources": {...}, "clock": {...}}
DIR/triton.log                the verbose log for the window
DIR/trace.json, trace.json.N  Triton trace files
DIR/metrics/<unix_ms>.prom    /metrics snapshots, exactly as scraped
DIR/stats/<unix_ms>.json      /v2/models/stats snapshots
DIR/otlp/<unix_ms>.json       OTLP JSON export requests
DIR/scrapes.jsonl             failed scrape attempts, one JSON object a line:
                              {"unix_ms", "target": "metrics" or "stats", "error"}
```
Any part may be absent. Reading never fails on a bad part: it is skipped with a note, so a
truncated or partly broken bundle still gives what it can.

Bundles travel between people, so nothing in one is trusted: a symbolic link is never
followed (it is skipped with a note), every file is read up to a size limit (:class:`Limits`),
and meta.json's values are checked before anything computes with them. An archive is
extracted by :mod:`observability.bundle.archive`, which refuses what could escape its folder.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from collectors.logs.framing import FORMATS

__all__ = [
    "FORMAT",
    "LIMITS",
    "SCRAPES",
    "Bundle",
    "BundleError",
    "BundleMeta",
    "Limits",
    "PartError",
    "layout_part",
    "open_bundle",
    "open_part",
    "read_part",
    "snapshot_name",
]

FORMAT = 1
SCRAPES = "scrapes.jsonl"
"""The scrapes that failed. A snapshot is the record of a scrape that answered; without this
file a bundle of a server that crashed mid-capture read as a server that was never asked
(tests/fixtures/foreign tts_queue_full: 48 failed scrapes, none in the bundle)."""
_SNAPSHOT = re.compile(r"^(\d{10,16})\.(prom|json)$")
_TRACE = re.compile(r"^trace\.json(?:\.(\d{1,9}))?$")
_FOLDERS = {"metrics": "prom", "stats": "json", "otlp": "json"}
_MAX_UNIX_MS = (2**63 - 1) // 1_000_000
"""The store keeps nanoseconds in SQLite's signed 64-bit integers: later than this overflows."""
_YEARS = (1970, 2200)
"""A capture's plausible years; outside them its times would overflow the store's clock."""

MiB = 1 << 20
GiB = 1 << 30


class BundleError(ValueError):
    """Not a bundle at all (no folder, no meta.json, an unreadable one), or an archive that
    is refused as a whole (a member that could escape its folder, or over a limit)."""


class NoMetaError(BundleError):
    """A folder or a safe archive with no ``meta.json``: maybe files a user gathered by hand,
    which ``bundle/loose.py`` reads."""


class PartError(ValueError):
    """One file of a bundle cannot be read safely; the bundle's other parts still can."""


@dataclass(frozen=True)
class Limits:
    """What a bundle may hold. A bundle from someone else may be broken or hostile: these keep
    the memory and disk it can cost bounded, so it fails with a message instead of exhausting
    either. A folder's ``triton.log`` is streamed (only a line is held), so its size is
    limited only in an archive, where it costs disk."""

    meta_bytes: int = 1 * MiB
    log_bytes: int = 2 * GiB
    trace_bytes: int = 256 * MiB
    """Each trace file is parsed whole, in memory."""
    snapshot_bytes: int = 16 * MiB
    """Each metrics, stats or OTLP snapshot (a real /metrics page is well under 1 MiB)."""
    log_line_bytes: int = 1 * MiB
    """A longer log line (a tensor dumped by a stub) is skipped, as the live tailer does."""
    archive_bytes: int = 4 * GiB
    """The whole uncompressed tar stream, headers included: a gzip bomb stops here."""
    archive_members: int = 200_000
    """A day of 1 s snapshots is 172,800 files."""
    header_bytes: int = 1 * MiB
    """One tar header with its pax or GNU long-name records (read whole by tarfile)."""

    def part_bytes(self, part: str) -> int:
        """The size limit of one file of kind ``part`` (see :func:`layout_part`)."""
        return {
            "meta": self.meta_bytes,
            "log": self.log_bytes,
            "trace": self.trace_bytes,
        }.get(part, self.snapshot_bytes)


LIMITS = Limits()


def layout_part(parts: Sequence[str]) -> str | None:
    """The kind of the bundle file at relative path ``parts`` (``meta``, ``log``, ``trace``,
    ``metrics``, ``stats``, ``otlp``, ``scrapes``), or None for a name the layout does not
    have."""
    if len(parts) == 1:
        name = parts[0]
        if name == "meta.json":
            return "meta"
        if name == "triton.log":
            return "log"
        if name == SCRAPES:
            return "scrapes"
        return "trace" if _TRACE.match(name) else None
    if len(parts) == 2 and parts[0] in _FOLDERS:
        m = _SNAPSHOT.match(parts[1])
        if m and m.group(2) == _FOLDERS[parts[0]] and int(m.group(1)) <= _MAX_UNIX_MS:
            return parts[0]
    return None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_LINK = "a symbolic link (never followed out of a bundle)"
_GROWN = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _open_regular(path: Path) -> int:
    """A descriptor of ``path`` opened for reading, or PartError when it is not a regular
    file inside the bundle: a symbolic link (``triton.log -> /etc/passwd``) is not followed,
    and a FIFO or device is not opened in a way that could block or read forever. Where
    ``O_NOFOLLOW`` exists it refuses the link itself (ELOOP), with no ``lstat`` first."""
    if not _NOFOLLOW and path.is_symlink():
        raise PartError(_LINK)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        if err.errno == errno.ELOOP and _NOFOLLOW:
            raise PartError(_LINK) from None
        raise PartError(err.strerror or str(err)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PartError("not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_part(path: Path) -> BinaryIO:
    """Open a bundle file for reading (see :func:`_open_regular` for what is refused)."""
    fd = _open_regular(path)
    try:
        if getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_part(path: Path, limit: int) -> bytes:
    """A bundle file's bytes, never more than ``limit`` of them in memory.

    Read on the descriptor, a size known from ``fstat`` at a time: a buffered ``read(limit
    + 1)`` sized its buffer by the limit (256 MiB for a trace file), and with the file object
    it cost a bundle's two thousand small files three times their reading."""
    fd = _open_regular(path)
    try:
        want = min(os.fstat(fd).st_size, limit) + 1
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, min(want, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            want = max(want, _GROWN)  # it grew after the fstat: read on in fair pieces
    except OSError as err:
        raise PartError(err.strerror or str(err)) from None
    finally:
        os.close(fd)
    if got > limit:
        raise PartError(f"larger than the {limit:,}-byte limit")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one, or none: empty


def _finite_int(value: object, bound: int) -> int | None:
    """``value`` as an int when it is a number of magnitude at most ``bound``; JSON allows
    1e999 and NaN, which ``int()`` turns into an exception."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value) if abs(value) <= bound else None


def _year_of(text: str) -> int | None:
    try:
        year = datetime.fromisoformat(text).year
    except (TypeError, ValueError):
        return None
    return year if _YEARS[0] <= year <= _YEARS[1] else None


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
        return _year_of(self.started_at) or datetime.now().year

    @property
    def date(self) -> date | None:
        """The capture's start date: it dates log headers that carry none."""
        try:
            return datetime.fromisoformat(self.started_at).date() if self.started_at else None
        except ValueError:
            return None

    @property
    def log_format(self) -> str:
        """The log's frame as the capture recorded it (``sources.log_format``), else auto."""
        value = self.sources.get("log_format")
        return value if value in FORMATS else "auto"

    @property
    def epoch_minus_monotonic_ns(self) -> int | None:
        return _finite_int(self.clock.get("epoch_ns_minus_monotonic_ns"), 2**62)

    @property
    def log_utc_offset_s(self) -> int:
        return _finite_int(self.clock.get("log_utc_offset_s", 0), 86_400) or 0

    @property
    def log_start_offset(self) -> int:
        """Where the bundle's triton.log began in the original file (log records keep their
        original byte offsets)."""
        value = _finite_int(self.sources.get("log_start_offset", 0), 2**53)
        return value if value is not None and value >= 0 else 0

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
    """An opened bundle. One opened from an archive lives in a temporary folder that
    :meth:`close` (or leaving a ``with`` block) removes: use it as a context manager."""

    root: Path
    meta: BundleMeta
    log: Path | None
    traces: list[Path]
    metrics: list[tuple[int, Path]]
    stats: list[tuple[int, Path]]
    otlp: list[tuple[int, Path]]
    notes: list[str] = field(default_factory=list)
    """What was skipped and why."""
    scrapes: Path | None = None
    """``scrapes.jsonl``: the failed scrapes, when the capture recorded any."""
    source: Path | None = None
    """What was opened: the folder itself, or the archive ``root`` was extracted from."""
    limits: Limits = LIMITS
    _workdir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def close(self) -> None:
        """Remove the temporary folder of an extracted archive; a folder bundle is left as is."""
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> Bundle:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _snapshots(folder: Path, suffix: str, notes: list[str]) -> list[tuple[int, Path]]:
    name = folder.name
    if folder.is_symlink():
        notes.append(f"skipped {name}/: a symbolic link (never followed out of a bundle)")
        return []
    if not folder.is_dir():
        if folder.exists():
            notes.append(f"skipped {name}: not a folder")
        return []
    found = []
    for entry in _entries(folder):
        if entry.is_symlink():
            notes.append(f"skipped {name}/{entry.name}: a symbolic link (never followed)")
        elif layout_part((name, entry.name)) != name:
            m = _SNAPSHOT.match(entry.name)
            why = "a time out of range" if m and m.group(2) == suffix else f"not <unix_ms>.{suffix}"
            notes.append(f"skipped {name}/{entry.name}: {why}")
        elif not entry.is_file():
            notes.append(f"skipped {name}/{entry.name}: not a regular file")
        else:
            found.append((int(entry.name.split(".", 1)[0]), folder / entry.name))
    return sorted(found)


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """A folder's entries by name. ``scandir``'s know their type from the listing itself: a
    ``Path``'s ``is_symlink`` and ``is_file`` were two system calls a file, a thirtieth of
    ingesting a bundle of two thousand small files."""
    with os.scandir(folder) as listing:
        return sorted(listing, key=lambda entry: entry.name)


def _read_meta(
    root: Path, label: str, fallback_id: str, limits: Limits, notes: list[str]
) -> BundleMeta:
    path = root / "meta.json"
    where = f"{label}/meta.json"
    if path.is_symlink():
        raise BundleError(f"{where} is a symbolic link: a bundle's files must be inside it")
    if not path.is_file():
        raise NoMetaError(f"{label} is not a bundle: it has no meta.json")
    try:
        text = read_part(path, limits.meta_bytes).decode("utf-8", errors="replace")
    except PartError as err:
        raise BundleError(f"{where} cannot be read: {err}") from None
    try:
        raw = json.loads(text)
    except RecursionError:
        raise BundleError(f"{where} is not valid JSON: nested too deeply") from None
    except ValueError as err:
        raise BundleError(f"{where} is not valid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise BundleError(f"{where} must hold a JSON object")
    fmt = raw.get("format")
    if fmt != FORMAT or isinstance(fmt, bool):
        shown = repr(fmt) if len(repr(fmt)) <= 40 else repr(fmt)[:40] + "…"
        raise BundleError(f"{where}: bundle format {shown} is not supported (this reads {FORMAT})")
    times = {}
    for key in ("started_at", "ended_at"):
        value = raw.get(key, "")
        if not isinstance(value, str) or (value and _year_of(value) is None):
            notes.append(f"meta.json: {key} is not an ISO time in {_YEARS[0]}-{_YEARS[1]}: ignored")
            value = ""
        times[key] = value
    sources: dict[str, Any] = raw["sources"] if isinstance(raw.get("sources"), dict) else {}
    clock: dict[str, Any] = raw["clock"] if isinstance(raw.get("clock"), dict) else {}
    meta = BundleMeta(
        format=FORMAT,
        bundle_id=str(raw.get("bundle_id") or fallback_id),
        triton_version=str(raw.get("triton_version", "")),
        started_at=times["started_at"],
        ended_at=times["ended_at"],
        sources=sources,
        clock=clock,
    )
    for key, given, used in (
        ("sources.log_start_offset", sources.get("log_start_offset", 0), meta.log_start_offset),
        ("clock.log_utc_offset_s", clock.get("log_utc_offset_s", 0), meta.log_utc_offset_s),
        (
            "clock.epoch_ns_minus_monotonic_ns",
            clock.get("epoch_ns_minus_monotonic_ns"),
            meta.epoch_minus_monotonic_ns,
        ),
    ):
        if given is not None and given != used:
            notes.append(f"meta.json: {key} {str(given)[:40]!r} is not a usable number: ignored")
    return meta


def open_bundle(
    path: Path | str, *, limits: Limits = LIMITS, workdir: Path | None = None
) -> Bundle:
    """List a bundle's parts. ``path`` is a bundle folder or a ``.tar.gz`` (``.tgz``, ``.tar``,
    ``.tar.bz2``, ``.tar.xz``: told by content) of one, which is extracted safely into a
    temporary folder under ``workdir`` (the system's by default) that the returned bundle
    owns: ``with open_bundle(p) as bundle: ...`` removes it. Raises :class:`BundleError`
    only when ``path`` is no bundle at all, or an archive that is refused."""
    path = Path(path)
    if path.is_dir():
        return _open_folder(path, str(path), path.resolve().name, limits, [], None)
    if not path.exists():
        raise BundleError(f"{path} does not exist")
    if not path.is_file():
        raise BundleError(f"{path} is neither a bundle folder nor a .tar.gz of one")
    from observability.bundle.archive import extract_archive

    work = tempfile.TemporaryDirectory(prefix="triton-obs-bundle-", dir=workdir)
    try:
        root = Path(work.name) / "bundle"
        root.mkdir()
        notes = extract_archive(path, root, limits=limits)
        name = path.name
        for suffix in (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar"):
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        return _open_folder(root, str(path), name, limits, notes, work, source=path)
    except BaseException:
        work.cleanup()
        raise


def _open_folder(
    root: Path,
    label: str,
    fallback_id: str,
    limits: Limits,
    notes: list[str],
    work: tempfile.TemporaryDirectory[str] | None,
    source: Path | None = None,
) -> Bundle:
    try:
        meta = _read_meta(root, label, fallback_id, limits, notes)
    except BundleError as err:
        if notes:  # an archive's notes say why meta.json may be missing
            raise type(err)(f"{err} ({'; '.join(notes[:3])})") from None
        raise
    traces = []
    for entry in _entries(root):
        if entry.is_symlink():
            if layout_part((entry.name,)):  # a folder's link is noted with its snapshots
                notes.append(f"skipped {entry.name}: a symbolic link (never followed)")
        elif _TRACE.match(entry.name):
            if entry.is_file():
                traces.append(root / entry.name)
            else:
                notes.append(f"skipped {entry.name}: not a regular file")
    traces.sort(key=lambda p: -1 if p.name == "trace.json" else int(p.name.rsplit(".", 1)[1]))
    log_path = root / "triton.log"
    log = log_path if log_path.is_file() and not log_path.is_symlink() else None
    scrapes_path = root / SCRAPES
    scrapes = scrapes_path if scrapes_path.is_file() and not scrapes_path.is_symlink() else None
    if log is None and log_path.exists() and not log_path.is_symlink():
        notes.append("skipped triton.log: not a regular file")
    return Bundle(
        root=root,
        meta=meta,
        log=log,
        traces=traces,
        metrics=_snapshots(root / "metrics", "prom", notes),
        stats=_snapshots(root / "stats", "json", notes),
        otlp=_snapshots(root / "otlp", "json", notes),
        notes=notes,
        scrapes=scrapes,
        source=source or root,
        limits=limits,
        _workdir=work,
    )
