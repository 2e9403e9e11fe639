"""What every source of signals is to the rest of the program: a :class:`Collector`.

Why one shape: the collect runner, the store and the bundle reader used to know each source
by name (a field per collector, ``isinstance`` to pick its signal), so a new source touched
a dozen files. Now a collector says which signal it is, hands out its records in
:class:`Batch` es, and reports its :class:`Health`; the runner iterates a list of them
(``observability/collect/sources.py``), the store routes records by type
(``observability/store/schema.py``). As in ``prometheus_client``'s collector protocol,
``collect()`` is the one method that matters; the lifecycle methods default to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

__all__ = ["Batch", "Collector", "Health"]


class Batch(NamedTuple):
    """Records from one stream. A tuple, so ``for source, events in collect()`` reads it."""

    source: str
    """The stream the records came from, part of their store key: a log file's identity
    (``log:dev:inode:fingerprint``), a trace file's path; ``""`` where every record names
    its own origin (a scrape names its target, an OTLP span its ids)."""
    events: Sequence[object]
    """Typed records of ``observability.events``, in the order the source gave them."""


@dataclass(frozen=True, slots=True)
class Health:
    """How a collector is doing, in the same words for every source (self-metrics, status)."""

    up: bool = True
    """The source answered its last attempt (a scrape worked, a receiver is listening)."""
    last_error: str = ""
    """Why the last attempt failed or the last problem met, ``""`` when none."""
    read: int = 0
    """Units read over the collector's life: log lines, /metrics pages, stats answers, trace
    files, OTLP spans."""
    skipped: Mapping[str, int] = field(default_factory=dict)
    """Units read but dropped, by reason (a log line's skip reason, a malformed entry)."""
    lag_bytes: int = 0
    """Bytes the source has written that are not read yet (the log tailer's lag)."""


class Collector(Protocol):
    """A source of typed records. Subclass it to inherit the no-op lifecycle methods."""

    signal: str
    """The signal's name: the store part, the self-metrics label, the bundle part
    (``metrics``, ``stats``, ``log``, ``traces``, ``otlp``)."""

    def collect(self) -> list[Batch]:
        """What appeared since the last call (nothing new: ``[]``); never raises for a
        source that is down: that is a record (``ScrapeStatus``) or ``health()``."""
        ...

    def health(self) -> Health:
        """Cheap: the runner asks every cycle."""
        ...

    def start(self) -> object:
        """Open what must listen (a receiver's socket thread); idempotent."""
        return self

    def commit(self) -> None:
        """Everything ``collect()`` returned so far is stored: remember the position."""
        return None

    def close(self) -> None:
        """Release files, sockets and threads; the collector is not used again."""
        return None
