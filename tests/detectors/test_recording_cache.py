"""The cache of ingested recordings (tests/fixtures/recordings) is keyed by every input of
ingest: a store read from it is the store ingest would make now."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import recordings
from tests.fixtures.recordings import (
    ARCHIVE,
    INGEST_SOURCES,
    RECORDINGS,
    REPO,
    cache_key,
    ingest_fingerprint,
)


def test_ingest_loads_no_project_source_outside_the_key() -> None:
    # A fresh interpreter: this one has imported detectors, the app and the rest already.
    probe = (
        "import sys, observability.bundle.ingest\n"
        "for m in list(sys.modules.values()):\n"
        "    f = getattr(m, '__file__', None)\n"
        "    if f: print(f)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    ours = {
        Path(f).resolve().relative_to(REPO).as_posix()
        for f in out.split()
        if Path(f).resolve().is_relative_to(REPO) and ".venv" not in Path(f).parts
    }
    assert any(p.startswith("observability/store/") for p in ours), ours  # the probe worked
    outside = sorted(
        p for p in ours if p.endswith(".py") and not any(p.startswith(s) for s in INGEST_SOURCES)
    )
    assert outside == [], f"add to INGEST_SOURCES: {outside}"


def test_the_key_follows_the_archive_the_recording_and_the_ingest_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "faulty"
    shutil.copytree(RECORDINGS / "faulty", folder)
    before = cache_key(folder)
    assert cache_key(RECORDINGS / "faulty") == before  # the folder's name and place are not inputs
    (folder / "recording.json").write_text((folder / "recording.json").read_text() + "\n")
    assert cache_key(folder) != before
    shutil.copytree(RECORDINGS / "faulty", folder, dirs_exist_ok=True)
    with (folder / ARCHIVE).open("ab") as fh:
        fh.write(b"\0")
    assert cache_key(folder) != before
    shutil.copytree(RECORDINGS / "faulty", folder, dirs_exist_ok=True)
    assert cache_key(folder) == before
    ingest_fingerprint.cache_clear()
    monkeypatch.setattr(recordings, "INGEST_SOURCES", INGEST_SOURCES[:-1])
    try:
        assert cache_key(folder) != before
    finally:
        ingest_fingerprint.cache_clear()


def test_a_session_links_the_cached_bundle_and_a_write_through_a_link_is_seen(
    tmp_path: Path,
) -> None:
    entry = tmp_path / "cache" / "faulty-0123"
    (entry / "bundle" / "metrics").mkdir(parents=True)
    (entry / "bundle" / "metrics" / "0001.prom").write_text("up 1\n")
    (entry / "store.db").write_bytes(b"store")
    (entry / "recording.json").write_text("{}\n")
    assert not recordings._touched(entry)
    session = tmp_path / "session" / "faulty"
    recordings._session_copy(entry, session)
    page, cached_page = session / "bundle/metrics/0001.prom", entry / "bundle/metrics/0001.prom"
    assert page.stat().st_ino == cached_page.stat().st_ino  # linked, not copied
    assert (session / "store.db").stat().st_ino != (entry / "store.db").stat().st_ino
    assert (session / "recording.json").read_text() == "{}\n"
    made = (entry / "recording.json").stat().st_mtime_ns
    with page.open("a") as fh:  # a test writing a bundle file in place
        fh.write("up 0\n")
    os.utime(cached_page, ns=(made + 1_000_000, made + 1_000_000))  # a coarse clock's write
    assert recordings._touched(entry)
