"""Write a command's output as the kubelet does: CRI lines in ``0.log``, rotated by rename.

``python -m observability.demo.crilog --file POD/triton/0.log [--plain F] [--max-bytes N]
[--keep K] -- tritonserver ...`` runs the command with its stdout and stderr (and its python
stubs') in one pipe and frames each line as ``<RFC3339Nano> stderr F <line>`` (a line longer
than :data:`MAX_LINE` goes in ``P`` pieces, the last one ``F``, as the kubelet splits them).
When ``0.log`` passes ``--max-bytes`` it is renamed ``0.log.<YYYYMMDD-HHMMSS.ffffff>`` and a
new ``0.log`` begins (the kubelet's ``containerLogMaxSize``); the oldest rotated files beyond
``--keep`` are removed (``containerLogMaxFiles``; the kubelet also gzips them, which nothing
here needs). ``--plain`` also writes the unframed output to a file (the lab reads it to quote
Triton's startup errors). Signals are passed on to the command, whose exit code this returns.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

__all__ = ["CriWriter", "main", "stamp"]

MAX_LINE = 16 * 1024
"""The kubelet's (containerd's) longest line before it splits one into ``P`` pieces."""
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def stamp(at_ns: int | None = None) -> str:
    """RFC 3339 with nanoseconds in UTC, as containerd writes it."""
    at_ns = time.time_ns() if at_ns is None else at_ns
    seconds, nanos = divmod(at_ns, 1_000_000_000)
    base = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{nanos:09d}Z"


class CriWriter:
    """CRI lines into ``path``, rotated by rename past ``max_bytes``; ``keep`` rotated files."""

    def __init__(self, path: Path, max_bytes: int = 10 * 2**20, keep: int = 4) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self.rotations = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[bytes] = path.open("ab")

    def write_line(self, line: bytes, stream: str = "stderr", at_ns: int | None = None) -> None:
        head = f"{stamp(at_ns)} {stream} ".encode()
        body = line.rstrip(b"\n")
        pieces = [body[i : i + MAX_LINE] for i in range(0, len(body), MAX_LINE)] or [b""]
        out = b"".join(
            head + (b"F " if n == len(pieces) - 1 else b"P ") + piece + b"\n"
            for n, piece in enumerate(pieces)
        )
        self._fh.write(out)
        self._fh.flush()
        if self._fh.tell() >= self.max_bytes:
            self.rotate()

    def rotate(self) -> None:
        self._fh.close()
        suffix = datetime.now(tz=timezone.utc).strftime("%Y%m%d-%H%M%S.%f")
        os.rename(self.path, self.path.with_name(f"{self.path.name}.{suffix}"))
        self.rotations += 1
        rotated = sorted(self.path.parent.glob(f"{self.path.name}.*"))
        for old in rotated[: max(0, len(rotated) - self.keep)]:
            with contextlib.suppress(OSError):
                old.unlink()
        self._fh = self.path.open("ab")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._fh.close()


def run(command: Sequence[str], path: Path, plain: Path | None, max_bytes: int, keep: int) -> int:
    """Run ``command`` with its output framed into ``path``; its exit code."""
    proc = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    writer = CriWriter(path, max_bytes, keep)
    copy = plain.open("ab") if plain is not None else None
    previous = {
        s: signal.signal(s, lambda signum, _f: proc.send_signal(signum)) for s in _FORWARDED
    }
    try:
        for line in proc.stdout:
            writer.write_line(line)
            if copy is not None:
                copy.write(line)
                copy.flush()
        return proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        writer.close()
        if copy is not None:
            copy.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crilog", description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--plain", type=Path)
    parser.add_argument("--max-bytes", type=int, default=10 * 2**20)
    parser.add_argument("--keep", type=int, default=4)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    return run(args.command, args.file, args.plain, args.max_bytes, args.keep)


if __name__ == "__main__":
    sys.exit(main())
