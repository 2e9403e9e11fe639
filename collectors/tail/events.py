"""What happened to the tailer, as typed events; ``TailStats`` counts them for self-metrics.

Why events and not log calls: the collector's own ``/metrics`` (lines skipped, truncations,
rotations) and tests both need to *count* problems, and a record can be counted, asserted
and logged; a formatted log line can only be read.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.tail.fingerprint import FileIdentity

__all__ = [
    "CheckpointProblem",
    "CheckpointWritten",
    "FileLost",
    "FileOpened",
    "LineTooLong",
    "Rotated",
    "TailError",
    "TailEvent",
    "TailStats",
    "Truncated",
    "UnterminatedDropped",
]


@dataclass(frozen=True, slots=True)
class FileOpened:
    """A file is followed from ``offset``; ``resumed`` when the offset came from a checkpoint."""

    path: str
    identity: FileIdentity
    offset: int
    resumed: bool


@dataclass(frozen=True, slots=True)
class Rotated:
    """A different file appeared at ``path``; ``old`` is drained to its end before ``new``."""

    path: str
    old: FileIdentity
    new: FileIdentity


@dataclass(frozen=True, slots=True)
class Truncated:
    """The file shrank below the read position or its first bytes changed: restart at 0."""

    path: str
    identity: FileIdentity
    size: int
    offset: int


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """A line of ``length`` bytes (terminator included, or so far) was skipped."""

    path: str
    identity: FileIdentity
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class UnterminatedDropped:
    """A rotated file ended in bytes without ``\\n``; they are not a line and are not emitted."""

    path: str
    identity: FileIdentity
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class FileLost:
    """A checkpointed file could not be found on restart (deleted or moved elsewhere)."""

    path: str
    identity: FileIdentity
    offset: int


@dataclass(frozen=True, slots=True)
class CheckpointWritten:
    path: str
    files: int


@dataclass(frozen=True, slots=True)
class CheckpointProblem:
    """The checkpoint could not be used (``status`` of ``LoadStatus``); started fresh."""

    path: str
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class TailError:
    """An OS error the tailer survived (``op`` says where); it retries on the next poll."""

    op: str
    path: str
    error: str


TailEvent = (
    FileOpened
    | Rotated
    | Truncated
    | LineTooLong
    | UnterminatedDropped
    | FileLost
    | CheckpointWritten
    | CheckpointProblem
    | TailError
)


@dataclass(frozen=True, slots=True)
class TailStats:
    """Counters since the tailer was created (not persisted: a restart starts at zero)."""

    lines_read: int = 0
    bytes_read: int = 0
    lines_skipped_too_long: int = 0
    truncations: int = 0
    rotations: int = 0
    checkpoint_writes: int = 0
    errors: int = 0
    unterminated_dropped: int = 0
    files_lost: int = 0
    copies_drained: int = 0
