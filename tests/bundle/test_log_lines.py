"""An ingest's log lines, read a chunk at a time, are those of ``readline(limit)`` a line.

The reference below is the reader the ingest used until it read in chunks (one
``readline(limit)`` a line): the same lines, runs, offsets and skipped over-long lines for any
bytes, limit and chunk size, and never more than ``limit`` of an over-long line held.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from itertools import chain
from typing import BinaryIO

from hypothesis import given, settings
from hypothesis import strategies as st

from observability.bundle.ingest import _LogLines
from tests.hypothesis_profiles import examples


class _Reference:
    def __init__(self, fh: BinaryIO, offset: int, limit: int) -> None:
        self._fh = fh
        self.offset = offset
        self._limit = limit
        self.eof = False
        self.skipped: list[tuple[int, int]] = []

    def run(self) -> Iterator[bytes]:
        readline, limit = self._fh.readline, self._limit
        while line := readline(limit):
            if len(line) == limit and line[-1] != 10:
                start, length = self.offset, len(line)
                while (rest := readline(limit)) and rest[-1] != 10:
                    length += len(rest)
                length += len(rest)
                self.offset += length
                self.skipped.append((start, length))
                return
            self.offset += len(line)
            yield line
        self.eof = True


def _read(reader: _LogLines | _Reference) -> tuple[list[tuple[int, list[bytes]]], list[object]]:
    """Every run as the ingest makes it: the offset it starts at and its lines."""
    runs = []
    for _ in range(10_000):
        if reader.eof:
            break
        start = reader.offset
        lines = reader.run() if isinstance(reader, _Reference) else chain(*reader.runs())
        runs.append((start, list(lines)))
    return runs, [reader.offset, *reader.skipped]


_LINE = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"x")),
    # What splits lines differently elsewhere: \r (bytes.splitlines), \x85, \x0b, \x1c.
    st.lists(st.sampled_from([b"a", b"\r", b"\x85", b"\x0b", b"\x1c", b"\xff"]), max_size=12).map(
        b"".join
    ),
)


@settings(max_examples=examples(1000), deadline=None)
@given(
    lines=st.lists(st.tuples(_LINE, st.booleans()), max_size=12),
    limit=st.integers(1, 14),
    chunk=st.integers(1, 40),
    offset=st.integers(0, 5),
)
def test_chunks_read_what_readline_reads(
    lines: list[tuple[bytes, bool]], limit: int, chunk: int, offset: int
) -> None:
    data = b"".join(text + (b"\n" if ended else b"") for text, ended in lines)
    got = _read(_LogLines(io.BytesIO(data), offset, limit, chunk=chunk))
    assert got == _read(_Reference(io.BytesIO(data), offset, limit))


def test_an_over_long_line_is_never_held_whole() -> None:
    """A 64 MiB line, limit 1 KiB: what the reader holds stays within a chunk and the limit."""

    class Watched(io.RawIOBase):
        def __init__(self) -> None:
            self.left = (64 << 20) + 1

        def readable(self) -> bool:
            return True

        def readinto(self, b: bytearray) -> int:  # type: ignore[override]
            n = min(len(b), self.left)
            if n:  # the line's last byte is its newline
                memoryview(b)[:n] = b"a" * (n - 1) + (b"\n" if n == self.left else b"a")
            self.left -= n
            return n

    raw = Watched()
    reader = _LogLines(io.BufferedReader(raw), 0, 1024, chunk=4096)
    runs, tail = _read(reader)
    assert runs == [(0, []), ((64 << 20) + 1, [])]  # skipped, then the end
    assert tail == [(64 << 20) + 1, (0, (64 << 20) + 1)]
    assert len(reader._buf) <= 4096 + 1024
