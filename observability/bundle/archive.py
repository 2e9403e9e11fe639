"""Bundles as ``.tar.gz``: how people send them to each other, written and read safely.

An archive from someone else is untrusted input. :func:`extract_archive` reads it in one
forward pass (``tarfile`` stream mode, the decompressor ours) and writes each file itself,
never through ``tarfile.extract``, so what lands on disk is only what it checked:

* the archive is refused as a whole (:class:`BundleError` naming the member) for an absolute
  name, a ``..`` component, any link (symbolic or hard), a device, FIFO or other special
  member, a member over its part's size limit, more than ``Limits.archive_members``
  members, or more than ``Limits.archive_bytes`` of uncompressed tar stream;
* sizes are counted on the bytes actually decompressed, not taken from headers, so a gzip
  bomb stops at the limit having written at most that much;
* a regular file whose name is not in the bundle layout is skipped with a note, so an extra
  README or an editor's backup does not make a bundle unreadable;
* a truncated or corrupt archive keeps the members read whole before the damage, with a note
  (a partial bundle still gives what it can, like a folder with a broken part).

The bundle may sit at the archive's top or in one folder (``tar czf b.tar.gz b/``); the
first member in the layout decides which, and members outside that folder are skipped.
``tarfile``'s ``data`` filter (Python 3.12, backported to 3.11.4) is not relied on: the
project supports 3.10.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO

from observability.bundle.layout import (
    LIMITS,
    SCRAPES,
    BundleError,
    Limits,
    PartError,
    layout_part,
    open_part,
)

__all__ = ["MAX_NOTES", "extract_archive", "write_archive"]

_CHUNK = 1 << 20
MAX_NOTES = 20
"""Skipped members are noted one by one up to this many, then counted."""
_DRIVE = re.compile(r"^[A-Za-z]:")
_KIND = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}
_REGULAR = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
_CORRUPT = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError)
"""What a damaged stream raises: gzip's BadGzipFile and bz2's errors are OSErrors."""


class _Exceeded(Exception):
    """Raised from inside tarfile's reads: more bytes than the current budget allows."""


class _Counted(io.RawIOBase):
    """The decompressed tar stream, counted. ``budget`` is the position past which reading
    fails: the whole archive's limit, or tighter while tarfile reads a header (it reads a
    pax or GNU long-name record whole, so a forged 2 GiB one would otherwise sit in memory).

    A damaged stream's error is held back until the bytes decompressed before it are read:
    a buffered ``read(n)`` drops them when the error comes in the same call, and a cut
    archive would then lose members that arrived whole."""

    def __init__(self, raw: BinaryIO, total: int) -> None:
        super().__init__()
        self._raw = raw
        self._read1 = getattr(raw, "read1", raw.read)
        self.total = total
        self.count = 0
        self.budget = total
        self.exceeded: str | None = None
        self._error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.exceeded:
            raise _Exceeded(self.exceeded)
        if self._error is not None:
            raise self._error
        want = min(_CHUNK if size is None or size < 0 else size, self.budget - self.count + 1)
        parts: list[bytes] = []
        got = 0
        while got < want:
            try:
                data = self._read1(want - got)
            except _CORRUPT as err:
                if not parts:
                    raise
                self._error = err  # for the next read, after these bytes
                break
            if not data:
                break
            parts.append(data)
            got += len(data)
        self.count += got
        if self.count > self.budget:
            self.exceeded = "total" if self.budget >= self.total else "header"
            raise _Exceeded(self.exceeded)
        return b"".join(parts)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _decompressed(raw: BinaryIO) -> BinaryIO:
    """The tar stream inside ``raw``, told by magic bytes rather than the file name."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw)  # type: ignore[return-value]
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)  # type: ignore[return-value]
    return raw


def _member_parts(name: str) -> list[str]:
    """The member's path components; raises for a name that could land outside the folder."""
    if "\x00" in name:
        raise ValueError("has a NUL byte in its name")
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise ValueError("has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." or ".." in p.split("\\") for p in parts):
        raise ValueError("has a '..' component (path traversal)")
    return parts


def _shown(name: str) -> str:
    """A member's name for a message: quoted (control characters escaped), and cut, since a
    long-name record may hold a megabyte."""
    return repr(name) if len(name) <= 200 else f"{name[:200]!r}… ({len(name):,} characters)"


def _kind(member: tarfile.TarInfo) -> str:
    return _KIND.get(member.type, f"of unsupported tar type {member.type!r}")


class _Extractor:
    def __init__(self, archive: Path, dest: Path, limits: Limits, loose: bool = False) -> None:
        self.archive = archive
        self.dest = dest
        self.limits = limits
        self.loose = loose
        """Every regular file, into ``dest`` itself (files a user gathered, not a bundle)."""
        self.notes: list[str] = []
        self.skipped = 0
        self.prefix: tuple[str, ...] | None = None
        self.written: set[str] = set()
        self.members = 0
        self.last = ""
        """The name of the member read last, for messages."""

    def refuse(self, member: str, why: str) -> BundleError:
        return BundleError(f"{self.archive}: refused: member {_shown(member)} {why}")

    def skip(self, member: str, why: str) -> None:
        self.skipped += 1
        if self.skipped <= MAX_NOTES:
            self.notes.append(f"{self.archive.name}: skipped member {_shown(member)}: {why}")

    def run(self) -> list[str]:
        try:
            raw = open_part(self.archive)
        except PartError as err:
            raise BundleError(f"{self.archive} cannot be read: {err}") from None
        with raw, _decompressed(raw) as stream:
            counted = _Counted(stream, self.limits.archive_bytes)
            try:
                self._extract(counted)
            except _Exceeded:
                raise self._over(counted) from None
            except BundleError:
                raise
            except _CORRUPT as err:
                if counted.exceeded:
                    raise self._over(counted) from None
                if not self.members:
                    raise BundleError(
                        f"{self.archive} is not a bundle: not a readable tar archive ({err})"
                    ) from None
                self.notes.append(
                    f"{self.archive.name} is truncated or corrupt after {_shown(self.last)} "
                    f"({type(err).__name__}: {err}): the rest of it is missing"
                )
        if self.skipped > MAX_NOTES:
            self.notes.append(f"{self.archive.name}: {self.skipped - MAX_NOTES} more skipped")
        return self.notes

    def _over(self, counted: _Counted) -> BundleError:
        if counted.exceeded == "header":
            where = f"the header after {_shown(self.last)}" if self.last else "the first header"
            return BundleError(
                f"{self.archive}: refused: {where} is over the "
                f"{self.limits.header_bytes:,}-byte limit"
            )
        where = f" (reached while reading {_shown(self.last)})" if self.last else ""
        return BundleError(
            f"{self.archive}: refused: more than {self.limits.archive_bytes:,} bytes "
            f"uncompressed{where}"
        )

    def _extract(self, counted: _Counted) -> None:
        header = self.limits.header_bytes
        counted.budget = min(counted.total, counted.count + header)
        with tarfile.open(fileobj=counted, mode="r|") as tar:
            member = tar.next()
            while member is not None:
                self.members += 1
                if self.members > self.limits.archive_members:
                    raise self.refuse(
                        member.name, f"is past the {self.limits.archive_members:,}-member limit"
                    )
                self.last = member.name
                counted.budget = counted.total  # its data counts towards the total only
                unread = self._member(tar, member)
                # Stream mode keeps every TarInfo: memory per member. ``members`` is not in
                # typeshed, and getmembers() would read the rest of the stream.
                tar.members.clear()  # type: ignore[attr-defined]
                # tarfile now skips what we did not read, then reads the next header.
                counted.budget = min(counted.total, counted.count + unread + header)
                member = tar.next()

    def _member(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> int:
        """Check one member and write it if it is a bundle file; returns how many bytes of it
        are left for tarfile to skip."""
        name = member.name
        try:
            parts = _member_parts(name)
        except ValueError as err:
            raise self.refuse(name, str(err)) from None
        padded = -(-max(member.size, 0) // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
        if member.isdir():
            return padded
        if member.type not in _REGULAR:
            target = f" to {member.linkname!r}" if member.issym() or member.islnk() else ""
            raise self.refuse(name, f"is {_kind(member)}{target}: a bundle holds regular files")
        if member.size < 0:
            raise self.refuse(name, "has a negative size")
        if member.size > self.limits.log_bytes:
            raise self.refuse(name, f"is over the {self.limits.log_bytes:,}-byte limit")
        if self.loose:
            if not parts:  # "." or "./": a file with no name of its own
                self.skip(name, "has no file name")
                return padded
            rel, part, limit = self._flat(parts), "loose", self.limits.log_bytes
        else:
            in_layout = self._in_layout(parts)
            if in_layout is None:
                self.skip(name, "not a file of the bundle layout")
                return padded
            rel = in_layout
            part = layout_part(rel) or ""
            limit = self.limits.part_bytes(part)
        if member.size > limit:
            raise self.refuse(name, f"is over the {limit:,}-byte limit of {part} files")
        key = "/".join(rel)
        if key in self.written:
            raise self.refuse(name, "appears twice")
        self.written.add(key)
        self._write(tar, member, rel, limit)
        return padded - member.size

    def _flat(self, parts: list[str]) -> tuple[str, ...]:
        """A loose member's name in ``dest``: its own, or its path joined by ``_`` when two
        folders hold the same name (two pods' ``triton.log``)."""
        name = parts[-1]
        if name in self.written:
            name = "_".join(parts)
        return (name,)

    def _in_layout(self, parts: list[str]) -> tuple[str, ...] | None:
        """``parts`` relative to the bundle's folder in the archive, if in the layout."""
        if self.prefix is None:
            if layout_part(parts):
                self.prefix = ()
            elif len(parts) > 1 and layout_part(parts[1:]):
                self.prefix = (parts[0],)
            else:
                return None
        n = len(self.prefix)
        if tuple(parts[:n]) != self.prefix or not layout_part(parts[n:]):
            return None
        return tuple(parts[n:])

    def _write(
        self, tar: tarfile.TarFile, member: tarfile.TarInfo, rel: tuple[str, ...], limit: int
    ) -> None:
        src = tar.extractfile(member)
        assert src is not None  # a regular member always has a file object
        path = self.dest.joinpath(*rel)
        path.parent.mkdir(exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        flags |= getattr(os, "O_BINARY", 0)
        written = 0
        try:
            with os.fdopen(os.open(path, flags, 0o600), "wb") as out:
                while chunk := src.read(_CHUNK):
                    written += len(chunk)
                    if written > limit:  # the header lied: count what really comes
                        raise self.refuse(member.name, f"is over the {limit:,}-byte limit")
                    try:
                        out.write(chunk)
                    except OSError as err:  # a full disk is not a corrupt archive
                        raise self.refuse(member.name, f"cannot be written: {err}") from None
        except FileExistsError:
            raise self.refuse(member.name, "appears twice") from None
        except BaseException:
            path.unlink(missing_ok=True)  # never leave half a member behind
            raise
        if written != member.size:
            path.unlink(missing_ok=True)
            raise EOFError(f"member {member.name!r} ends after {written} of {member.size} bytes")


def extract_archive(
    archive: Path | str, dest: Path, *, limits: Limits = LIMITS, loose: bool = False
) -> list[str]:
    """Extract the bundle in ``archive`` into the existing empty folder ``dest``; returns
    notes on what was skipped. Raises :class:`BundleError` when the archive is refused or is
    no tar archive at all; what it had written by then is left for the caller to remove
    (:func:`~observability.bundle.layout.open_bundle` extracts into a temporary folder).
    ``loose``: every regular file, flat into ``dest``, under the same checks and limits (an
    archive of files a user gathered: ``bundle/loose.py``)."""
    return _Extractor(Path(archive), Path(dest), limits, loose).run()


def write_archive(folder: Path | str, archive: Path | str) -> Path:
    """Write a bundle folder as ``archive`` (a new ``.tar.gz``), its files in one top folder
    named like the bundle folder, meta.json first: ``tar xzf`` gives the folder back, and an
    archive cut short still opens. Only files of the layout go in, never a link."""
    folder, archive = Path(folder), Path(archive)
    top = folder.resolve().name or "bundle"
    names = [folder / "meta.json", folder / "triton.log", folder / SCRAPES]
    names += sorted(folder.glob("trace.json*"))
    for sub in ("metrics", "stats", "otlp"):
        if (folder / sub).is_dir() and not (folder / sub).is_symlink():
            names += sorted((folder / sub).iterdir())
    with archive.open("xb") as fh:
        try:
            with tarfile.open(fileobj=fh, mode="w:gz") as tar:
                for path in names:
                    rel = path.relative_to(folder).parts
                    if path.is_symlink() or not path.is_file() or layout_part(rel) is None:
                        continue
                    tar.add(path, arcname="/".join((top, *rel)), recursive=False)
        except BaseException:
            archive.unlink(missing_ok=True)
            raise
    return archive
