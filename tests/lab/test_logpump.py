"""The log pump (``triton-obs logpipe``, the lab's piped log) writes whole lines: a second
writer appending to the file while the server is mid-line must not split the server's line.
Real pipes and a real file; no Triton needed (the server is this test, writing to the pipe)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from observability.lab.logpump import LogPump

LINE = b"I1126 17:00:00.000001 1 infer_request.cc:131] [request id: r-7] prepared: [0x0x1] \n"
GARBAGE = b"\xff\xfe a second writer's junk\n"


def _append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _wait_for(path: Path, want: bytes, timeout_s: float = 10.0) -> bytes:
    deadline = time.monotonic() + timeout_s
    while want not in (text := path.read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return text


def test_a_line_written_in_two_pieces_stays_whole_around_another_writer(tmp_path: Path) -> None:
    log = tmp_path / "triton.log"
    r, w = os.pipe()
    pump = LogPump(os.fdopen(r, "rb"), log, hold_s=30).start()
    try:
        os.write(w, b"I1126 boot done\n" + LINE[:40])
        _wait_for(log, b"boot done\n")
        time.sleep(0.1)  # the pump has read the line's start by now
        _append(log, GARBAGE)
        os.write(w, LINE[40:])
        text = _wait_for(log, LINE)
    finally:
        os.close(w)
        pump.join(timeout=10)
    assert LINE in text
    assert text.count(GARBAGE) == 1


def test_a_tail_without_newline_is_written_once_the_server_goes_quiet(tmp_path: Path) -> None:
    """A stub's unterminated output, or a crash's last half line, is not held forever."""
    log = tmp_path / "triton.log"
    r, w = os.pipe()
    pump = LogPump(os.fdopen(r, "rb"), log, hold_s=0.1).start()
    try:
        os.write(w, b"I1126 whole\nno newline yet")
        text = _wait_for(log, b"no newline yet")
    finally:
        os.close(w)
        pump.join(timeout=10)
    assert text == b"I1126 whole\nno newline yet"


def test_the_held_tail_is_written_at_the_end_of_the_pipe(tmp_path: Path) -> None:
    log = tmp_path / "triton.log"
    r, w = os.pipe()
    pump = LogPump(os.fdopen(r, "rb"), log, hold_s=30).start()
    os.write(w, b"last words")
    os.close(w)
    pump.join(timeout=10)
    assert log.read_bytes() == b"last words"
