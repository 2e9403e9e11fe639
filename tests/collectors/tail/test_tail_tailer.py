"""The tailer on real files: every rotation, truncation and restart case, one test each."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collectors.tail import Line, Tailer
from collectors.tail.events import (
    CheckpointProblem,
    FileLost,
    LineTooLong,
    Rotated,
    TailEvent,
    Truncated,
    UnterminatedDropped,
)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "triton.log"


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    return tmp_path / "state" / "tail.json"


@pytest.fixture(autouse=True)
def _state_dir(ckpt: Path) -> None:
    ckpt.parent.mkdir()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def data(lines: list[Line]) -> list[bytes]:
    return [ln.data for ln in lines]


def tailer(log: Path, ckpt: Path, events: list[TailEvent] | None = None, **kw) -> Tailer:
    return Tailer(log, ckpt, on_event=events.append if events is not None else None, **kw)


def _read_then_stop(log: Path, ckpt: Path, first: bytes) -> None:
    """A collector that read and committed ``first``, then stopped (a restart test's start)."""
    append(log, first)
    t = tailer(log, ckpt)
    t.commit(t.poll())
    t.close()


def test_waits_for_the_file_then_reads_lines_with_offsets(log: Path, ckpt: Path) -> None:
    t = tailer(log, ckpt)
    assert t.poll() == [] and t.poll() == []
    append(log, b"one\ntwo\n")
    lines = t.poll()
    assert [(ln.offset, ln.data) for ln in lines] == [(0, b"one\n"), (4, b"two\n")]
    assert lines[0].file == lines[1].file and lines[0].file.complete
    assert lines[1].end == 8
    assert t.poll() == []
    s = t.stats()
    assert (s.lines_read, s.bytes_read) == (2, 8)


def test_partial_line_is_held_until_its_newline(log: Path, ckpt: Path) -> None:
    append(log, b"par")
    t = tailer(log, ckpt)
    assert t.poll() == []
    append(log, b"tial")
    assert t.poll() == []
    append(log, b" line\nnext")
    lines = t.poll()
    assert [(ln.offset, ln.data) for ln in lines] == [(0, b"partial line\n")]
    append(log, b"\n")
    assert [(ln.offset, ln.data) for ln in t.poll()] == [(13, b"next\n")]


def test_binary_junk_is_passed_through(log: Path, ckpt: Path) -> None:
    junk = b"\xff\xfe\x00bad utf8 \xc3\x28\r\n"
    append(log, b"ok\n" + junk)
    assert data(tailer(log, ckpt).poll()) == [b"ok\n", junk]


def test_rename_rotation_reads_old_file_to_its_end_first(log: Path, ckpt: Path) -> None:
    events: list[TailEvent] = []
    append(log, b"a1\n")
    t = tailer(log, ckpt, events)
    assert data(t.poll()) == [b"a1\n"]
    with open(log, "ab") as old_writer:  # the writer's fd survives the rename
        log.rename(log.with_name("triton.log.1"))
        append(log, b"b1\n")
        old_writer.write(b"a2\n")
        old_writer.flush()
        first = t.poll()
        assert data(first) == [b"a2\n", b"b1\n"]
        assert first[0].file != first[1].file and first[0].offset == 3
        old_writer.write(b"a3\n")  # late write, within the grace poll
    assert data(t.poll()) == [b"a3\n"]
    append(log, b"b2\n")
    assert data(t.poll()) == [b"b2\n"]
    assert t.stats().rotations == 1
    assert [type(e) for e in events if isinstance(e, Rotated)] == [Rotated]


def test_rotation_with_path_missing_for_a_while(log: Path, ckpt: Path) -> None:
    append(log, b"a1\n")
    t = tailer(log, ckpt)
    t.poll()
    log.rename(log.with_name("triton.log.1"))
    append(log.with_name("triton.log.1"), b"a2\n")
    assert data(t.poll()) == [b"a2\n"]  # nothing at path: keep reading the open file
    append(log, b"b1\n")
    assert data(t.poll()) == [b"b1\n"]


def test_copytruncate_restarts_at_zero_and_counts(log: Path, ckpt: Path) -> None:
    events: list[TailEvent] = []
    append(log, b"first line\nsecond line\n")
    t = tailer(log, ckpt, events)
    before = t.poll()
    log.with_name("triton.log.1").write_bytes(log.read_bytes())  # the copy
    os.truncate(log, 0)
    append(log, b"new\n")  # shorter than the old offset
    after = t.poll()
    assert [(ln.offset, ln.data) for ln in after] == [(0, b"new\n")]
    assert after[0].file != before[0].file
    assert t.stats().truncations == 1
    assert any(isinstance(e, Truncated) for e in events)


def test_truncate_and_regrow_past_offset_is_caught_by_fingerprint(log: Path, ckpt: Path) -> None:
    append(log, b"old 1\n")
    t = tailer(log, ckpt)
    t.poll()
    os.truncate(log, 0)
    append(log, b"brand new first line\nmore\n")  # bigger than the old offset already
    assert data(t.poll()) == [b"brand new first line\n", b"more\n"]
    assert t.stats().truncations == 1


def test_truncate_to_zero(log: Path, ckpt: Path) -> None:
    append(log, b"x1\nx2\n")
    t = tailer(log, ckpt)
    t.poll()
    os.truncate(log, 0)
    assert t.poll() == []
    assert t.stats().truncations == 1
    assert t.poll() == [] and t.stats().truncations == 1  # counted once
    append(log, b"y1\n")
    assert [(ln.offset, ln.data) for ln in t.poll()] == [(0, b"y1\n")]


def test_over_long_line_is_skipped_and_the_file_continues(log: Path, ckpt: Path) -> None:
    events: list[TailEvent] = []
    t = tailer(log, ckpt, events, max_line_bytes=16)
    append(log, b"ok 1\n" + b"L" * 40)
    assert data(t.poll()) == [b"ok 1\n"]
    append(log, b"L" * 40)  # still the same line: nothing buffered meanwhile
    assert t.poll() == []
    append(log, b"L\nok 2\n" + b"x" * 15 + b"\n" + b"y" * 16 + b"\n")
    assert data(t.poll()) == [b"ok 2\n", b"x" * 15 + b"\n"]
    s = t.stats()
    assert s.lines_skipped_too_long == 2
    skips = [e for e in events if isinstance(e, LineTooLong)]
    assert [(e.offset, e.length) for e in skips] == [(5, 82), (87 + 5 + 16, 17)]


def test_skipped_line_advances_the_checkpoint(log: Path, ckpt: Path) -> None:
    append(log, b"ok\n" + b"z" * 50 + b"\n")
    t = tailer(log, ckpt, max_line_bytes=10)
    t.commit(t.poll())
    t.close()
    (entry,) = json.loads(ckpt.read_text())["files"]
    assert entry["offset"] == 54
    t2 = tailer(log, ckpt, max_line_bytes=10)
    assert t2.poll() == [] and t2.stats().lines_skipped_too_long == 0


def test_file_deleted_is_read_to_its_end_then_the_new_one(log: Path, ckpt: Path) -> None:
    append(log, b"a1\n")
    t = tailer(log, ckpt)
    t.poll()
    with open(log, "ab") as writer:
        log.unlink()
        writer.write(b"a2\n")
        writer.flush()
        assert data(t.poll()) == [b"a2\n"]
        assert t.poll() == []
    append(log, b"b1\n")
    assert data(t.poll()) == [b"b1\n"]


def test_poll_is_bounded(log: Path, ckpt: Path) -> None:
    append(log, b"".join(b"%04d\n" % i for i in range(1000)))
    t = tailer(log, ckpt, max_bytes_per_poll=1000)
    got = []
    sizes = []
    while batch := t.poll():
        sizes.append(len(batch))
        got += batch
    assert max(sizes) == 200 and len(got) == 1000
    assert [ln.offset for ln in got] == [5 * i for i in range(1000)]


def test_checkpoint_moves_only_on_commit(log: Path, ckpt: Path) -> None:
    append(log, b"l1\nl2\nl3\n")
    t = tailer(log, ckpt)
    lines = t.poll()
    offsets = lambda: [e["offset"] for e in json.loads(ckpt.read_text())["files"]]  # noqa: E731
    assert offsets() == [0]  # the file is recorded when opened, at offset 0
    t.commit(lines[1:2])  # a gap before it: nothing may move yet
    assert offsets() == [0]
    t.commit(lines[:1])
    assert offsets() == [6]
    t.commit_through(lines[2])
    assert offsets() == [9]
    append(log, b"l4\nl5\nl6\n")
    more = t.poll()
    t.commit_through(more[1])  # covers l4 too
    assert offsets() == [15]
    t.commit(more[2:])
    t.commit(more)  # committing again is a no-op
    assert offsets() == [18]
    t.close()


def test_restart_resumes_after_the_last_committed_line(log: Path, ckpt: Path) -> None:
    append(log, b"l1\nl2\nl3\n")
    t = tailer(log, ckpt)
    lines = t.poll()
    t.commit(lines[:2])
    t.close()  # as after SIGKILL: l3 was emitted but never committed
    append(log, b"l4\n")
    t2 = tailer(log, ckpt)
    again = t2.poll()
    assert [(ln.offset, ln.data) for ln in again] == [(6, b"l3\n"), (9, b"l4\n")]
    assert again[0] == lines[2]  # same (identity, offset, data): the store dedups it


def test_restart_after_rename_rotation_while_down(log: Path, ckpt: Path) -> None:
    _read_then_stop(log, ckpt, b"a1\n")
    append(log, b"a2\n")
    log.rename(log.with_name("triton.log.1"))
    append(log, b"b1\n")
    log.with_name("triton.log.1").rename(log.with_name("triton.log.2"))
    t2 = tailer(log, ckpt)
    assert data(t2.poll()) == [b"a2\n", b"b1\n"]


def _drain(t: Tailer, polls: int = 6) -> list[bytes]:
    out: list[bytes] = []
    for _ in range(polls):
        lines = t.poll()
        t.commit(lines)
        out += data(lines)
    return out


def test_restart_after_two_rotations_while_down_reads_the_generation_between(
    log: Path, ckpt: Path
) -> None:
    """The test_tail_sigkill failure under load: a consumer down across two rotations lost
    the middle file (neither in its checkpoint nor at the path any more)."""
    old = log.with_name("triton.log.0")
    old.write_bytes(b"older\n")  # a generation from before, already read by someone
    os.utime(old, ns=(1, 1))
    _read_then_stop(log, ckpt, b"a1\n")
    append(log, b"a2\n")
    log.rename(log.with_name("triton.log.6666"))
    append(log, b"b1\nb2\n")
    log.rename(log.with_name("triton.log.13333"))
    append(log, b"c1\n")
    events: list[TailEvent] = []
    t2 = tailer(log, ckpt, events)
    assert _drain(t2) == [b"a2\n", b"b1\n", b"b2\n", b"c1\n"]
    t2.close()
    append(log, b"c2\n")
    assert _drain(tailer(log, ckpt)) == [b"c2\n"]  # and not one of them twice


def test_two_rotations_between_polls_read_the_generation_between(log: Path, ckpt: Path) -> None:
    append(log, b"a1\n")
    t = tailer(log, ckpt)
    assert _drain(t, 1) == [b"a1\n"]
    log.rename(log.with_name("triton.log-1"))
    append(log, b"b1\n")
    log.rename(log.with_name("triton.log-2"))
    append(log, b"c1\n")
    log.with_name("triton.log-3.gz").write_bytes(b"\x1f\x8b compressed, never read\n")
    assert _drain(t) == [b"b1\n", b"c1\n"]
    assert t.stats().rotations == 2


def test_restart_finds_a_file_opened_but_never_committed(log: Path, ckpt: Path) -> None:
    append(log, b"a1\n")
    t = tailer(log, ckpt)
    t.commit(t.poll())
    log.rename(log.with_name("triton.log.1"))
    append(log, b"b1\n")
    assert data(t.poll()) == [b"b1\n"]  # emitted, never committed
    t.close()
    log.rename(log.with_name("triton.log.2"))  # rotated again while down
    append(log, b"c1\n")
    assert data(tailer(log, ckpt).poll()) == [b"b1\n", b"c1\n"]


def test_restart_after_copytruncate_while_down(log: Path, ckpt: Path) -> None:
    append(log, b"a long first line\na2\n")
    t = tailer(log, ckpt)
    t.commit(t.poll())
    t.close()
    os.truncate(log, 0)
    append(log, b"n1\n")
    t2 = tailer(log, ckpt)
    assert [(ln.offset, ln.data) for ln in t2.poll()] == [(0, b"n1\n")]
    assert t2.stats().truncations == 1


def test_rotated_file_lost_while_down_is_reported(log: Path, ckpt: Path) -> None:
    events: list[TailEvent] = []
    _read_then_stop(log, ckpt, b"a1\n")
    log.rename(log.with_name("gone"))
    append(log, b"b1\n")  # created before the unlink, so it cannot reuse the inode
    log.with_name("gone").unlink()
    t2 = tailer(log, ckpt, events)
    assert data(t2.poll()) == [b"b1\n"]
    assert t2.stats().files_lost == 1 and any(isinstance(e, FileLost) for e in events)


def test_unterminated_end_of_rotated_file_is_dropped_and_counted(log: Path, ckpt: Path) -> None:
    events: list[TailEvent] = []
    append(log, b"a1\na-partial")
    t = tailer(log, ckpt, events)
    assert data(t.poll()) == [b"a1\n"]
    log.rename(log.with_name("triton.log.1"))
    append(log, b"b1\n")
    for _ in range(3):
        t.poll()
    assert t.stats().unterminated_dropped == 1
    assert [(e.offset, e.length) for e in events if isinstance(e, UnterminatedDropped)] == [(3, 9)]


@pytest.mark.parametrize("content", [b"{not json", b'{"version": 99, "files": []}'])
def test_bad_checkpoint_starts_fresh_with_a_warning(
    log: Path, ckpt: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[TailEvent] = []
    ckpt.write_bytes(content)
    append(log, b"l1\n")
    t = tailer(log, ckpt, events)
    assert data(t.poll()) == [b"l1\n"]
    assert any(isinstance(e, CheckpointProblem) for e in events)
    assert "starting fresh" in caplog.text


def test_restart_with_inode_reused_counts_a_truncation(log: Path, ckpt: Path) -> None:
    _read_then_stop(log, ckpt, b"a1\n")
    ino = os.stat(log).st_ino
    log.unlink()
    append(log, b"b1\n")
    t2 = tailer(log, ckpt)
    assert data(t2.poll()) == [b"b1\n"]  # same inode or not: other content, from 0
    if os.stat(log).st_ino == ino:
        assert t2.stats().truncations == 1


def test_checkpoint_write_failure_is_counted_not_raised(log: Path, tmp_path: Path) -> None:
    append(log, b"l1\n")
    t = Tailer(log, tmp_path / "no-such-dir" / "ckpt.json")
    t.commit(t.poll())
    s = t.stats()
    assert s.errors >= 1 and s.checkpoint_writes == 0 and s.lines_read == 1


def test_close_then_poll_raises(log: Path, ckpt: Path) -> None:
    with tailer(log, ckpt) as t:
        t.poll()
    with pytest.raises(ValueError):
        t.poll()


def test_copytruncate_while_lagging_reads_the_rest_from_the_copy(log: Path, ckpt: Path) -> None:
    """Lines written before the copy but not yet read come from the copy, under the original
    identity and offsets; the truncated file's new content follows."""
    append(log, b"first line\n" + b"".join(b"old %d\n" % i for i in range(100)))
    t = tailer(log, ckpt, max_bytes_per_poll=64)  # lagging: far from the end
    first = t.poll()
    log.with_name("triton.log.1").write_bytes(log.read_bytes())  # logrotate's copy
    os.truncate(log, 0)
    append(log, b"new first line\n")
    lines = list(first)
    for _ in range(200):
        got = t.poll()
        lines += got
        if not got and lines[-1].data == b"new first line\n":
            break
    old = [ln for ln in lines if ln.file == first[0].file]
    assert data(old) == [b"first line\n", *(b"old %d\n" % i for i in range(100))]
    assert [ln.offset for ln in old] == sorted({ln.offset for ln in old})
    assert data([ln for ln in lines if ln.file != first[0].file]) == [b"new first line\n"]
    assert t.stats().copies_drained == 1


def test_restart_after_copytruncate_while_down_reads_the_copy(log: Path, ckpt: Path) -> None:
    append(log, b"a long first line\na2\n")
    t = tailer(log, ckpt)
    t.commit(t.poll())
    t.close()
    append(log, b"a3 written while the collector was down\n")
    log.with_name("triton.log.1").write_bytes(log.read_bytes())
    os.truncate(log, 0)
    append(log, b"n1\n")
    t2 = tailer(log, ckpt)
    lines = t2.poll() + t2.poll()
    assert data(lines) == [b"a3 written while the collector was down\n", b"n1\n"]
    assert t2.stats().copies_drained == 1


def test_a_copy_with_other_content_is_not_taken(log: Path, ckpt: Path) -> None:
    append(log, b"first line\nsecond\n")
    t = tailer(log, ckpt, max_bytes_per_poll=11)
    t.poll()
    log.with_name("triton.log.1").write_bytes(b"another first line\nsecond\nthird\n")
    os.truncate(log, 0)
    append(log, b"n1\n")
    assert data(t.poll() + t.poll()) == [b"n1\n"]
    assert t.stats().copies_drained == 0


def test_a_leading_blank_line_waits_for_the_first_line(log: Path, ckpt: Path) -> None:
    """No line is emitted before its file's identity is final, blank ones included."""
    append(log, b"\n")
    t = tailer(log, ckpt)
    assert t.poll() == []
    append(log, b"first\nsecond\n")
    lines = t.poll()
    assert data(lines) == [b"\n", b"first\n", b"second\n"]
    assert {ln.file for ln in lines} == {lines[0].file}
    assert lines[0].file.complete and lines[0].file.fingerprint_len == 7


def test_copytruncate_never_drains_an_older_copy_that_starts_alike(log: Path, ckpt: Path) -> None:
    """Found by the hour-long soak: files that began with a blank line all had the same
    fingerprint, so copytruncate drained an older copy beside the log (its lines stored a
    second time) instead of the new one (whose last lines were lost)."""
    older = b"\nI1122 13:06:27.122074 older\n" + b"".join(b"older %d\n" % i for i in range(300))
    log.with_name("triton.log.c19ct").write_bytes(older)
    append(log, b"\nI1122 13:15:47.121194 newer\n")
    append(log, b"".join(b"newer %d\n" % i for i in range(100)))
    t = tailer(log, ckpt, max_bytes_per_poll=64)  # lagging: far from the end
    lines = t.poll()
    log.with_name("triton.log.c23ct").write_bytes(log.read_bytes())  # logrotate's copy
    os.truncate(log, 0)
    append(log, b"after\n")
    for _ in range(300):
        got = t.poll()
        lines += got
        if not got and lines[-1].data == b"after\n":
            break
    assert not [ln for ln in lines if b"older" in ln.data]
    assert data([ln for ln in lines if b"newer" in ln.data]) == [
        b"I1122 13:15:47.121194 newer\n",
        *(b"newer %d\n" % i for i in range(100)),
    ]
    assert t.stats().copies_drained == 1


def test_lag_counts_a_rotated_file_still_draining(log: Path, ckpt: Path) -> None:
    append(log, b"first line\n" + b"x" * 99 + b"\n")
    t = tailer(log, ckpt, max_bytes_per_poll=11)
    t.poll()
    assert t.lag_bytes() == 100
    log.rename(log.with_name("triton.log.1"))
    append(log, b"new\n")
    t.poll()  # reads the rotated file's next bytes first
    assert t.lag_bytes() == 100 - 11 + 4
    for _ in range(30):  # 11 bytes a poll: a 100-byte line takes several
        t.poll()
    assert t.lag_bytes() == 0
