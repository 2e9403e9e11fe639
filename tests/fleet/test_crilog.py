"""The kubelet-like writer of the fleet in a box: CRI framing, long lines in pieces, rotation by
rename with a bounded number of rotated files; read back by the CRI framing watch uses."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from collectors.logs.framing import _CRI
from observability.demo.crilog import MAX_LINE, CriWriter, main, stamp

LINE = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z stderr [FP] ")


def test_stamp_is_rfc3339_nano_utc() -> None:
    assert stamp(1_795_322_491_000_000_007) == "2026-11-22T04:41:31.000000007Z"


def test_lines_are_framed_and_long_ones_split(tmp_path: Path) -> None:
    log = tmp_path / "pod" / "triton" / "0.log"
    writer = CriWriter(log)
    writer.write_line(b"I1125 18:00:00.000000 1 server.cc:1] started\n")
    writer.write_line(b"x" * (MAX_LINE * 2 + 5) + b"\n")
    writer.close()
    lines = log.read_bytes().splitlines()
    assert all(LINE.match(line) and _CRI.match(line) for line in lines)
    assert [line.split(b" ")[2] for line in lines] == [b"F", b"P", b"P", b"F"]
    assert b"".join(line.split(b" ", 3)[3] for line in lines[1:]) == b"x" * (MAX_LINE * 2 + 5)


def test_rotation_renames_and_keeps_a_few(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    writer = CriWriter(log, max_bytes=200, keep=2)
    for i in range(40):
        writer.write_line(b"line %d with some words to fill it\n" % i)
    writer.close()
    rotated = sorted(tmp_path.glob("0.log.*"))
    assert writer.rotations >= 5 and len(rotated) == 2
    assert all(re.fullmatch(r"0\.log\.\d{8}-\d{6}\.\d{6}", p.name) for p in rotated)
    assert log.stat().st_size < 200 + 100
    assert b"line 39 " in log.read_bytes()


def test_a_command_s_output_and_exit_code(tmp_path: Path) -> None:
    log, plain = tmp_path / "0.log", tmp_path / "plain.log"
    script = "import sys; print('out', flush=True); print('err', file=sys.stderr); sys.exit(3)"
    code = main(["--file", str(log), "--plain", str(plain), "--", sys.executable, "-c", script])
    assert code == 3
    assert plain.read_text().splitlines() == ["out", "err"]
    assert [line.split(" ", 3)[3] for line in log.read_text().splitlines()] == ["out", "err"]
