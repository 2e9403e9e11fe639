"""The soak's moving parts: the collector as a killable process, a disk that fills, a log
that rotates and receives garbage, and the fault schedule with its expected findings.

Each fault is done to real things the way production does it: SIGKILL to the collector's
process, a tmpfs that really runs out of space, rename/copytruncate on the live log while
Triton writes it, a real Triton restart.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CollectorProcess",
    "DiskFiller",
    "FaultWindow",
    "RssSampler",
    "append_garbage",
    "copytruncate",
    "rotate",
]


@dataclass
class FaultWindow:
    """One injected fault: when, and the finding (kind, model) it must produce, if any."""

    name: str
    start: float
    """``time.time()`` at injection."""
    end: float = 0.0
    finds: tuple[str, str] | None = None
    note: str = ""
    lost_bytes: int = 0
    """Bytes the fault itself destroyed (copytruncate's race), for every reader."""
    race: tuple[float, float] = (0.0, 0.0)


@dataclass
class CollectorProcess:
    """``triton-obs watch`` as a user runs it, restartable from its checkpoint."""

    args: list[str]
    out_dir: Path
    incarnation: int = 0
    proc: subprocess.Popen[bytes] | None = None
    metrics_url: str = ""
    outputs: list[Path] = field(default_factory=list)

    def start(self) -> None:
        self.incarnation += 1
        out = self.out_dir / f"collector.{self.incarnation}.out"
        self.outputs.append(out)
        with out.open("wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "observability.cli", "watch", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"http://127\.0\.0\.1:\d+/metrics", out.read_text(errors="replace"))
            if found:
                self.metrics_url = found.group()
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"collector exited: {out.read_text(errors='replace')}")
            time.sleep(0.1)
        raise RuntimeError(f"collector did not start: {out.read_text(errors='replace')}")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def terminate(self, timeout_s: float = 60) -> int:
        """SIGTERM, as a service manager stops it; the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9

    def output(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.outputs if p.exists())


class RssSampler:
    """The collector's resident memory once a second: ``(elapsed s, incarnation, MiB)``."""

    def __init__(self, collector: CollectorProcess, interval_s: float = 1.0) -> None:
        self.collector = collector
        self.interval_s = interval_s
        self.samples: list[tuple[float, int, float]] = []
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            pid, inc = self.collector.pid, self.collector.incarnation
            if pid is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                status = Path(f"/proc/{pid}/status").read_text()
                found = re.search(r"VmRSS:\s+(\d+)", status)
                if found:  # an exiting process has no VmRSS line any more
                    self.samples.append((time.monotonic() - self._t0, inc, int(found[1]) / 1024))


class DiskFiller:
    """A small tmpfs under the store; ``fill()`` takes every free byte, ``release()`` frees it.

    A tmpfs is a real filesystem running out of space (ENOSPC, SQLite's "database or disk is
    full"), which a size cap inside SQLite would only imitate. Mounting needs privileges;
    ``mounted`` says whether it worked.
    """

    def __init__(self, mountpoint: Path, size_mb: int) -> None:
        self.mountpoint = mountpoint
        self.size_mb = size_mb
        self.mounted = False
        self.why_not = ""
        self.filler = mountpoint / "filler"

    def mount(self) -> bool:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        mount = shutil.which("mount")
        if mount is None:
            self.why_not = "no mount command"
            return False
        done = subprocess.run(
            [mount, "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.mountpoint)],
            capture_output=True,
            text=True,
        )
        self.mounted = done.returncode == 0
        self.why_not = done.stderr.strip()
        return self.mounted

    def fill(self) -> int:
        """Write zeros until ENOSPC; the bytes taken."""
        taken = 0
        chunk = b"\0" * (1 << 20)
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                try:
                    taken += os.write(fd, chunk)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    chunk = chunk[: len(chunk) // 2]
                    if len(chunk) < 512:
                        return taken
        finally:
            os.close(fd)

    def free_bytes(self) -> int:
        st = os.statvfs(self.mountpoint)
        return st.f_bavail * st.f_frsize

    def release(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)
            self.mounted = False


def rotate(log: Path, suffix: str) -> Path:
    """Rename rotation; the lab's log pump creates the new file at its next write."""
    target = log.with_name(f"{log.name}.{suffix}")
    os.rename(log, target)
    return target


def copytruncate(log: Path, suffix: str) -> tuple[Path, int, float, float]:
    """logrotate's ``copytruncate``: copy the live file aside, then truncate it in place.

    Returns the copy, the bytes written between the copy and the truncate (lost for every
    reader: logrotate's documented race) and when that race began and ended (time.time())."""
    target = log.with_name(f"{log.name}.{suffix}")
    began = time.time()
    shutil.copyfile(log, target)
    with log.open("r+b") as fh:
        lost = max(0, os.fstat(fh.fileno()).st_size - target.stat().st_size)
        fh.truncate(0)
    return target, lost, began, time.time()


def _glog_header(now: float) -> bytes:
    t = time.gmtime(now)
    micros = int((now % 1) * 1e6)
    return b"I%02d%02d %02d:%02d:%02d.%06d %d soak.cc:1] " % (
        t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, micros, os.getpid(),
    )  # fmt: skip


GARBAGE_EXCEPTION = b"ValueError: soak garbage"


def append_garbage(log: Path) -> int:
    """Binary junk, a 1 MB line, invalid UTF-8 and a stub traceback glued to a Triton line,
    each one ``write(2)`` on an O_APPEND descriptor as a second writer of the log would."""
    pieces = [
        bytes(range(256)) * 4 + b"\n",
        b"x" * (1 << 20) + b"\n",
        b"\xff\xfe invalid \xc3\x28 utf-8 \xed\xa0\x80\n",
        b"Traceback (most recent call last):\n"
        b'  File "/models/soak/1/model.py", line 7, in execute\n'
        + GARBAGE_EXCEPTION
        + _glog_header(time.time())
        + b"soak: a Triton line glued to the stub's unterminated output\n",
    ]
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        for piece in pieces:
            os.write(fd, piece)
    finally:
        os.close(fd)
    return sum(len(p) for p in pieces)
