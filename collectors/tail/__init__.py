"""Tail Triton's verbose log: raw ``\\n``-terminated lines with stable ``(file, offset)``.

Split by concern (as vector's ``lib/file-source``): ``fingerprint`` (which file is this),
``checkpoint`` (where were we, persisted atomically), ``reader`` (one open file into
lines), ``tailer`` (one path through rotation, truncation and restarts), ``events``
(what happened, for self-metrics). Parsing the lines is ``collectors.logs``' job.
"""

from collectors.tail.checkpoint import (
    CHECKPOINT_VERSION,
    Checkpoint,
    CheckpointEntry,
    LoadResult,
    LoadStatus,
    load_checkpoint,
    save_checkpoint,
)
from collectors.tail.events import TailEvent, TailStats
from collectors.tail.fingerprint import FINGERPRINT_BYTES, FileIdentity
from collectors.tail.tailer import Line, Tailer

__all__ = [
    "CHECKPOINT_VERSION",
    "FINGERPRINT_BYTES",
    "Checkpoint",
    "CheckpointEntry",
    "FileIdentity",
    "Line",
    "LoadResult",
    "LoadStatus",
    "TailEvent",
    "TailStats",
    "Tailer",
    "load_checkpoint",
    "save_checkpoint",
]
