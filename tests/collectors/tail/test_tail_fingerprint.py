"""File identity: stable under rename, new after rewrite, provisional until the first line."""

from __future__ import annotations

import os
from pathlib import Path

from collectors.tail.fingerprint import FINGERPRINT_BYTES, head_identity, locate, matches


def _ident(path: Path, head: bytes):
    st = os.stat(path)
    return head_identity(st.st_dev, st.st_ino, head)


def test_span_ends_at_first_newline(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"first\nsecond\n")
    ident = _ident(p, b"first\nsecond\n")
    assert ident.complete and ident.fingerprint_len == 6
    assert ident == _ident(p, b"first\n")  # more data later does not change it


def test_span_caps_at_fingerprint_bytes(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    data = b"x" * (FINGERPRINT_BYTES + 10)
    p.write_bytes(data)
    ident = _ident(p, data)
    assert ident.complete and ident.fingerprint_len == FINGERPRINT_BYTES


def test_short_head_is_provisional(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"partial")
    ident = _ident(p, b"partial")
    assert not ident.complete and ident.fingerprint_len == 7
    assert not _ident(p, b"").complete


def test_leading_blank_lines_do_not_end_the_span(tmp_path: Path) -> None:
    """A writer that split a line across a rotation starts the next file with its "\\n"
    (the lab's log pipe does): a span of that "\\n" alone was the same for every such file,
    and with a recycled inode two files had one identity (found by the hour-long soak)."""
    p = tmp_path / "a.log"
    p.write_bytes(b"\nI1122 13:15:47.121194 first\nsecond\n")
    ident = _ident(p, p.read_bytes())
    assert ident.complete and ident.fingerprint_len == len(b"\nI1122 13:15:47.121194 first\n")
    other = _ident(p, b"\nI1122 13:06:27.122074 first\n")
    assert other.complete and other.fingerprint != ident.fingerprint
    assert not _ident(p, b"\n").complete and not _ident(p, b"\r\n\n").complete
    assert _ident(p, b"\n" * FINGERPRINT_BYTES).complete  # the cap still holds


def test_matches_follows_rename_not_rewrite(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"hello\n")
    ident = _ident(p, b"hello\n")
    p.rename(tmp_path / "a.log.1")
    fd = os.open(tmp_path / "a.log.1", os.O_RDONLY)
    try:
        assert matches(fd, ident)
        with open(tmp_path / "a.log.1", "r+b") as f:  # truncate and rewrite in place
            f.truncate(0)
            f.write(b"other\n")
        assert not matches(fd, ident)
    finally:
        os.close(fd)


def test_locate_finds_renamed_file_by_inode(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"hello\n")
    ident = _ident(p, b"hello\n")
    p.rename(tmp_path / "a.log.7")
    (tmp_path / "a.log").write_bytes(b"hello\n")  # same content, other inode: not it
    found = locate(str(tmp_path), ident, skip=str(tmp_path / "a.log"))
    assert found is not None
    fd, path, same = found
    os.close(fd)
    assert path == str(tmp_path / "a.log.7") and same
    (tmp_path / "a.log.7").write_bytes(b"rewritten\n")
    found = locate(str(tmp_path), ident, skip=str(tmp_path / "a.log"))
    assert found is not None and not found[2]
    os.close(found[0])
    os.unlink(path)
    assert locate(str(tmp_path), ident) is None
