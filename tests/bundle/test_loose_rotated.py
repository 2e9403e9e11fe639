"""Logs as rotation leaves them (``observability/bundle/loose.py``): generations of one log,
some compressed, read as one; a compressed log alone; logs of two servers kept apart.

The log is a real Triton 2.51 recording of a pipeline the detectors were not tuned on
(tests/fixtures/foreign/ocr_backbone_hang: one request's det_backbone batch never returns,
its text_det instance waits forever)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import shutil
import tarfile
from itertools import pairwise
from pathlib import Path

import pytest

from observability.analyze import analyze_bundle
from observability.bundle import BundleError, open_bundle
from observability.bundle.loose import open_loose

FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
HUNG = ("hung_request", "text_det")

pytestmark = pytest.mark.xdist_group("loose-rotated")
"""One worker, so that ``whole`` (an analysis of the whole log) is made once."""


def _found(path: Path) -> set[tuple[str, str]]:
    return {(f.kind, f.model) for f in analyze_bundle(path).findings if f.severity.rank >= 1}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("foreign-log") / "triton.log"
    with open_bundle(FOREIGN / "ocr_backbone_hang" / "bundle.tar.gz") as bundle:
        assert bundle.log is not None
        shutil.copyfile(bundle.log, out)
    return out


@pytest.fixture(scope="module")
def whole(log: Path) -> set[tuple[str, str]]:
    found = _found(log)
    assert HUNG in found
    return found


def _generations(log: Path, folder: Path) -> list[Path]:
    """The log cut in three at line boundaries, named as logrotate names them (newest is
    ``triton.log``), the oldest gzip-compressed and the middle one xz-compressed."""
    lines = log.read_bytes().splitlines(keepends=True)
    cuts = [0, len(lines) // 4, len(lines) // 2, len(lines)]
    parts = [b"".join(lines[a:b]) for a, b in pairwise(cuts)]
    folder.mkdir()
    oldest, middle, newest = (
        folder / "triton.log.2.gz",
        folder / "triton.log.1.xz",
        folder / "triton.log",
    )
    oldest.write_bytes(gzip.compress(parts[0]))
    middle.write_bytes(lzma.compress(parts[1]))
    newest.write_bytes(parts[2])
    return [oldest, middle, newest]


def test_generations_are_read_as_one_log_oldest_first(
    log: Path, whole: set[tuple[str, str]], tmp_path: Path
) -> None:
    newest = _generations(log, tmp_path / "logs")[-1]
    # The hang began before the last rotation: the newest file alone cannot show it.
    assert HUNG not in _found(newest)
    with open_loose(tmp_path / "logs") as bundle:
        assert bundle.log is not None
        assert bundle.log.read_bytes() == log.read_bytes()
        assert any(
            "read 3 logs as one" in n and "triton.log.2.gz, triton.log.1.xz, triton.log;" in n
            for n in bundle.notes
        ), bundle.notes
    assert _found(tmp_path / "logs") == whole


def test_a_compressed_log_alone_is_read(
    log: Path, whole: set[tuple[str, str]], tmp_path: Path
) -> None:
    packed = tmp_path / "server.log.bz2"
    packed.write_bytes(bz2.compress(log.read_bytes()))
    assert _found(packed) == whole


def test_a_damaged_compressed_log_keeps_what_came_before(log: Path, tmp_path: Path) -> None:
    packed = gzip.compress(log.read_bytes())
    cut = tmp_path / "triton.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with open_loose(cut) as bundle:
        assert bundle.log is not None
        kept = bundle.log.read_bytes()
        assert 0 < len(kept) < log.stat().st_size and log.read_bytes().startswith(kept)
        assert any("damaged" in n for n in bundle.notes), bundle.notes


def test_logs_whose_times_overlap_are_not_joined(log: Path, tmp_path: Path) -> None:
    """Two servers' logs side by side (here: the same log twice): the main one is read."""
    folder = tmp_path / "two"
    folder.mkdir()
    shutil.copyfile(log, folder / "triton.log")
    shutil.copyfile(log, folder / "other-pod.log")
    with open_loose(folder) as bundle:
        assert bundle.log == folder / "triton.log"
        assert any("skipped other-pod.log: one log is read" in n for n in bundle.notes)


def test_an_archive_inside_a_folder_is_not_opened(log: Path, tmp_path: Path) -> None:
    folder = tmp_path / "with-archive"
    folder.mkdir()
    shutil.copyfile(log, folder / "triton.log")
    shutil.copyfile(FOREIGN / "ocr_healthy" / "bundle.tar.gz", folder / "old-capture.tar.gz")
    with open_loose(folder) as bundle:
        assert bundle.log == folder / "triton.log"
        assert any("old-capture.tar.gz: an archive" in n for n in bundle.notes), bundle.notes


def test_an_archive_of_gathered_files_is_read_like_its_folder(
    log: Path, whole: set[tuple[str, str]], tmp_path: Path
) -> None:
    """``tar czf logs.tar.gz logs/`` of rotated generations: no meta.json, not a bundle."""
    _generations(log, tmp_path / "logs")
    archive = tmp_path / "logs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "logs", arcname="logs")
    result = analyze_bundle(archive)
    assert {(f.kind, f.model) for f in result.findings if f.severity.rank >= 1} == whole
    assert any("read 3 logs as one" in n for n in result.notes), result.notes


def test_an_archive_of_gathered_files_is_checked_like_a_bundle(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b'I1125 14:09:55.560047 1 server.cc:1] "started"\n'
        info = tarfile.TarInfo("../outside.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BundleError, match="path traversal"):
        analyze_bundle(archive)
    assert not (tmp_path.parent / "outside.log").exists()


def test_a_bundle_folder_without_meta_keeps_its_subfolders_and_snapshot_times(
    tmp_path: Path,
) -> None:
    """A capture whose meta.json was lost (or a folder sorted by hand the same way): its
    ``metrics/`` and ``stats/`` are read, dated by their names (capture times), so a stall
    that only /metrics shows (no verbose log: tests/fixtures/foreign/ocr_stall_quiet) is
    still found at the capture's end, not at the log's last line."""
    with open_bundle(FOREIGN / "ocr_stall_quiet" / "bundle.tar.gz") as bundle:
        folder = tmp_path / "gathered"
        shutil.copytree(bundle.root, folder)
    (folder / "meta.json").unlink()
    with open_loose(folder) as loose:
        assert loose.metrics and loose.stats
        assert all(at == int(p.stem) for at, p in loose.metrics)
        assert not any("modification time" in n for n in loose.notes), loose.notes
    assert ("model_stalled", "text_det") in _found(folder)


def test_a_kept_store_judges_gathered_files_at_the_same_instant(log: Path, tmp_path: Path) -> None:
    """A /metrics page saved today beside an older log: with ``--store`` as without it, the
    window ends at the log's last line, not at the page's file time (which would make
    every request still open at the end of the log look hours old)."""
    folder = tmp_path / "gathered"
    folder.mkdir()
    shutil.copyfile(log, folder / "triton.log")
    with open_bundle(FOREIGN / "ocr_backbone_hang" / "bundle.tar.gz") as bundle:
        shutil.copyfile(bundle.metrics[-1][1], folder / "curl-metrics.txt")  # mtime: now

    def keys(**kw: object) -> set[tuple[str, str, str]]:
        found = analyze_bundle(folder, **kw).findings  # type: ignore[arg-type]
        return {(f.kind, f.model, f.summary) for f in found}  # the summary says how long

    kept = keys(store_path=tmp_path / "kept.db")
    assert kept == keys()
    assert any(k[:2] == HUNG and "(25.0 s" in k[2] for k in kept), kept  # the log's end


def test_gathered_archives_that_fuzzing_broke_are_clear_errors(log: Path, tmp_path: Path) -> None:
    """Found by tests/bundle/test_bundle_fuzz.py: a member named "." (IndexError before) and
    a compressed stream damaged so that tarfile cannot tell what it is (EOFError, zlib.error
    before): each is a BundleError that says why."""
    dotted = tmp_path / "dot.tar"
    with tarfile.open(dotted, "w") as tar:
        info = tarfile.TarInfo(".")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    with pytest.raises(BundleError, match="holds no Triton log"):
        analyze_bundle(dotted)
    whole = tmp_path / "whole.tar.gz"
    with tarfile.open(whole, "w:gz") as tar:
        tar.add(log, arcname="logs/triton.log")
    data = whole.read_bytes()
    for name, damaged in (
        ("cut.tar.gz", data[:40]),
        ("flipped.tar.gz", data[:20] + bytes([data[20] ^ 0x5A]) + data[21:200]),
    ):
        (tmp_path / name).write_bytes(damaged)
        with pytest.raises(BundleError):
            analyze_bundle(tmp_path / name)
