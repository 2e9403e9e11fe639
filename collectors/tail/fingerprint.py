"""File identity: which file a byte offset belongs to, across renames and truncations.

A path names a file only until logrotate moves it, and an inode number is recycled as soon
as a file is deleted, so the identity is ``(dev, inode)`` plus a fingerprint of the file's
first bytes: a file renamed keeps its identity, a file truncated and rewritten in place
(copytruncate) or a new file on a recycled inode gets a new one.

The fingerprint covers the first line that is not blank (with the blank ones before it),
at most ``FINGERPRINT_BYTES`` bytes: the span ends at the ``\\n`` that ends that line or
after ``FINGERPRINT_BYTES`` bytes, whichever comes first.
Why not always the first 256 bytes: the identity is half of the store's dedup key
``(identity, offset)``, so it must be final *before the first line is emitted* and never
change afterwards. A Triton log's first line is often shorter than 256 bytes and may be
the only line for a while; waiting for 256 bytes would hold it back, and hashing "what
there is so far" would give the same line a different key after a restart. Any emitted
line implies the first line is complete (or that the file has 256 bytes), so the span is
always complete by then; blank lines before it are held back until it is (``FileReader``).

Until the span is complete (a file that is empty or holds only part of its first line)
the identity is *provisional*: it hashes the bytes there are and is only used to recognise
the file again in the checkpoint (at offset 0, where nothing can be lost). No line is ever
emitted under a provisional identity.

Limitation, documented: a file truncated and rewritten with a byte-identical first line
is indistinguishable from the original; Triton's first lines carry a microsecond
timestamp, which makes this practically impossible for its logs.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

__all__ = [
    "FINGERPRINT_BYTES",
    "FileIdentity",
    "find_copy",
    "head_identity",
    "locate",
    "matches",
]

FINGERPRINT_BYTES = 256


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """``(dev, inode)`` and the hash of the fingerprint span (see the module docstring).

    ``fingerprint_len`` is how many leading bytes were hashed; ``complete`` is False for a
    provisional identity.
    """

    dev: int
    inode: int
    fingerprint: str
    fingerprint_len: int
    complete: bool


def _span(head: bytes) -> tuple[bytes, bool]:
    # Leading blank lines are part of the span but do not end it: a writer that split a line
    # across a rotation starts the next file with that line's "\n", and a span of "\n"
    # alone is the same for every such file (the hour-long soak saw it: a recycled inode
    # gave two files one identity, and a copytruncate drained an older copy).
    first = len(head) - len(head.lstrip(b"\r\n"))
    nl = head.find(b"\n", first, FINGERPRINT_BYTES)
    if nl >= 0:
        return head[: nl + 1], True
    if len(head) >= FINGERPRINT_BYTES:
        return head[:FINGERPRINT_BYTES], True
    return head, False


def head_identity(dev: int, inode: int, head: bytes) -> FileIdentity:
    """Identity of a file on ``(dev, inode)`` whose first bytes are ``head``.

    ``head`` is what the caller itself read from offset 0, so the identity describes
    exactly the bytes that were turned into lines (no second read, no race).
    """
    span, complete = _span(head)
    return FileIdentity(dev, inode, hashlib.sha256(span).hexdigest(), len(span), complete)


def matches(fd: int, identity: FileIdentity, same_inode: bool = True) -> bool:
    """True if the open file ``fd`` is on the identity's inode (unless ``same_inode`` is
    False: a copy) and starts with its span."""
    st = os.fstat(fd)
    if same_inode and (st.st_dev, st.st_ino) != (identity.dev, identity.inode):
        return False
    if identity.fingerprint_len == 0:
        return True
    span = os.pread(fd, identity.fingerprint_len, 0)
    if len(span) != identity.fingerprint_len:
        return False
    return hashlib.sha256(span).hexdigest() == identity.fingerprint


def locate(
    directory: str, identity: FileIdentity, skip: str | None = None
) -> tuple[int, str, bool] | None:
    """Find the identity's inode among ``directory``'s entries: ``(fd, path, same_content)``.

    Why: a file rotated by rename while the collector was down still holds lines the
    checkpoint has not covered; logrotate keeps it in the same folder under a new name, and
    the inode finds it whatever that name is. ``same_content`` is False when the inode is
    there but its first bytes changed (truncated and rewritten, or the inode was recycled):
    the caller then reads it from 0 as a new file.
    """
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        if entry.path == skip:
            continue
        try:
            if entry.inode() != identity.inode or not entry.is_file(follow_symlinks=False):
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_dev == identity.dev:
                return fd, entry.path, matches(fd, identity)
        except OSError:
            pass
        os.close(fd)
    return None


def find_copy(
    directory: str, identity: FileIdentity, min_size: int, prefix: str
) -> tuple[int, str] | None:
    """A copy of the identity's content beside it: ``(fd, path)``, else ``None``.

    Why: logrotate's ``copytruncate`` copies the log to ``NAME.1`` (same folder by default)
    and truncates the original. Lines the tailer had not read yet survive only in the copy,
    which starts with the same first line: a regular file named ``prefix*`` on another
    inode, at least ``min_size`` bytes long (the read position), with the same head.
    """
    if not identity.complete:
        return None
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        try:
            if (
                not entry.name.startswith(prefix)
                or entry.inode() == identity.inode
                or not entry.is_file(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_size < min_size
            ):
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if matches(fd, identity, same_inode=False):
                return fd, entry.path
        except OSError:
            pass
        os.close(fd)
    return None
