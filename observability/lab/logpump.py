"""Copy a server's output from a pipe into a log file that may be rotated under it.

Why: Triton writes its verbose log to one descriptor for its whole life; renaming the file
leaves Triton writing into the renamed one. Production setups rotate by rename + create
only where a log driver owns the file (a container runtime, systemd, a ``rotatelogs``
pipe). This pump plays that part for the lab: it reopens the path whenever the file there
is no longer the one it holds open, so a test can rotate the log the way those setups do.

It writes whole lines, as a container runtime's log driver does: a pipe hands over whatever
the server has written so far, often half a line, and a second writer appending to the same
file in between (another process, a test's garbage) would split that line in two and lose it
for every reader. A tail with no newline yet is held until the rest comes, and written as it
is once the server has said nothing more for ``hold_s`` (a stub's unterminated output, the
last words of a crash), when it outgrows ``_MAX_HELD`` bytes, or at the end of the pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from pathlib import Path
from typing import IO

__all__ = ["LogPump"]

_CHUNK = 64 * 1024
_MAX_HELD = 1 << 20
"""A line longer than this is written in pieces: the file must not wait on a runaway writer."""


class LogPump:
    """A thread from ``source`` (a pipe) to ``path``, opened for append, reopened on rename."""

    def __init__(
        self, source: IO[bytes], path: Path, mirror: int | None = None, hold_s: float = 0.2
    ) -> None:
        self.source = source
        self.path = path
        self.mirror = mirror
        """A descriptor that gets every chunk too (a container's stdout: ``docker logs``)."""
        self.hold_s = hold_s
        """How long a line's start waits for its end before it is written alone."""
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
        fd = self.source.fileno()  # read unbuffered: select() must see all that is unread
        held = bytearray()
        try:
            while True:
                if held and not select.select([fd], [], [], self.hold_s)[0]:
                    self._write(held)  # the server went quiet mid-line: write what it said
                    held.clear()
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    break
                if self.mirror is not None:
                    with contextlib.suppress(OSError):  # nobody reading it stops nothing
                        os.write(self.mirror, chunk)
                held += chunk
                whole = held.rfind(b"\n") + 1 if len(held) < _MAX_HELD else len(held)
                if whole:
                    self._write(held[:whole])
                    del held[:whole]
        finally:
            if held:
                self._write(held)
            with contextlib.suppress(OSError):
                os.close(self._fd)
            with contextlib.suppress(OSError):
                self.source.close()

    def _write(self, data: bytearray) -> None:
        if self._moved():
            os.close(self._fd)
            self._open()
            self.reopened += 1
        view = memoryview(bytes(data))  # a copy: the caller clears ``data`` next
        while view:
            try:
                written = os.write(self._fd, view)
            except OSError:
                return  # a full disk loses these lines, never the server's pipe
            view = view[written:]
