"""Follow every log file a glob matches, as files appear and go: one :class:`LogCollector` each.

Why: on Kubernetes a container's log is ``/var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log``
where ``n`` is the container's restart count. The kubelet rotates ``0.log`` by renaming it to
``0.log.<YYYYMMDD-hhmmss>`` (the :class:`~collectors.tail.tailer.Tailer` follows that: the
renamed file stays beside it), and a restarted container writes ``1.log`` while ``0.log`` stays
until the next restart. A glob over ``*.log`` finds the new file; each matched path gets its
own tailer and checkpoint (``<prefix>.<digest>.json``), and a path that is gone and read to
its end is let go after ``_GONE_POLLS`` polls with nothing new.

Rotated copies (``*.log.<timestamp>``, ``*.gz``, ``*.tmp``) are never followed as files of
their own, whatever the glob: the tailer of the live path drains them.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from pathlib import Path

from collectors.base import Batch, Collector, Health
from collectors.logs.collector import LogCollector

__all__ = ["GlobLogCollector", "is_glob"]

_ROTATED = re.compile(r"\.(?:log\.\d{8}-\d{6}|gz|tmp)$")
_GONE_POLLS = 8
"""Polls with nothing new, once the path is gone, before its file is let go."""
_RESCAN_POLLS = 4
"""The glob is re-run every this many polls (4 polls of 0.25 s: a new pod's log within a second)."""
MAX_FILES = 64
"""Files followed at once per glob: a bound on open files and memory."""


def is_glob(path: str | os.PathLike[str]) -> bool:
    return any(c in os.fspath(path) for c in "*?[")


def _order(path: str) -> tuple[str, int, str]:
    """A folder's files in restart order: ``2.log`` before ``10.log``."""
    folder, name = os.path.split(path)
    stem = name.split(".", 1)[0]
    return (folder, int(stem) if stem.isdigit() else -1, name)


class GlobLogCollector(Collector):
    signal = "log"

    def __init__(
        self,
        pattern: str,
        checkpoint_prefix: Path,
        utc_offset_s: int = 0,
        log_format: str = "auto",
    ) -> None:
        self.pattern = pattern
        self.checkpoint_prefix = checkpoint_prefix
        self.utc_offset_s = utc_offset_s
        self.log_format = log_format
        self.files: dict[str, LogCollector] = {}
        """Followed paths, in restart order."""
        self._idle: dict[str, int] = {}
        self._polls = 0
        self._dirty: set[str] = set()
        self._retired = Health()

    def _checkpoint(self, path: str) -> Path:
        digest = hashlib.sha256(path.encode()).hexdigest()[:16]
        return self.checkpoint_prefix.with_name(f"{self.checkpoint_prefix.name}.{digest}.json")

    def scan(self) -> None:
        """Start following the paths the glob matches now (at most :data:`MAX_FILES`)."""
        found = sorted((p for p in glob.glob(self.pattern) if not _ROTATED.search(p)), key=_order)
        for path in found:
            if path in self.files or len(self.files) >= MAX_FILES or not os.path.isfile(path):
                continue
            self.files[path] = LogCollector(
                path, self._checkpoint(path), self.utc_offset_s, self.log_format
            )
        self.files = dict(sorted(self.files.items(), key=lambda kv: _order(kv[0])))

    def collect(self) -> list[Batch]:
        if self._polls % _RESCAN_POLLS == 0:
            self.scan()
        self._polls += 1
        out: list[Batch] = []
        for path, collector in list(self.files.items()):
            batches = collector.collect()
            if batches:
                self._dirty.add(path)
                self._idle[path] = 0
                out.extend(batches)
                continue
            if path in self._dirty or os.path.exists(path) or collector.lag_bytes():
                continue
            self._idle[path] = self._idle.get(path, 0) + 1
            if self._idle[path] >= _GONE_POLLS:
                self._retire(path)
        return out

    def _retire(self, path: str) -> None:
        collector = self.files.pop(path)
        self._idle.pop(path, None)
        gone, kept = collector.health(), self._retired
        skipped = dict(kept.skipped)
        for reason, count in gone.skipped.items():
            skipped[reason] = skipped.get(reason, 0) + count
        self._retired = Health(read=kept.read + gone.read, skipped=skipped)
        collector.close()

    def commit(self) -> None:
        for path in self._dirty:
            collector = self.files.get(path)
            if collector is not None:
                collector.commit()
        self._dirty.clear()

    def lag_bytes(self) -> int:
        return sum(c.lag_bytes() for c in self.files.values())

    def health(self) -> Health:
        read, skipped = self._retired.read, dict(self._retired.skipped)
        for collector in self.files.values():
            h = collector.health()
            read += h.read
            for reason, count in h.skipped.items():
                skipped[reason] = skipped.get(reason, 0) + count
        return Health(read=read, skipped=skipped, lag_bytes=self.lag_bytes())

    def close(self) -> None:
        for collector in self.files.values():
            collector.close()
        self.files.clear()
