"""``analyze`` on what users have instead of a bundle (``observability/bundle/loose.py``): the
recorded demo's real log alone, as Triton wrote it and as Kubernetes, Docker's json-file
driver and docker compose would have stored it; a /metrics page; a trace file alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from observability.analyze import analyze_bundle
from observability.bundle import BundleError
from observability.bundle.loose import kind_of, open_loose
from tests.detectors.recording import RecordedRun
from tests.judged import judged

LOG_ONLY = {
    ("hung_request", "router"),
    ("hung_request", "generate"),
    ("bls_deadlock", "generate"),
    ("callback_error", "router"),
    ("shape_growth", "decoder"),
    ("cold_start", "classifier"),
    ("stream_stalled", "stream"),
}
"""What the faulty recording's log alone must show (the rest needs /metrics: the sight table)."""

pytestmark = pytest.mark.xdist_group("loose")
"""One worker, so that ``plain`` (an analysis of the whole log) is made once."""


def _found(path: Path, **kw: object) -> set[tuple[str, str]]:
    result = analyze_bundle(path, **kw)  # type: ignore[arg-type]
    return {(f.kind, f.model) for f in result.findings if f.severity.rank >= 1}


def _found_in_log(name: str, log: Path) -> set[tuple[str, str]]:
    """``_found`` of a log file, judged again only when the package or the file's bytes
    change (tests/judged.py): the recorded log and its framings are the same every run."""
    return judged(f"loose-{name}", [log], lambda: _found(log))


def _framed(log: Path, out: Path, frame: str) -> Path:
    with log.open("rb") as src, out.open("wb") as dst:
        for i, line in enumerate(src):
            stamp = b"2026-11-25T08:33:%02d.%06dZ" % (i // 1000 % 60, i % 1000)
            if frame == "cri":
                dst.write(stamp + b" stderr F " + line)
            elif frame == "docker-json":
                text = line.decode("utf-8", "replace")
                dst.write(json.dumps({"log": text, "stream": "stderr", "time": stamp.decode()})
                          .encode() + b"\n")  # fmt: skip
            else:
                dst.write(b"triton-server-1  | " + line)
    return out


@pytest.fixture(scope="module")
def plain(faulty_none_run: RecordedRun) -> set[tuple[str, str]]:
    return _found_in_log("plain", faulty_none_run.log)


def test_the_log_alone_is_analysed(plain: set[tuple[str, str]]) -> None:
    assert plain >= LOG_ONLY


@pytest.mark.parametrize("frame", ["cri", "docker-json", "compose"])
def test_a_framed_log_gives_the_same_findings(
    frame: str, faulty_none_run: RecordedRun, plain: set[tuple[str, str]], tmp_path: Path
) -> None:
    framed = _framed(faulty_none_run.log, tmp_path / "pod.log", frame)
    assert _found_in_log(frame, framed) == plain


def test_a_folder_of_artifacts(faulty_run: RecordedRun, tmp_path: Path) -> None:
    """A log and a /metrics page side by side, with other names than a bundle's."""
    shutil.copy(faulty_run.log, tmp_path / "server-output.txt")
    page = sorted((faulty_run.bundle / "metrics").iterdir())[-1]
    shutil.copy(page, tmp_path / "curl-metrics.txt")
    (tmp_path / "notes.bin").write_bytes(b"\x00\x01")
    bundle = open_loose(tmp_path)
    assert bundle.log is not None and bundle.log.name == "server-output.txt"
    assert [p.name for _, p in bundle.metrics] == ["curl-metrics.txt"]
    assert any("notes.bin" in n for n in bundle.notes)
    assert _found(tmp_path) >= LOG_ONLY - {("hung_request", "generate")}


def test_a_trace_file_alone_is_read(faulty_run: RecordedRun, tmp_path: Path) -> None:
    trace = next(p for p in sorted(faulty_run.bundle.glob("trace.json*")) if p.stat().st_size)
    shutil.copy(trace, tmp_path / "trace.json")
    result = analyze_bundle(tmp_path / "trace.json")
    assert "the bundle holds no signals" not in result.notes
    assert result.coverage is not None and result.coverage.state("log") == "missing"


def test_kinds_are_told_by_content() -> None:
    assert kind_of(b"# HELP nv_inference_count x\n# TYPE nv_inference_count counter\n") == "metrics"
    assert kind_of(b'{"model_stats": [{"name": "m"}]}') == "stats"
    assert kind_of(b'[{"id": 1, "model_name": "m", "timestamps": []}]') == "trace"
    assert kind_of(b'{"log":"I0924 12:01:22.876361 1 x.cc:1] y\\n","stream":"stderr"}') == "log"
    assert kind_of(b"I0924 12:01:22.876361 1 server.cc:1] started\n") == "log"
    assert kind_of(b"\x00\x01binary") == ""


def test_nothing_of_ours_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"\x00" * 10)
    with pytest.raises(BundleError, match="holds no Triton log"):
        analyze_bundle(tmp_path)
