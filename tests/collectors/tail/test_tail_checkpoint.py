"""Checkpoint: round trip, atomic replace, and a typed result for every bad file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collectors.tail.checkpoint import (
    CHECKPOINT_VERSION,
    Checkpoint,
    CheckpointEntry,
    LoadStatus,
    load_checkpoint,
    save_checkpoint,
)
from collectors.tail.fingerprint import FileIdentity

ENTRY = CheckpointEntry("/l/triton.log", FileIdentity(1, 2, "ab" * 32, 40, True), 1234)
GOOD = {
    "path": "/l/triton.log",
    "dev": 1,
    "inode": 2,
    "fingerprint": "ab" * 32,
    "fingerprint_len": 40,
    "complete": True,
    "offset": 1234,
}


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "ckpt.json"
    cp = Checkpoint((ENTRY, CheckpointEntry("/l/x", FileIdentity(1, 3, "00", 0, False), 0)))
    save_checkpoint(p, cp)
    res = load_checkpoint(p)
    assert res.status is LoadStatus.OK and res.checkpoint == cp
    doc = json.loads(p.read_text())
    assert doc["version"] == CHECKPOINT_VERSION and doc["files"][0] == GOOD
    assert not (tmp_path / "ckpt.json.tmp").exists()


def test_save_replaces_atomically_over_stale_temp(tmp_path: Path) -> None:
    p = tmp_path / "ckpt.json"
    (tmp_path / "ckpt.json.tmp").write_text("half a checkpoint from a SIGKILL")
    save_checkpoint(p, Checkpoint((ENTRY,)), fsync=False)
    save_checkpoint(p, Checkpoint(), fsync=False)
    assert load_checkpoint(p).checkpoint == Checkpoint()
    assert os.listdir(tmp_path) == ["ckpt.json"]


def _bad(**changes: object) -> str:
    return json.dumps({"version": 1, "files": [{**GOOD, **changes}]})


BAD = [
    ("empty", "", LoadStatus.CORRUPT),
    ("truncated json", '{"version": 1, "fi', LoadStatus.CORRUPT),
    ("binary junk", "\x00\xff\xfe", LoadStatus.CORRUPT),
    ("not an object", "[1, 2]", LoadStatus.CORRUPT),
    ("no version", '{"files": []}', LoadStatus.CORRUPT),
    ("string version", '{"version": "1", "files": []}', LoadStatus.CORRUPT),
    ("version 0", '{"version": 0, "files": []}', LoadStatus.CORRUPT),
    ("future version", '{"version": 2, "files": []}', LoadStatus.FUTURE_VERSION),
    ("files not a list", '{"version": 1, "files": {}}', LoadStatus.CORRUPT),
    ("entry not an object", '{"version": 1, "files": [3]}', LoadStatus.CORRUPT),
    ("negative offset", _bad(offset=-1), LoadStatus.CORRUPT),
    ("float offset", _bad(offset=1.5), LoadStatus.CORRUPT),
    ("bool inode", _bad(inode=True), LoadStatus.CORRUPT),
    ("missing fingerprint", _bad(fingerprint=None), LoadStatus.CORRUPT),
    ("provisional with offset", _bad(complete=False), LoadStatus.CORRUPT),
]


@pytest.mark.parametrize(("name", "text", "status"), BAD, ids=[b[0] for b in BAD])
def test_bad_checkpoint_is_a_typed_result(tmp_path: Path, name: str, text: str, status) -> None:
    p = tmp_path / "ckpt.json"
    p.write_bytes(text.encode("latin-1"))
    res = load_checkpoint(p)
    assert res.status is status, res.detail
    assert res.checkpoint == Checkpoint() and res.detail


def test_missing_and_unreadable(tmp_path: Path) -> None:
    assert load_checkpoint(tmp_path / "nope.json").status is LoadStatus.MISSING
    assert load_checkpoint(tmp_path).status is LoadStatus.UNREADABLE  # a directory
