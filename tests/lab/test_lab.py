"""The lab against a real tritonserver: start, readiness, run folder, errors, clean stop."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from observability.lab import LabConfig, LabError, TritonLab, install, ports
from observability.lab.processes import processes_mentioning
from tests.conftest import ECHO_CONFIG, ctrl_c_as_from_a_terminal, write_model

pytestmark = pytest.mark.lab


def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on ``port`` (from /proc/net/tcp)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.add(addr)
    return found


def test_lab_serves_and_records_its_run(echo_repository: Path, tmp_path: Path) -> None:
    with TritonLab(LabConfig(model_repository=echo_repository, run_dir=tmp_path / "run")) as lab:
        with urllib.request.urlopen(f"{lab.http_url}/v2/models/echo/ready", timeout=5) as r:
            assert r.status == 200
        run = json.loads(lab.run_json_path.read_text())
        assert run["pid"] == lab.pid
        assert run["versions"]["triton"].startswith("2.")
        assert run["ports"]["http"] == lab.ports.http
        assert run["clock"]["log_timezone"] == "UTC"
        assert abs(run["clock"]["epoch_ns_minus_monotonic_ns"]) > 0
        assert any(a == "--log-verbose=1" for a in run["argv"])
        # Every listener is on loopback only.
        for port in (lab.ports.http, lab.ports.grpc, lab.ports.metrics):
            addrs = _listening_addresses(port)
            assert addrs, f"nothing listens on {port}"
            loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, v4-mapped
            assert addrs <= loopback, f"port {port} listens on {addrs}"
        stubs = [c for c in lab.lab_processes().values() if "triton_python_backend_stub" in c]
        assert stubs, "the python model's stub should be running"
        body = json.dumps(
            {
                "id": "lab-1",
                "inputs": [{"name": "INPUT0", "shape": [2], "datatype": "FP32", "data": [1, 2]}],
            }
        ).encode()
        req = urllib.request.Request(f"{lab.http_url}/v2/models/echo/infer", data=body)
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read())["outputs"][0]["data"] == [1.0, 2.0]
    assert "[request id: lab-1] Setting state from PENDING to EXECUTING" in lab.log_text()
    assert lab.trace_path.exists(), "the trace file is written when Triton exits"
    trace = json.loads(lab.trace_path.read_text())
    assert any(rec.get("request_id") == "lab-1" for rec in trace)


def test_stop_leaves_no_process_behind(echo_repository: Path, tmp_path: Path) -> None:
    lab = TritonLab(LabConfig(model_repository=echo_repository, run_dir=tmp_path / "run"))
    lab.start()
    pids = set(lab.lab_processes())
    assert lab.pid in pids and len(pids) >= 2  # server + at least one stub
    lab.stop()
    lab.stop()  # idempotent
    assert not processes_mentioning(str(lab.backend_dir))
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_stop_kills_a_server_that_ignores_sigterm(echo_repository: Path, tmp_path: Path) -> None:
    """A stub stuck in execute makes Triton wait; stop() must still end everything."""
    repo = write_model(
        tmp_path / "repo",
        "stuck",
        ECHO_CONFIG,
        "import time\nclass TritonPythonModel:\n"
        "    def execute(self, requests):\n        time.sleep(3600)\n",
    )
    lab = TritonLab(LabConfig(model_repository=repo, run_dir=tmp_path / "run", exit_timeout_s=1))
    lab.start()
    body = json.dumps(
        {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "FP32", "data": [1]}]}
    ).encode()
    req = urllib.request.Request(f"{lab.http_url}/v2/models/stuck/infer", data=body)
    with pytest.raises(OSError):
        urllib.request.urlopen(req, timeout=1)
    regions = lab.shm_regions()
    assert regions, "the stub maps a shared-memory region under the lab's own prefix"
    started = time.monotonic()
    lab.stop()
    assert time.monotonic() - started < 30
    assert not lab.lab_processes()
    # The killed stub never unlinked its region; the lab does, once nothing maps it.
    assert not [r for r in regions if r.exists()]


def test_failed_start_quotes_the_servers_log(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "config.pbtxt").write_text('name: "broken"\nbackend: "python"\nnonsense {')
    lab = TritonLab(LabConfig(model_repository=repo, run_dir=tmp_path / "run"))
    with pytest.raises(LabError) as err:
        lab.start()
    text = str(err.value)
    assert "exited" in text and "broken" in text
    assert not lab.lab_processes()


def test_missing_repository_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="does not exist"):
        TritonLab(LabConfig(model_repository=tmp_path / "nope")).start()


def test_busy_port_is_retried(
    echo_repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    busy = blocker.getsockname()[1]
    real = ports.free_ports
    calls = []

    def first_busy(host: str = "127.0.0.1") -> ports.LabPorts:
        calls.append(1)
        fresh = real(host)
        return ports.LabPorts(busy, fresh.grpc, fresh.metrics) if len(calls) == 1 else fresh

    monkeypatch.setattr("observability.lab.server.free_ports", first_busy)
    try:
        with TritonLab(LabConfig(model_repository=echo_repository, run_dir=tmp_path / "r")) as lab:
            assert lab.ports.http != busy
            assert len(calls) == 2
        assert "already in use" in lab.log_text()
    finally:
        blocker.close()


def test_missing_wheel_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LabError, match=r"triton-observability\[lab\]"):
        install.find_install()


def test_missing_libpython_names_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        install, "_missing_libraries", lambda binary, libs: ["libpython3.11.so.1.0"]
    )
    with pytest.raises(LabError, match=r"apt-get install libpython3\.11"):
        install.find_install((3, 11))


def test_no_stub_for_an_unknown_python() -> None:
    with pytest.raises(LabError, match=r"no python backend stub for Python 3\.99"):
        install.find_install((3, 99))


def test_cli_lab_runs_until_interrupted(echo_repository: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "cli-run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "observability.cli",
            "lab",
            "-m",
            str(echo_repository),
            "--run-dir",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        preexec_fn=ctrl_c_as_from_a_terminal,
    )
    try:
        lines = []
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "Ctrl-C stops it" in line or not line:
                break
        text = "".join(lines)
        assert "ready" in text and "HTTP     http://127.0.0.1:" in text, text
        assert processes_mentioning(str(run_dir / "backends"))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "nothing left running" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not processes_mentioning(str(run_dir / "backends"))
