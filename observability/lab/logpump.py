"""Copy a server's output from a pipe into a log file that may be rotated under it.

Why: Triton writes its verbose log to one descriptor for its whole life; renaming the file
leaves Triton writing into the renamed one. Production setups rotate by rename + create
only where a log driver owns the file (a container runtime, systemd, a ``rotatelogs``
pipe). This pump plays that part for the lab: it reopens the path whenever the file there
is no longer the one it holds open, so a test can rotate the log the way those setups do.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import IO

__all__ = ["LogPump"]

_CHUNK = 64 * 1024


class LogPump:
    """A thread from ``source`` (a pipe) to ``path``, opened for append, reopened on rename."""

    def __init__(self, source: IO[bytes], path: Path, mirror: int | None = None) -> None:
        self.source = source
        self.path = path
        self.mirror = mirror
        """A descriptor that gets every chunk too (a container's stdout: ``docker logs``)."""
        self.reopened = 0
        self._fd = -1
        self._thread = threading.Thread(target=self._run, name="lab-log-pump", daemon=True)

    def start(self) -> LogPump:
        self._open()
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _open(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _moved(self) -> bool:
        try:
            on_path = os.stat(self.path)
        except FileNotFoundError:
            return True
        held = os.fstat(self._fd)
        return (on_path.st_dev, on_path.st_ino) != (held.st_dev, held.st_ino)

    def _run(self) -> None:
        read = getattr(self.source, "read1", self.source.read)
        try:
            while chunk := read(_CHUNK):
                if self._moved():
                    os.close(self._fd)
                    self._open()
                    self.reopened += 1
                if self.mirror is not None:
                    with contextlib.suppress(OSError):  # nobody reading it stops nothing
                        os.write(self.mirror, chunk)
                view = memoryview(chunk)
                while view:
                    try:
                        written = os.write(self._fd, view)
                    except OSError:
                        break  # a full disk loses this chunk, never the server's pipe
                    view = view[written:]
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            with contextlib.suppress(OSError):
                self.source.close()
