"""The app's pure helpers: text safety, log excerpts, busy ratio, bundles that are not."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from dashboards.app.data.findings import log_excerpt, log_offset
from dashboards.app.data.health import busy_ratio
from dashboards.app.data.source import SourceError, analyze_bundle_to_store, extract_tarball
from dashboards.app.data.text import plain
from observability import events as ev


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("a\x00b\rc", "a\\x00b\\x0dc"),
        ("<script>x</script>", "<script>x</script>"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
    ],
)
def test_plain_makes_controls_visible(raw: str, shown: str) -> None:
    assert plain(raw) == shown


def test_plain_cuts_long_lines() -> None:
    assert plain("x" * 10, max_line_chars=4) == "xxxx… [6 more characters]"


def test_log_excerpt_takes_the_line_and_its_traceback(tmp_path: Path) -> None:
    log = tmp_path / "triton.log"
    head = "I1122 04:41:30.000000 1 a.cc:1 before\n"
    log.write_text(
        head + "Exception in callback\nTraceback:\n  boom\nI1122 04:41:31.000001 1 a.cc:2 x\n"
    )
    assert log_offset("triton.log@38") == 38
    assert log_excerpt(log, len(head)) == "Exception in callback\nTraceback:\n  boom"
    assert log_excerpt(log, 10_000) is None
    assert log_excerpt(None, 0) is None


def test_busy_ratio_counts_nested_executions_once() -> None:
    def rec(cls, at_s: float, *args):
        return cls(ev.LogRecord(int(at_s * 1e9), ev.LogLevel.INFO, "f", 1, 0), *args)

    records = [
        rec(ev.InstanceExecuting, 0.5, "m", "m_0", 1),
        rec(ev.InstanceExecuting, 0.6, "m", "m_0", 1),
        rec(ev.InstanceReleased, 0.8, "m_0", 1),
        rec(ev.InstanceReleased, 1.5, "m_0", 1),
        rec(ev.InstanceExecuting, 1.9, "m", "m_1", 1),  # open at the end
    ]
    ratios = [round(r, 3) for _, r in busy_ratio(records, 0, int(2e9))["m"]]
    assert ratios == [0.25, 0.3]  # (0.5 + 0) / 2 and (0.5 + 0.1) / 2


def test_a_broken_bundle_is_refused_plainly(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.json").write_text("{not json")
    with pytest.raises(SourceError, match="not a readable bundle"):
        analyze_bundle_to_store(tmp_path / "b", tmp_path / "work")
    with pytest.raises(SourceError, match="not a readable bundle archive"):
        extract_tarball(b"garbage", tmp_path / "x")
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("readme.txt")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(SourceError, match=r"no meta\.json"):
        extract_tarball(data.getvalue(), tmp_path / "y")
