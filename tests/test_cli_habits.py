"""What users of CLI tools expect (issue 14): --version, shell completion, usage errors
before anything starts, a CI exit code, whole table cells when piped, JSON lines for log
shippers. Run as a user runs it: the installed ``triton-obs`` in a subprocess, its output
piped."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from observability import __version__

WILD = Path(__file__).resolve().parent / "fixtures" / "wild"
STUCK = WILD / "05-stuck-pytriton-2212-logui-uuid"  # a real hang: hung_request, critical
HEALTHY = WILD / "33-healthy-startup-explicit-2401-glog"


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "observability.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@functools.cache
def _report_on_the_hang() -> subprocess.CompletedProcess[str]:
    """``analyze`` of the real hang without ``--fail-on``, piped: one run read by the exit code
    test and the table test (the same command; each reads its own part of what it gave)."""
    return _run("analyze", str(STUCK))


def test_version_flag_and_completion() -> None:
    assert _run("--version").stdout.strip() == __version__
    shown = _run("--help").stdout
    assert "--install-completion" in shown and "--show-completion" in shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["watch", "--store", "s.db", "--url", "htp:/x"], "is not a URL"),
        (
            ["watch", "--store", "s.db", "--metrics-url", "http://127.0.0.1:99999/m"],
            "is not a URL",
        ),
        (["collect", "--store", "s.db", "--log", "/no/such/folder/t.log"], "does not exist"),
        (
            ["watch", "--store", "s.db", "--url", "http://127.0.0.1:8000", "--format", "xml"],
            "--format",
        ),
        (["analyze", str(HEALTHY), "--fail-on", "sometimes"], "--fail-on"),
        (["analyze", str(HEALTHY), "--log-format", "syslog"], "--log-format"),
    ],
)
def test_usage_errors_exit_2_before_anything_starts(args: list[str], message: str) -> None:
    result = _run(*args, timeout=30)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_a_directory_given_as_the_log_is_a_usage_error(tmp_path: Path) -> None:
    result = _run("watch", "--store", str(tmp_path / "s.db"), "--log", str(tmp_path), timeout=30)
    assert result.returncode == 2 and "cannot be read" in result.stderr


def test_fail_on_gives_ci_an_exit_code() -> None:
    assert _run("analyze", str(STUCK), "--fail-on", "critical").returncode == 1
    assert _run("analyze", str(STUCK), "--fail-on", "warning", "--format", "json").returncode == 1
    assert _run("analyze", str(HEALTHY), "--fail-on", "warning").returncode == 0
    assert _report_on_the_hang().returncode == 0  # without --fail-on: a report


def test_piped_tables_keep_whole_cells() -> None:
    """Piped, a summary is one line of the table, not folded into a narrow column."""
    out = _report_on_the_hang().stdout
    assert any(
        "pyannote_diarization_0 (3017.8 s, batch of 1)" in line and "executing one batch" in line
        for line in out.splitlines()
    ), out[:2000]
