"""Bundles from strangers: ``.tar.gz`` bundles read end to end, hostile archives refused
with a message naming the member, symlinks and special files in a folder never followed,
and huge files read in bounded memory."""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from observability.analyze import analyze_bundle
from observability.bundle import (
    BundleError,
    Limits,
    extract_archive,
    open_bundle,
    write_archive,
)
from observability.bundle.ingest import ingest, ingest_bundle
from observability.cli import app
from observability.findings import Finding
from observability.store import Store
from tests.bundle._support import (
    FIXTURES,
    Member,
    fixture_bundle,
    make_tar,
    prefilled_store,
    store_rows,
)

runner = CliRunner()
META = json.dumps({"format": 1, "bundle_id": "t", "started_at": "2026-11-22T03:26:30+00:00"})
LOG = (FIXTURES / "logs" / "glog_2.51_stub_death.log").read_bytes()


def _kinds(findings: list[Finding]) -> list[str]:
    return sorted(f.kind for f in findings)


def _json(findings: list[Finding]) -> list[str]:
    return sorted(f.to_json() for f in findings)


# ------------------------------------------------------------------ archives end to end


def test_an_archive_gives_what_its_folder_gives(tmp_path: Path) -> None:
    folder = fixture_bundle(tmp_path / "b")
    archive = write_archive(folder, tmp_path / "b.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert names[0] == "b/meta.json" and "b/metrics/" not in names
    assert all(n.startswith("b/") for n in names)

    from_folder, from_archive = analyze_bundle(folder), analyze_bundle(archive)
    assert _kinds(from_folder.findings) == ["callback_error", "stub_unhealthy"]
    assert _json(from_archive.findings) == _json(from_folder.findings)
    assert from_archive.notes == from_folder.notes

    with Store(tmp_path / "f.db") as a, Store(tmp_path / "a.db") as b:
        assert ingest(folder, a).inserted == ingest(archive, b).inserted
    assert store_rows(tmp_path / "f.db") == store_rows(tmp_path / "a.db")
    # ingest is idempotent for an archive too: its bundle id comes from meta.json
    with Store(tmp_path / "a.db") as b:
        again = ingest(archive, b)
    assert sum(again.inserted.values()) == 0 and again.duplicates > 0


def test_the_temporary_folder_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = write_archive(fixture_bundle(tmp_path / "b"), tmp_path / "b.tgz")
    work = tmp_path / "work"
    work.mkdir()
    with open_bundle(archive, workdir=work) as bundle:
        assert bundle.source == archive and bundle.log is not None
        assert bundle.log.is_relative_to(work) and bundle.log.read_bytes() == LOG
        assert bundle.meta.bundle_id == "fixture-bundle"
    assert list(work.iterdir()) == []
    # analyze and ingest, which open the bundle themselves, leave nothing either
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    analyze_bundle(archive)
    with Store(tmp_path / "s.db") as store:
        ingest(archive, store)
    with pytest.raises(BundleError):
        open_bundle(make_tar(tmp_path / "bad.tar.gz", [Member("../x", b"x")]))
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("names", "mode"),
    [
        (["meta.json", "triton.log"], "w:gz"),  # files at the top
        (["./meta.json", "./triton.log"], "w:gz"),  # tar czf b.tgz -C b .
        (["b/", "b/meta.json", "b/triton.log"], "w:bz2"),  # tar cjf b.tbz b/
        (["b/triton.log", "b/meta.json"], "w:xz"),
        (["meta.json", "triton.log"], "w"),  # not compressed at all
    ],
)
def test_archive_shapes_and_compressions(tmp_path: Path, names: list[str], mode: str) -> None:
    data = {"meta.json": META.encode(), "triton.log": LOG}
    members = [
        Member(n, type=tarfile.DIRTYPE) if n.endswith("/") else Member(n, data[n.split("/")[-1]])
        for n in names
    ]
    archive = make_tar(tmp_path / "bundle.tar.x", members, mode)  # the name says nothing
    with open_bundle(archive) as bundle:
        assert bundle.meta.bundle_id == "t" and bundle.notes == []
        assert bundle.log is not None and bundle.log.read_bytes() == LOG


def test_unknown_members_are_skipped_with_a_note(tmp_path: Path) -> None:
    members = [
        Member("b/meta.json", META.encode()),
        Member("b/README.md", b"hello"),
        Member("b/metrics/notes.txt", b"stray"),
        Member("b/metrics/1795317990000.prom", b'nv_inference_count{model="a"} 1\n'),
        Member("other/meta.json", b"{}"),  # outside the bundle's folder
    ]
    members += [Member(f"b/extra/{i}.txt", b"x") for i in range(25)]
    archive = make_tar(tmp_path / "b.tar.gz", members)
    with open_bundle(archive) as bundle:
        notes = "\n".join(bundle.notes)
        assert len(bundle.metrics) == 1
        assert sorted(p.name for p in bundle.root.rglob("*")) == [
            "1795317990000.prom",
            "meta.json",
            "metrics",
        ]
    assert "'b/README.md'" in notes and "'b/metrics/notes.txt'" in notes
    assert "'other/meta.json'" in notes and "not a file of the bundle layout" in notes
    assert "8 more skipped" in notes  # 28 skipped: 20 named, then counted
    assert len(bundle.notes) == 21


# ------------------------------------------------------------------ hostile archives


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (Member("/etc/cron.d/evil", b"x"), "'/etc/cron.d/evil' has an absolute path"),
        (Member("../evil", b"x"), "'../evil' has a '..' component"),
        (Member("b/../../evil", b"x"), "'b/../../evil' has a '..' component"),
        (Member("b/..\\..\\evil", b"x"), "has a '..' component"),
        (Member("C:/evil", b"x"), "has an absolute path"),
        (
            Member("triton.log", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
            "'triton.log' is a symbolic link to '/etc/passwd'",
        ),
        (
            Member("metrics", type=tarfile.SYMTYPE, linkname="/"),
            "'metrics' is a symbolic link to '/'",
        ),
        (
            Member("triton.log", type=tarfile.LNKTYPE, linkname="meta.json"),
            "'triton.log' is a hard link to 'meta.json'",
        ),
        (Member("x", type=tarfile.LNKTYPE, linkname="/etc/shadow"), "'x' is a hard link"),
        (Member("triton.log", type=tarfile.CHRTYPE), "'triton.log' is a character device"),
        (Member("dev/sda", type=tarfile.BLKTYPE), "is a block device"),
        (Member("triton.log", type=tarfile.FIFOTYPE), "'triton.log' is a FIFO"),
        (Member("b/meta.json", META.encode()), "'b/meta.json' appears twice"),
    ],
)
def test_hostile_members_refuse_the_archive(tmp_path: Path, member: Member, message: str) -> None:
    archive = make_tar(
        tmp_path / "evil.tar.gz",
        [Member("b/meta.json", META.encode()), Member("b/triton.log", LOG), member],
    )
    dest = tmp_path / "x" / "dest"
    dest.mkdir(parents=True)
    with pytest.raises(BundleError, match="refused") as err:
        extract_archive(archive, dest)
    assert message in str(err.value) and str(archive) in str(err.value)
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["dest"]  # nothing escaped
    assert not (tmp_path / "evil").exists()
    result = runner.invoke(app, ["analyze", str(archive)])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_a_member_over_its_limit_is_refused(tmp_path: Path) -> None:
    page = b'nv_inference_count{model="a"} 1\n' * 100
    archive = make_tar(
        tmp_path / "b.tar.gz",
        [Member("meta.json", META.encode()), Member("metrics/1795317990000.prom", page)],
    )
    with pytest.raises(BundleError, match=r"'metrics/1795317990000.prom' is over the 1,000-byte"):
        open_bundle(archive, limits=Limits(snapshot_bytes=1000))
    with open_bundle(archive, limits=Limits(snapshot_bytes=len(page))) as bundle:
        assert len(bundle.metrics) == 1


def test_a_forged_header_size_is_refused_before_reading(tmp_path: Path) -> None:
    """A header claiming 3 GiB is refused on its header: the data is never decompressed."""
    info = tarfile.TarInfo("triton.log")
    info.size = 3 << 30
    raw = tarfile.TarInfo("meta.json")
    raw.size = len(META)
    body = raw.tobuf(tarfile.GNU_FORMAT) + META.encode().ljust(512, b"\0")
    body += info.tobuf(tarfile.GNU_FORMAT) + b"\0" * 4096  # and then it ends
    archive = tmp_path / "forged.tar.gz"
    archive.write_bytes(gzip.compress(body, mtime=0))
    message = "'triton.log' is over the 2,147,483,648-byte limit"
    with pytest.raises(BundleError, match=re.escape(message)):
        open_bundle(archive)


def _zeros_tar_gz(path: Path, members: list[tuple[str, int]]) -> Path:
    """A tar.gz of members full of zeros, streamed: a bomb costs its writer no memory."""
    with gzip.open(path, "wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        meta = tarfile.TarInfo("meta.json")
        meta.size = len(META)
        tar.addfile(meta, io.BytesIO(META.encode()))
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, _Zeros(size))
    return path


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_a_gzip_bomb_stops_at_the_byte_count(tmp_path: Path) -> None:
    """64 MiB of zeros in 64 KiB of gzip: each member is under its limit, the whole is not.
    The count is of bytes actually decompressed, and the member being written is removed."""
    archive = _zeros_tar_gz(
        tmp_path / "bomb.tar.gz", [(f"metrics/17953179{i:05d}.prom", 4 << 20) for i in range(16)]
    )
    assert archive.stat().st_size < 512 << 10
    dest = tmp_path / "dest"
    dest.mkdir()
    limits = Limits(snapshot_bytes=8 << 20, archive_bytes=10 << 20)
    with pytest.raises(BundleError, match="more than 10,485,760 bytes uncompressed") as err:
        extract_archive(archive, dest, limits=limits)
    assert "'metrics/1795317900002.prom'" in str(err.value)  # the third 4 MiB member
    written = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert written <= 10 << 20
    assert sorted(p.name for p in (dest / "metrics").iterdir()) == [
        "1795317900000.prom",
        "1795317900001.prom",
    ]


def test_a_big_log_member_counts_towards_the_total(tmp_path: Path) -> None:
    archive = _zeros_tar_gz(tmp_path / "bomb.tgz", [("triton.log", 32 << 20)])
    with pytest.raises(BundleError, match=re.escape("while reading 'triton.log'")):
        open_bundle(archive, limits=Limits(archive_bytes=8 << 20))
    with open_bundle(archive, limits=Limits(archive_bytes=40 << 20)) as bundle:
        assert bundle.log is not None and bundle.log.stat().st_size == 32 << 20


def test_too_many_members_are_refused(tmp_path: Path) -> None:
    members = [Member("meta.json", META.encode())]
    members += [Member(f"metrics/{1795317990000 + i}.prom", b"") for i in range(60)]
    archive = make_tar(tmp_path / "many.tar.gz", members)
    with pytest.raises(BundleError, match="past the 50-member limit"):
        open_bundle(archive, limits=Limits(archive_members=50))
    with open_bundle(archive, limits=Limits(archive_members=61)) as bundle:
        assert len(bundle.metrics) == 60


def test_a_huge_long_name_header_is_refused(tmp_path: Path) -> None:
    """tarfile reads a GNU long-name record whole: a 2 MiB one is refused at 1 MiB."""
    archive = make_tar(
        tmp_path / "long.tar.gz",
        [Member("meta.json", META.encode()), Member("a" * (2 << 20), b"x")],
    )
    message = "the header after 'meta.json' is over the 1,048,576"
    with pytest.raises(BundleError, match=re.escape(message)):
        open_bundle(archive)


@pytest.mark.parametrize("keep", [0.5, 0.999])
def test_a_truncated_archive_keeps_what_came_whole(tmp_path: Path, keep: float) -> None:
    """Cut in the middle, or only its last bytes lost (a download cut short): the members
    decompressed before the cut are kept, even those in the last chunk read."""
    archive = write_archive(fixture_bundle(tmp_path / "b"), tmp_path / "b.tar.gz")
    data = archive.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: int(len(data) * keep)])
    with open_bundle(cut) as bundle:
        assert bundle.meta.bundle_id == "fixture-bundle"
        if keep < 0.99:
            assert "cut.tar.gz is truncated or corrupt after" in "\n".join(bundle.notes)
        else:  # only the end-of-archive blocks and the gzip trailer were lost
            assert bundle.log is not None and len(bundle.traces) == 2 and bundle.otlp
        # the member cut in the middle is not left half-written
        for path in bundle.root.rglob("*"):
            name = "/".join(path.relative_to(bundle.root).parts)
            original = tmp_path / "b" / name
            assert path.is_dir() or path.read_bytes() == original.read_bytes(), name
    cut.write_bytes(data[:100])  # not even meta.json
    with pytest.raises(BundleError, match="not a readable tar archive"):
        open_bundle(cut)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a readable tar archive"),
        (b"just some text\n" * 100, "not a readable tar archive"),
        (gzip.compress(b"not a tar" * 100, mtime=0), "not a readable tar archive"),
        (b"\x1f\x8b\x08\x00garbage", "not a readable tar archive"),
    ],
)
def test_not_an_archive_is_a_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "b.tar.gz"
    path.write_bytes(content)
    with pytest.raises(BundleError, match=message):
        open_bundle(path)
    result = runner.invoke(app, ["ingest", str(path), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2 and message in result.output


def test_an_archive_without_meta_is_no_bundle(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "b.tar.gz", [Member("triton.log", LOG), Member("x", b"")])
    with pytest.raises(BundleError, match=r"b.tar.gz is not a bundle: it has no meta.json"):
        open_bundle(archive)


# ------------------------------------------------------------------ folder bundles


def test_symlinks_in_a_folder_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "1795317990000.prom").write_text('secret_metric{a="1"} 42\n')
    (outside / "passwd").write_text('I1122 03:26:31.000000 1 x.cc:1] "secret"\n')
    root = tmp_path / "b"
    root.mkdir()
    (root / "meta.json").write_text(META)
    (root / "triton.log").symlink_to(outside / "passwd")
    (root / "trace.json").symlink_to(outside / "passwd")
    (root / "metrics").symlink_to(outside)
    (root / "stats").mkdir()
    (root / "stats" / "1795317990000.json").symlink_to(outside / "passwd")
    with Store(tmp_path / "s.db") as store:
        report = ingest(root, store)
        assert list(store.metric_samples("secret_metric")) == []
    assert sum(report.inserted.values()) == 0
    notes = "\n".join(report.notes)
    for name in ("triton.log", "trace.json", "metrics/", "stats/1795317990000.json"):
        assert notes.count(f"skipped {name}: a symbolic link") == 1, name

    (root / "meta.json").unlink()
    (root / "meta.json").symlink_to(outside / "passwd")
    with pytest.raises(BundleError, match=re.escape("meta.json is a symbolic link")):
        open_bundle(root)


def test_fifos_in_a_folder_are_skipped_not_opened(tmp_path: Path) -> None:
    """Opening a FIFO to read blocks until someone writes: it must not even be opened so."""
    root = tmp_path / "b"
    (root / "metrics").mkdir(parents=True)
    (root / "meta.json").write_text(META)
    os.mkfifo(root / "triton.log")
    os.mkfifo(root / "metrics" / "1795317990000.prom")
    os.mkfifo(root / "trace.json")
    with Store(tmp_path / "s.db") as store:
        report = ingest(root, store)
    notes = "\n".join(report.notes)
    assert "skipped triton.log: not a regular file" in notes
    assert "skipped trace.json: not a regular file" in notes
    assert "skipped metrics/1795317990000.prom: not a regular file" in notes


def _offset(record: object) -> int:
    return int(getattr(record, "header", record).offset)


def test_a_huge_log_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    """A 48 MiB line (a tensor dumped by a stub) between two records: memory stays near the
    1 MiB line limit, and the record after it keeps its true byte offset."""
    head = LOG[: LOG.index(b"\n", 20_000) + 1]
    tail = LOG[len(head) :]
    root = tmp_path / "b"
    root.mkdir()
    (root / "meta.json").write_text(META)
    with (root / "triton.log").open("wb") as fh:
        fh.write(head)
        for _ in range(48):
            fh.write(b"x" * (1 << 20))
        fh.write(b"\n")
        fh.write(tail)
    huge = (48 << 20) + 1  # the inserted line, newline included

    tracemalloc.start()
    try:
        with open_bundle(root) as bundle, Store(tmp_path / "s.db") as store:
            report = ingest_bundle(bundle, store)
            records = list(store.log_records())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak
    assert report.log_skipped["too_long"] == 1
    assert f"skipped 1 line(s) longer than 1,048,576 bytes (at byte {len(head)})" in "\n".join(
        report.notes
    )
    # the same records as the log without the line, those after it shifted by its length
    with Store(tmp_path / "ref.db") as ref:
        (tmp_path / "ref").mkdir()
        (tmp_path / "ref" / "meta.json").write_text(META)
        (tmp_path / "ref" / "triton.log").write_bytes(LOG)
        ingest(tmp_path / "ref", ref)
        expected = list(ref.log_records())
    assert len(records) == len(expected) > 0
    for got, want in zip(records, expected, strict=True):
        off = _offset(want)
        assert _offset(got) == (off if off < len(head) else off + huge)


def test_oversized_files_in_a_folder_are_skipped(tmp_path: Path) -> None:
    root = fixture_bundle(tmp_path / "b")
    limits = Limits(snapshot_bytes=4096)
    with open_bundle(root, limits=limits) as bundle, Store(tmp_path / "s.db") as store:
        report = ingest_bundle(bundle, store)
    notes = "\n".join(report.notes)
    assert "larger than the 4,096-byte limit" in notes
    assert report.inserted.get("log", 0) > 0  # the rest still goes in
    with pytest.raises(BundleError, match=re.escape("meta.json cannot be read: larger than")):
        open_bundle(root, limits=Limits(meta_bytes=10))


def test_meta_values_out_of_range_are_ignored_with_notes(tmp_path: Path) -> None:
    root = fixture_bundle(tmp_path / "b")
    meta = json.loads((root / "meta.json").read_text())
    meta["clock"]["epoch_ns_minus_monotonic_ns"] = 1e999  # JSON's Infinity
    meta["clock"]["log_utc_offset_s"] = "three hours"
    meta["sources"]["log_start_offset"] = 2**70
    meta["ended_at"] = "0001-01-01T00:00:00"
    (root / "meta.json").write_text(json.dumps(meta))
    (root / "metrics" / "9999999999999999.prom").write_text("up 1\n")  # past int64 ns
    with Store(tmp_path / "s.db") as store:
        report = ingest(root, store)
    notes = "\n".join(report.notes)
    assert "clock.epoch_ns_minus_monotonic_ns 'inf' is not a usable number" in notes
    assert "clock.log_utc_offset_s 'three hours'" in notes
    assert "sources.log_start_offset" in notes and "ended_at is not an ISO time" in notes
    assert "skipped metrics/9999999999999999.prom: a time out of range" in notes
    assert report.inserted["log"] > 0
    assert analyze_bundle(root).findings  # the window comes from the events


def test_a_broken_bundle_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    store_path = prefilled_store(tmp_path)
    before = store_rows(store_path)
    root = tmp_path / "broken"
    (root / "otlp").mkdir(parents=True)
    (root / "meta.json").write_text(json.dumps({"format": 1, "bundle_id": "base-bundle"}))
    (root / "trace.json").write_text(
        json.dumps(
            [
                {"id": 1, "model_name": "m", "request_id": "ok"},
                {"id": 1, "timestamps": [{"name": "REQUEST_START", "ns": 5}]},
                {"id": 2, "model_name": "m", "request_id": "huge"},
                {"id": 2, "timestamps": [{"name": "REQUEST_START", "ns": 2**64}]},
            ]
        )
    )
    (root / "otlp" / "1795317990000.json").write_text("[" * 100_000)
    with Store(store_path) as store:
        report = ingest(root, store)
    after = store_rows(store_path)
    assert all(before[t] <= after[t] for t in before)
    assert "skipped otlp/1795317990000.json: nested too deeply" in report.notes
    assert report.inserted.get("traces", 0) >= 1  # the good span went in, whatever the other


def test_a_batch_the_store_refuses_is_retried_record_by_record(tmp_path: Path) -> None:
    """Parsers keep integers inside int64, but if one ever hands on a bigger one SQLite
    refuses the whole batch: the good records of it must still go in, and a note say why."""
    from observability import events as ev
    from observability.bundle.ingest import IngestReport, _write

    report = IngestReport("b")
    good = [ev.ScrapeStatus(10**18 + i, "metrics", True, 0.0) for i in range(3)]
    batch: list[object] = [*good[:2], ev.ScrapeStatus(2**64, "metrics", True, 0.0), good[2]]
    with Store(tmp_path / "s.db") as store:
        _write(store, "metrics", "", batch, report)
        assert store.time_range() == (10**18, 10**18 + 2)
    assert report.inserted == {"metrics": 3}
    assert report.notes == ["metrics: skipped 1 record(s) with values out of range"]


# ------------------------------------------------------------------ the CLI, end to end


class _Triton(http.server.BaseHTTPRequestHandler):
    """Serves recorded /metrics and stats pages: what capture scrapes from a real Triton."""

    pages = {
        "/metrics": (FIXTURES / "metrics" / "triton_2.51_histogram_latencies.prom").read_bytes(),
        "/v2/models/stats": (FIXTURES / "stats" / "triton_2.51_stats_after.json").read_bytes(),
        "/v2": b'{"name": "triton", "version": "2.51.0"}',
    }

    def do_GET(self) -> None:
        body = self.pages.get(self.path)
        self.send_response(200 if body else 404)
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def fake_triton() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Triton)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_capture_archive_then_analyze_the_archive(tmp_path: Path, fake_triton: str) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("trace.json.0", "trace.json.1"):
        shutil.copyfile(FIXTURES / "traces" / "demo_2.51" / name, traces / name)
    out = tmp_path / "bundle"
    args = [
        "capture", "--url", fake_triton, "--metrics-url", f"{fake_triton}/metrics",
        "--log", str(FIXTURES / "logs" / "glog_2.51_stub_death.log"), "--log-from-start",
        "--trace", str(traces / "trace.json"), "--duration", "0.3", "--interval", "0.1",
        "--out", str(out), "--archive",
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    archive = tmp_path / "bundle.tar.gz"
    assert f"archive {archive}" in result.output and out.is_dir()
    with open_bundle(archive) as bundle:
        assert bundle.metrics and bundle.stats and len(bundle.traces) == 2

    by_folder = runner.invoke(app, ["analyze", str(out), "--format", "json"])
    by_archive = runner.invoke(app, ["analyze", str(archive), "--format", "json"])
    assert by_folder.exit_code == 0 and by_archive.exit_code == 0, by_archive.output
    found = json.loads(by_archive.stdout)
    assert found == json.loads(by_folder.stdout)
    assert {f["kind"] for f in found} >= {"stub_unhealthy", "callback_error"}

    stored = runner.invoke(app, ["ingest", str(archive), "--store", str(tmp_path / "s.db")])
    assert stored.exit_code == 0 and "ingested" in stored.output and " log" in stored.output

    again = runner.invoke(app, [*args[:-3], "--out", str(tmp_path / "other"), "--archive"])
    assert again.exit_code == 0
    taken = runner.invoke(app, ["capture", "--log", args[6], "--out", str(out), "--archive"])
    assert taken.exit_code == 2 and "bundle.tar.gz exists" in taken.output


def test_notes_quoting_the_bundle_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """A stranger's metrics line or file name lands in a note: Rich markup in it ('[/]')
    used to raise, and an escape sequence must not reach the terminal."""
    root = tmp_path / "b"
    (root / "metrics").mkdir(parents=True)
    (root / "meta.json").write_text(META)
    (root / "metrics" / "1795317990000.prom").write_bytes(b"bad [/bold] \x1b]0;pwned\x07 {{\n")
    (root / "metrics" / "[red]x\x1b[2J").write_text("")
    for command in (["analyze", str(root)], ["ingest", str(root), "--store", str(root / "s.db")]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "[/bold]" in result.output
        assert "[red]x\\x1b[2J" in result.output
