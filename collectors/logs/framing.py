"""Triton's log as the tools in front of it write it: the prefixes and envelopes to unwrap.

Users rarely hand us the file Triton wrote. The same lines arrive through a container
runtime or a log pipeline, each adding its own frame:

* ``docker logs --timestamps`` and ``kubectl logs --timestamps``:
  ``2025-02-14T09:50:58.534567890Z I0214 09:50:58.533976 1 infer_request.cc:132] ...``
  (log UIs print the same with a space and milliseconds, sometimes glued to the header:
  ``2025-02-14 09:50:58.534I0214 ...``);
* docker compose: ``triton-server  | I0924 12:01:22.876361 1 ...`` (service names padded);
* a log UI export: ``<uuid> - I0924 ...``;
* Kubernetes' CRI files under ``/var/log/pods``: ``<RFC3339Nano> stdout F <line>``, a long
  line split into ``P`` (partial) records ended by an ``F`` one;
* Docker's ``json-file`` driver: ``{"log":"<line>\\n","stream":"stderr","time":"..."}``, a
  long line split over several objects whose ``log`` lacks the final ``\\n``;
* releases (and pipelines) whose header has neither level letter nor date:
  ``08:28:03.536363 149485 infer_request.cc:132] ...``.

``unframe`` turns such lines into the plain lines ``parse_lines`` reads and keeps a map from
each plain line back to the byte offset of the physical line it came from, so records keep
the offset of the real line in the real file: evidence read back at that offset shows the
line as the user has it, and a re-read stores nothing twice. A prefix that carries a date
gives the year (glog headers have none) and dates a header that has no date.

The frame is decided once per file, from its first line that shows one (``Framing`` keeps it
across calls, as ``ParseStats`` does), and can be forced (``--log-format``). Lines that do
not match the decided frame pass through unchanged: nothing is dropped for being unexpected.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

__all__ = ["DECIDE_LINES", "FORMATS", "Framing", "Unframed", "decide", "remap", "unframe"]

FORMATS = ("auto", "glog", "timestamps", "compose", "log-ui", "cri", "docker-json", "no-date")
"""``auto`` decides per file; ``timestamps`` is docker's and kubectl's ``--timestamps``."""

_HEADER = (
    rb"(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}"  # glog
    rb"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [IWEF])"  # --log-format ISO8601
    rb" +\d+ [^\s:\]]+:\d+\] "
)
_NO_DATE = re.compile(rb"(\d\d):(\d\d):(\d\d)\.(\d{6}) +\d+ [^\s:\]]+:\d+\] ")
_HEAD = re.compile(_HEADER)
_STAMP = rb"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_TIMESTAMPS = re.compile(_STAMP + rb" ?")
_BARE_STAMP = re.compile(rb"\s*" + _STAMP + rb"\s*")
_COMPOSE = re.compile(rb"[A-Za-z0-9][\w.-]*\s*\| ")
_LOG_UI = re.compile(
    rb"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12} - "  # <uuid> - (a log UI's export)
    rb"|[A-Z][a-z]{2}, ([A-Z][a-z]{2}) (\d{1,2}) (\d{4}) \d{1,2}:\d\d:\d\d [ap]m \| "  # Rancher
)
_MONTHS = {
    m: i for i, m in enumerate(b"Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)
}
_CRI = re.compile(_STAMP + rb" (?:stdout|stderr) ([FP]) ?")
DECIDE_LINES = 200
"""How many lines of a file's start may pass before its frame is decided (then: none)."""


@dataclass
class Framing:
    """A file's frame and what a split line left pending; the caller keeps it across calls."""

    format: str = "auto"
    detected: str = ""
    """The frame decided for the file (``glog`` when it has none)."""
    year: int | None = None
    """From the first dated prefix: glog headers carry month and day only."""
    date: tuple[int, int, int] | None = None
    """The date of the last dated prefix (or the caller's), for headers without one."""
    last_time: int = -1
    """Seconds into the day of the last dateless header: a step back of hours is midnight."""
    partial: list[tuple[int, bytes]] = field(default_factory=list)
    """``(offset, text)`` of the pieces of a split line (CRI ``P``, json-file without
    ``\\n``) still waiting for their last piece."""

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown log format {self.format!r}: {', '.join(FORMATS)}")
        if self.format != "auto":
            self.detected = self.format

    @property
    def plain(self) -> bool:
        """Whether lines pass to the parser as they are (the fast path)."""
        return self.detected == "glog"


@dataclass
class Unframed:
    lines: list[bytes]
    """The plain lines, each ending in ``\\n`` unless it is the input's unterminated last."""
    starts: list[int]
    """Offset of each plain line in the plain stream (from 0)."""
    origins: list[tuple[int, int]]
    """Per plain line: the byte offset of its physical line and how many bytes of the plain
    line's start do not come from it (a date added to a header), negative for the bytes of
    the physical line's prefix that were dropped."""


def unframe(lines: Iterable[bytes], offset: int, framing: Framing, final: bool = True) -> Unframed:
    """The plain lines of ``lines`` (bytes, terminators kept; the first at ``offset``)."""
    out = Unframed([], [], [])
    plain_at = 0
    off = offset
    for line in lines:
        n = len(line)
        if not framing.detected:
            decide(line, framing)
        for text, origin in _unwrap(line, off, framing):
            out.lines.append(text)
            out.starts.append(plain_at)
            out.origins.append(origin)
            plain_at += len(text)
        off += n
    if framing.partial and final:  # the last piece never came: what did is the line
        first = framing.partial[0][0]
        out.lines.append(b"".join(p for _, p in framing.partial) + b"\n")
        out.starts.append(plain_at)
        out.origins.append((first, 0))
        framing.partial = []
    return out  # not final: the pieces wait in ``framing`` for the next call


def remap(records: Iterable[object], unframed: Unframed) -> list[object]:
    """``records`` parsed from ``unframed.lines`` (offset 0), with their offsets moved back
    to the physical lines."""
    starts, origins = unframed.starts, unframed.origins
    out = []
    for rec in records:
        header = getattr(rec, "header", None)
        plain = header.offset if header is not None else rec.offset  # type: ignore[attr-defined]
        i = max(bisect_right(starts, plain) - 1, 0)
        physical, shift = origins[i]
        within = plain - starts[i]
        real = physical if within <= max(shift, 0) else physical + within - shift
        if header is not None:
            out.append(replace(rec, header=replace(header, offset=real)))  # type: ignore[type-var]
        else:
            out.append(replace(rec, offset=real))  # type: ignore[type-var]
    return out


# ----------------------------------------------------------------------- deciding


def decide(line: bytes, framing: Framing) -> None:
    """Settle the file's frame on the first line that shows one."""
    if not line.strip():
        return
    if _HEAD.match(line):
        framing.detected = "glog"
        return
    for name in ("docker-json", "cri", "compose", "log-ui", "timestamps", "no-date"):
        inner = _strip(name, line)
        if inner is not None and (_HEAD.match(inner) or _NO_DATE.match(inner)):
            framing.detected = name
            return


def _strip(name: str, line: bytes) -> bytes | None:
    """The line without one frame of ``name``, or None when it does not have it (a dateless
    header is returned as it is: it has no frame to strip)."""
    if name == "docker-json":
        if not line.startswith(b"{"):
            return None
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        log = obj.get("log") if isinstance(obj, dict) else None
        return log.encode("utf-8", "replace") if isinstance(log, str) else None
    if name == "no-date":
        return line if _NO_DATE.match(line) else None
    pattern = {"cri": _CRI, "compose": _COMPOSE, "log-ui": _LOG_UI, "timestamps": _TIMESTAMPS}
    m = pattern[name].match(line)
    if m is None:
        return None
    rest = line[m.end() :]
    if name in ("compose", "log-ui"):  # a compose or UI line may carry timestamps too
        t = _TIMESTAMPS.match(rest)
        if t is not None:
            rest = rest[t.end() :]
    return rest


# ----------------------------------------------------------------------- unwrapping


def _unwrap(line: bytes, off: int, framing: Framing) -> list[tuple[bytes, tuple[int, int]]]:
    """The plain line(s) of one physical line, with their origins."""
    name = framing.detected
    if _BARE_STAMP.fullmatch(line):  # a log viewer's date line before each record
        _note_date(line, framing)
        return []
    if name in ("", "glog"):
        return [(line, (off, 0))]
    if name == "docker-json":
        return _json_piece(line, off, framing)
    if name == "cri":
        return _cri_piece(line, off, framing)
    if name == "no-date":
        return [_dated(line, off, 0, framing)]
    inner = _strip(name, line)
    if inner is None:
        return [(line, (off, 0))]
    ui = _LOG_UI.match(line) if name == "log-ui" else None
    if ui is not None and ui.group(1) in _MONTHS:  # Rancher's "Sun, May 29 2022 2:12:15 am | "
        framing.date = (int(ui.group(3)), _MONTHS[ui.group(1)], int(ui.group(2)))
        framing.year = framing.year or framing.date[0]
    _note_date(line[: len(line) - len(inner)], framing)
    return [_dated(inner, off, len(line) - len(inner), framing)]


def _cri_piece(line: bytes, off: int, framing: Framing) -> list[tuple[bytes, tuple[int, int]]]:
    m = _CRI.match(line)
    if m is None:
        return [(line, (off, 0))]
    _note_date(line, framing)
    content = line[m.end() :]
    if m.group(7) == b"P":
        framing.partial.append((off, content.rstrip(b"\r\n")))
        return []
    return _joined(content, off, m.end(), framing)


def _json_piece(line: bytes, off: int, framing: Framing) -> list[tuple[bytes, tuple[int, int]]]:
    try:
        obj = json.loads(line)
    except ValueError:
        return [(line, (off, 0))]
    log = obj.get("log") if isinstance(obj, dict) else None
    if not isinstance(log, str):
        return [(line, (off, 0))]
    stamp = obj.get("time")
    if isinstance(stamp, str):
        _note_date(stamp.encode("ascii", "replace"), framing)
    content = log.encode("utf-8", "replace")
    if not content.endswith(b"\n"):
        framing.partial.append((off, content))
        return []
    return _joined(content, off, None, framing)


def _joined(
    content: bytes, off: int, dropped: int | None, framing: Framing
) -> list[tuple[bytes, tuple[int, int]]]:
    """A line's last piece, with the pieces before it (their line's offset is the first's)."""
    if framing.partial:
        first = framing.partial[0][0]
        content = b"".join(p for _, p in framing.partial) + content
        framing.partial = []
        return [_dated(content, first, 0, framing)]
    if not content.endswith(b"\n"):
        content += b"\n"
    # json-file escapes the line: offsets inside it do not map; the line's own start does
    return [_dated(content, off, dropped if dropped is not None else 0, framing)]


def _note_date(text: bytes, framing: Framing) -> None:
    """Keep the date of a frame's timestamp (``text``: the frame, or one that starts so)."""
    m = _TIMESTAMPS.search(text)
    if m is None:
        return
    y, mon, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    framing.date = (y, mon, d)
    if framing.year is None:
        framing.year = y


def _dated(text: bytes, off: int, dropped: int, framing: Framing) -> tuple[bytes, tuple[int, int]]:
    """A header without level and date gets ``I`` and the date of its prefix (or the
    caller's); the origin says how many bytes were added or dropped at the front."""
    m = _NO_DATE.match(text)
    if m is None or framing.date is None:
        return text, (off, -dropped)
    seconds = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
    if framing.last_time - seconds > 12 * 3600:  # past midnight without a dated prefix
        day = datetime(*framing.date) + timedelta(days=1)
        framing.date = (day.year, day.month, day.day)
    framing.last_time = seconds
    added = b"I%02d%02d " % framing.date[1:]
    return added + text, (off, len(added) - dropped)
