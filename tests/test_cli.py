"""The triton-obs command line as a user runs it: help texts, load, demo."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from observability.catalogue import FAULTS
from observability.cli import app
from observability.lab import TritonLab
from observability.lab.processes import processes_mentioning
from tests.conftest import ctrl_c_as_from_a_terminal

runner = CliRunner()
COMMANDS = [
    "version", "lab", "load", "demo", "capture", "ingest", "collect", "analyze", "watch",
    "dashboards", "triage",
]  # fmt: skip


def test_every_command_has_a_one_line_help() -> None:
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert top.exit_code == 0
    for name in COMMANDS:
        line = next(ln for ln in top.output.splitlines() if re.search(rf"│ {name}\s", ln))
        assert len(line.split(name, 1)[1].strip(" │")) > 10, line
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "Usage" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--faults", "explode=0.1"], "unknown fault 'explode'"),
        (["--faults", "hang=2"], "not a probability"),
        (["--fault-params", "hang_s"], "not KEY=VALUE"),
    ],
)
def test_load_rejects_bad_faults_with_a_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["load", "--url", "127.0.0.1:1", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_watch_windows_are_options_and_sigterm_is_given_back(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import observability.watch

    seen: list[observability.watch.Watcher] = []

    class Recording(observability.watch.Watcher):
        def __init__(self, cfg: observability.watch.WatchConfig) -> None:
            super().__init__(cfg)
            seen.append(self)

    monkeypatch.setattr(observability.watch, "Watcher", Recording)
    log = tmp_path / "triton.log"
    log.write_text("")
    base = ["watch", "--store", str(tmp_path / "s.db"), "--log", str(log), "--port", "0"]
    before = signal.getsignal(signal.SIGTERM)
    result = runner.invoke(
        app, [*base, "--duration", "0.5", "--evidence", "30", "--lookback", "90"]
    )
    assert result.exit_code == 0, result.output
    # run in-process, watch gives SIGTERM back as it found it (pytest's own handler here)
    assert signal.getsignal(signal.SIGTERM) is before
    assert (seen[0].cfg.evidence_s, seen[0].cfg.lookback_s) == (30, 90)
    assert (seen[0].live.evidence_ns, seen[0].live.lookback_ns) == (30e9, 90e9)

    result = runner.invoke(app, [*base, "--evidence", "300", "--lookback", "60"])
    assert result.exit_code == 2
    assert "--lookback (60 s) must be at least --evidence (300 s)" in result.output
    assert len(seen) == 1


def test_load_against_a_server_that_is_not_there() -> None:
    result = runner.invoke(
        app, ["load", "--url", "127.0.0.1:9", "--requests", "3", "--timeout", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["sent"] == 3 and summary["answered"] == 0


@pytest.mark.lab
def test_load_summary_against_the_lab(triton_lab: TritonLab) -> None:
    result = runner.invoke(
        app,
        [
            "load", "--url", triton_lab.grpc_url, "--concurrency", "4", "--requests", "40",
            "--duration", "60", "--faults", "slow=0.25", "--fault-params", "slow_s=0.05",
            "--run-tag", "cli-load", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["sent"] == 40
    assert summary["answered"] == 40, summary
    assert summary["failed"] == summary["timed_out"] == 0
    assert 0 < summary["by_fault"]["slow"]["sent"] < 40
    assert summary["p50_ms"] <= summary["p99_ms"]
    assert "[request id: cli-load-000039]" in triton_lab.log_text()


@pytest.mark.lab
def test_demo_injects_every_fault_and_stops_cleanly(tmp_path) -> None:
    run_dir = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "observability.cli", "demo", "--duration", "40", "--no-ui",
         "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "220"},
    )  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    # Every second, per model: rate, queue and compute time, pending.
    assert out.count("per model (last second)") >= 20
    assert re.search(r"router\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d\s+\d", out)
    for fault in FAULTS:  # every fault of the catalogue
        assert f"inject {fault}" in out, fault
    assert re.search(r"hang: demo-hang-0 timed out", out)
    assert re.search(r"deadlock: demo-deadlock-0 timed out", out)
    assert re.search(r"callback: demo-callback-0 failed", out)
    assert "is not written" in out
    # Every injected fault was found, with the right kind and model.
    table = out[out.index("injected → found") :]
    assert table.count("yes") == len(FAULTS) and "missing" not in table, table
    log = (run_dir / "triton.log").read_text(errors="replace")
    assert "Exception in callback" in log and "Task exception was never retrieved" in log
    assert list(run_dir.glob("trace.json.*")), "traces are written as they complete"
    assert not processes_mentioning(str(run_dir))


def _log_tail(log: Path, lines: int = 30) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError as err:
        return f"\n(no Triton log: {err})"
    return "\nthe end of triton.log:\n" + "\n".join(text[-lines:])


@pytest.mark.lab
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_demo_stops_cleanly_on_ctrl_c_and_kill(tmp_path, signum: int) -> None:
    run_dir = tmp_path / "demo"
    proc = subprocess.Popen(
        [sys.executable, "-m", "observability.cli", "demo", "--duration", "120", "--no-ui",
         "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "COLUMNS": "200"}, preexec_fn=ctrl_c_as_from_a_terminal,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 180
        seen: list[str] = []
        for line in proc.stdout:
            seen.append(line)
            # A second's table can come late on a busy machine, its title skipping t+8s.
            at = re.search(r"t\+(\d+)s per model", line)
            if (at and int(at.group(1)) >= 8) or time.monotonic() > deadline:
                break
        # It failed once in a full CI run with no process left and nothing said why: most
        # likely the loop waited for a "t+8s" title that never came, to the demo's end.
        lab = processes_mentioning(str(run_dir / "backends"))
        assert lab, (
            f"exit {proc.poll()}; the demo printed:\n"
            + "".join(seen[-60:])
            + _log_tail(run_dir / "triton.log")
        )
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out[-2000:]
    assert "interrupted" in out and "Traceback" not in out
    assert not processes_mentioning(str(run_dir))
