"""A tailer process killed with SIGKILL mid-stream and restarted loses and duplicates nothing.

The consumer records a line, then commits it: a kill between the two re-emits the batch in
flight, with the same ``(identity, offset)``, which the store dedups. So the assertion is:
every written line is recorded; every duplicate record is byte-identical to its first
(same key, same data); and there are no more duplicates than one batch per kill.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import collectors.tail.tailer as tailer_mod

HERE = Path(__file__).parent
CONSUMER = HERE / "tail_consumer.py"
LINES = 20_000
KILLS = 6


def _writer(log: Path, done: threading.Event) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i in range(LINES):
        if i in (LINES // 3, 2 * LINES // 3):  # rename rotation, twice
            os.close(fd)
            os.rename(log, log.with_name(f"{log.name}.{i}"))
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b"W%07d %s\n" % (i, b"x" * (i % 37)))
        if i % 400 == 0:
            time.sleep(0.04)
    os.close(fd)
    done.set()


def _start(log: Path, ckpt: Path, records: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(tailer_mod.__file__).parents[2])}
    return subprocess.Popen(
        [sys.executable, str(CONSUMER), str(log), str(ckpt), str(records)], env=env
    )


def _records(path: Path) -> list[tuple[bytes, int, bytes]]:
    """The records written so far; a last one still being written (read while the consumer
    runs: a read may see part of a write) is left for the next look."""
    out = []
    for raw in path.read_bytes().splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break
        fp, off, data = raw.split(b" ", 2)
        out.append((fp, int(off), data))
    return out


def test_sigkill_and_restart_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    log, ckpt, records = tmp_path / "triton.log", tmp_path / "ckpt.json", tmp_path / "rec"
    rng = random.Random(1234)
    done = threading.Event()
    writer = threading.Thread(target=_writer, args=(log, done), daemon=True)
    log.touch()
    proc = _start(log, ckpt, records)
    # The writer starts once the first consumer has checkpointed the log: a tailer with no
    # checkpoint starts fresh at the current file, so a consumer slower to start than the
    # writer's two rotations (a loaded box) would begin after them, by design.
    deadline = time.monotonic() + 30
    while not ckpt.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    writer.start()
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.15, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc = _start(log, ckpt, records)
        writer.join(60)
        assert done.is_set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = {data for _, _, data in _records(records)} if records.exists() else set()
            if len(seen) >= LINES:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    recs = _records(records)
    expected = {b"W%07d %s\n" % (i, b"x" * (i % 37)) for i in range(LINES)}
    by_data: dict[bytes, tuple[bytes, int]] = {}
    for fp, off, data in recs:
        assert data in expected, f"phantom record {data!r}"
        assert by_data.setdefault(data, (fp, off)) == (fp, off), "duplicate with another key"
    assert set(by_data) == expected, f"lost {len(expected - set(by_data))} lines"
    dups = sum(n - 1 for n in Counter(data for _, _, data in recs).values())
    per_batch = 4096 // len(b"W0000000 \n") + 1
    assert dups <= KILLS * per_batch, dups
