"""One open file, read into ``\\n``-terminated lines with their byte offsets.

The reader owns the line-splitting rules, so they hold the same way for the current file
and for a rotated one being drained:

* only ``\\n``-terminated lines come out; a partial last line waits in ``buf`` until its
  ``\\n`` arrives (a writer's ``write()`` is not a line);
* a line longer than ``max_line_bytes`` (terminator included) is skipped through its
  ``\\n`` and reported, and the bytes after it are read as usual: one runaway line (a
  tensor dumped by a python stub) must not cost the rest of the file, nor unbounded memory,
  so at most ``max_line_bytes`` are ever buffered;
* bytes are passed through untouched: decoding (and judging junk) is the parser's job;
* truncation is checked before each read: size below the read position, or first bytes
  that no longer match the identity.

It reads with ``pread`` at its own position, so it needs no seek state and never blocks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import accumulate

from collectors.logs.hotpath import SplitLines, line_splitter
from collectors.tail.fingerprint import FINGERPRINT_BYTES, FileIdentity, head_identity, matches

__all__ = ["CHUNK_BYTES", "FileReader", "ReadResult", "whole_lines"]

CHUNK_BYTES = 256 * 1024


def _whole_lines(data: bytes, end: int, limit: int) -> list[bytes] | None:
    """The compiled splitter's reference (and stand-in where it was not built).
    ``bytes.splitlines`` also ends a line at a lone ``\r``, which a log's line does not, so
    where there is one the split is at ``\n`` alone."""
    whole = data[:end]
    if b"\r" not in whole:
        lines = whole.splitlines(keepends=True)
    else:
        lines = [line + b"\n" for line in whole[:-1].split(b"\n")]
    return lines if end <= limit or max(map(len, lines)) <= limit else None


whole_lines: SplitLines = line_splitter() or _whole_lines
"""``whole_lines(data, end, limit)``: ``data[:end]`` (ending in ``\n``) as its
``\n``-terminated lines, or None if one is longer than ``limit``. A ``find`` a line was a
tenth of a busy log's collection, and ``splitlines`` an eighth of an ingest: the compiled
splitter (``collectors/logs/_hotpath.c``) cuts at the ``\n``s that ``memchr`` finds."""


@dataclass(slots=True)
class ReadResult:
    """Lines as ``(offset, data)``, skipped over-long lines as ``(offset, length)``."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)
    nbytes: int = 0
    eof: bool = False


class FileReader:
    """Reads one file incarnation from ``start``; ``identity`` completes as the head arrives."""

    def __init__(
        self,
        fd: int,
        path: str,
        start: int,
        max_line_bytes: int,
        identity: FileIdentity | None = None,
        copy: bool = False,
    ) -> None:
        st = os.fstat(fd)
        # A copy of ``identity``'s file (copytruncate): its lines keep the original's
        # identity, and only its content, not its inode, is checked.
        self.copy = copy
        self.fd: int | None = fd
        self.path = path
        self.dev, self.inode = st.st_dev, st.st_ino
        self.max_line_bytes = max_line_bytes
        self.pos = start  # next byte to read
        self.line_start = start  # offset of buf[0]; line_start + len(buf) == pos
        self.buf = b""
        self.skip_from: int | None = None  # offset of the over-long line being skipped
        self.committed = start  # end of the last line the consumer has processed
        self.pending = 0  # emitted lines (and skip markers) not yet committed
        self.gone = False  # truncated away: nothing left to resume from
        self.idle_polls = 0  # consecutive polls that found nothing new (for draining)
        self._head = b""
        if identity is not None and (identity.complete or start > 0):
            self.identity = identity
        else:
            self.identity = head_identity(self.dev, self.inode, b"")
            self.pos = self.line_start = self.committed = 0

    def size(self) -> int:
        assert self.fd is not None
        return os.fstat(self.fd).st_size

    def truncated(self) -> int | None:
        """The file's size if it was truncated under us (see module docstring), else None."""
        assert self.fd is not None
        size = self.size()
        if size < self.pos or not matches(self.fd, self.identity, same_inode=not self.copy):
            return size
        return None

    def read(self, budget: int) -> ReadResult:
        """Read at most ``budget`` bytes (rounded to lines already buffered)."""
        assert self.fd is not None
        res = ReadResult()
        while res.nbytes < budget:
            chunk = os.pread(self.fd, min(CHUNK_BYTES, budget - res.nbytes), self.pos)
            if not chunk:
                res.eof = True
                break
            if self.pos < FINGERPRINT_BYTES and not self.identity.complete:
                self._head += chunk[: FINGERPRINT_BYTES - self.pos]
                self.identity = head_identity(self.dev, self.inode, self._head)
            self.pos += len(chunk)
            res.nbytes += len(chunk)
            if self.identity.complete:
                self._feed(chunk, res)
            else:  # blank lines ahead of the first one: they wait for the final identity
                self.buf += chunk
        return res

    def _feed(self, chunk: bytes, res: ReadResult) -> None:
        data = self.buf + chunk if self.buf else chunk
        base = self.line_start
        limit = self.max_line_bytes
        start = 0
        end = data.rfind(b"\n") + 1
        if self.skip_from is None and end:  # the usual read: whole lines, none too long
            lines = whole_lines(data, end, limit)
            if lines is not None:
                starts = accumulate(map(len, lines), initial=base)  # one more: the end
                res.lines.extend(zip(starts, lines, strict=False))
                start = end
        find = data.find
        while (nl := find(b"\n", start)) >= 0:
            end = nl + 1
            if self.skip_from is not None:
                res.skipped.append((self.skip_from, base + end - self.skip_from))
                self.skip_from = None
            elif end - start > limit:
                res.skipped.append((base + start, end - start))
            else:
                res.lines.append((base + start, data[start:end]))
            start = end
        rest = len(data) - start
        if self.skip_from is None and rest >= limit:
            self.skip_from = base + start  # cannot fit even with its "\n": stop buffering
        if self.skip_from is not None:
            self.buf = b""
            self.line_start = base + len(data)
        else:
            self.buf = data[start:] if rest else b""
            self.line_start = base + start

    def unterminated(self) -> tuple[int, int] | None:
        """``(offset, length)`` of bytes after the last line, if any (for a retiring file)."""
        if self.skip_from is not None:
            return self.skip_from, self.pos - self.skip_from
        if self.buf:
            return self.line_start, len(self.buf)
        return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
