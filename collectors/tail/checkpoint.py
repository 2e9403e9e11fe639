"""Read positions, persisted so that a collector killed with SIGKILL resumes exactly.

Format (versioned JSON, ``CHECKPOINT_VERSION``)::

    {"version": 1, "files": [
        {"path": "/var/log/triton.log", "dev": 64769, "inode": 1311, "fingerprint": "<sha256>",
         "fingerprint_len": 97, "complete": true, "offset": 48211}]}

``offset`` is the end of the last fully processed line of that file (where reading resumes);
``files`` lists the files still being followed, oldest first (a rotated file still being
drained before the current one). ``path`` is informational: files are matched by identity.

Why written this way: a temp file in the same folder, ``fsync``, then ``os.replace`` — a
reader (or a restart after SIGKILL or power loss) sees either the old checkpoint or the new
one, never half of one. Loading never raises: a missing, corrupt or newer-version file is a
typed ``LoadResult`` and the tailer starts fresh with a warning (duplicates are then
possible and the store dedups them; losing the collector is not).
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from typing import Any

from collectors.tail.fingerprint import FileIdentity

__all__ = [
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "CheckpointEntry",
    "LoadResult",
    "LoadStatus",
    "load_checkpoint",
    "save_checkpoint",
]

CHECKPOINT_VERSION = 1


@dataclass(frozen=True, slots=True)
class CheckpointEntry:
    """One followed file: its identity, last known path and committed offset."""

    path: str
    identity: FileIdentity
    offset: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    files: tuple[CheckpointEntry, ...] = ()


class LoadStatus(str, enum.Enum):
    OK = "ok"
    MISSING = "missing"
    UNREADABLE = "unreadable"
    CORRUPT = "corrupt"
    FUTURE_VERSION = "future_version"


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What loading found. ``checkpoint`` is empty unless ``status`` is OK."""

    status: LoadStatus
    checkpoint: Checkpoint
    detail: str = ""


def _entry(raw: Any) -> CheckpointEntry:
    if not isinstance(raw, dict):
        raise ValueError(f"file entry is not an object: {raw!r}")
    ints = {}
    for key in ("dev", "inode", "fingerprint_len", "offset"):
        v = raw.get(key)
        if type(v) is not int or v < 0:
            raise ValueError(f"{key!r} must be a non-negative integer, got {v!r}")
        ints[key] = v
    fp, path, complete = raw.get("fingerprint"), raw.get("path"), raw.get("complete")
    if not isinstance(fp, str) or not isinstance(path, str) or type(complete) is not bool:
        raise ValueError(f"bad 'fingerprint', 'path' or 'complete' in {raw!r}")
    if not complete and ints["offset"] != 0:
        raise ValueError(f"provisional identity with a non-zero offset: {raw!r}")
    identity = FileIdentity(ints["dev"], ints["inode"], fp, ints["fingerprint_len"], complete)
    return CheckpointEntry(path, identity, ints["offset"])


def load_checkpoint(path: str | os.PathLike[str]) -> LoadResult:
    """Load ``path``; never raises for a bad or absent file (see ``LoadStatus``)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return LoadResult(LoadStatus.MISSING, Checkpoint(), f"{os.fspath(path)} does not exist")
    except OSError as e:
        return LoadResult(LoadStatus.UNREADABLE, Checkpoint(), f"{os.fspath(path)}: {e}")
    try:
        doc = json.loads(raw)
    except ValueError as e:
        return LoadResult(LoadStatus.CORRUPT, Checkpoint(), f"not JSON: {e}; {raw[:80]!r}")
    if not isinstance(doc, dict) or type(doc.get("version")) is not int:
        return LoadResult(LoadStatus.CORRUPT, Checkpoint(), f"no integer 'version': {raw[:80]!r}")
    if doc["version"] > CHECKPOINT_VERSION:
        detail = f"version {doc['version']} is newer than {CHECKPOINT_VERSION}"
        return LoadResult(LoadStatus.FUTURE_VERSION, Checkpoint(), detail)
    if doc["version"] != CHECKPOINT_VERSION or not isinstance(doc.get("files"), list):
        detail = f"version {doc['version']} or 'files' not understood"
        return LoadResult(LoadStatus.CORRUPT, Checkpoint(), detail)
    try:
        files = tuple(_entry(e) for e in doc["files"])
    except ValueError as e:
        return LoadResult(LoadStatus.CORRUPT, Checkpoint(), str(e))
    return LoadResult(LoadStatus.OK, Checkpoint(files))


def save_checkpoint(
    path: str | os.PathLike[str], checkpoint: Checkpoint, fsync: bool = True
) -> None:
    """Write atomically (temp file, fsync, ``os.replace``, fsync the folder). Raises OSError.

    The temp name is fixed (``<path>.tmp``): one writer per checkpoint, and a temp file
    left by a SIGKILL is simply overwritten next time instead of piling up.
    """
    doc = {
        "version": CHECKPOINT_VERSION,
        "files": [
            {
                "path": e.path,
                "dev": e.identity.dev,
                "inode": e.identity.inode,
                "fingerprint": e.identity.fingerprint,
                "fingerprint_len": e.identity.fingerprint_len,
                "complete": e.identity.complete,
                "offset": e.offset,
            }
            for e in checkpoint.files
        ],
    }
    data = json.dumps(doc, sort_keys=True).encode()
    target = os.fspath(path)
    tmp = target + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    if fsync:
        dfd = os.open(os.path.dirname(os.path.abspath(target)), os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
