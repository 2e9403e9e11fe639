"""Every server we start listens on loopback unless told otherwise, and says so when told.

Each server is started the way a user starts it (the ``triton-obs`` console script, in its
own process group) and the kernel's table of listening sockets for that process tree is read
from /proc: what the process prints is not trusted. Binding beyond loopback is only ever
tried as ``0.0.0.0`` on this machine, and only 127.0.0.1 is ever connected to.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from observability.lab.processes import stop_group
from observability.store import Store
from tests.security.sockets import Listener, listeners

CLI = shutil.which("triton-obs", path=str(Path(sys.executable).parent))
BASE = [CLI] if CLI else [sys.executable, "-m", "observability.cli"]
HAS_STREAMLIT = shutil.which("streamlit", path=str(Path(sys.executable).parent)) is not None


@dataclass
class Running:
    proc: subprocess.Popen[str]
    sockets: list[Listener]
    stdout: str = ""
    stderr: str = ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    args: list[str], expected: int, tmp: Path, ready_text: str = "", timeout_s: float = 60
) -> Iterator[Running]:
    """Start ``triton-obs ARGS``; once ``expected`` sockets listen and stdout shows
    ``ready_text``, yield; stop it after."""
    out, err = tmp / "stdout.txt", tmp / "stderr.txt"
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [*BASE, *args], stdout=stdout, stderr=stderr, text=True, env=env,
            start_new_session=True,
        )  # fmt: skip
    running = Running(proc, [])
    try:
        deadline = time.monotonic() + timeout_s
        while len(running.sockets) < expected or ready_text not in out.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"{args[0]} listened on {running.sockets}, expected {expected} sockets; "
                    f"exit {proc.poll()}\n{out.read_text()}\n{err.read_text()}"
                )
            time.sleep(0.05)
            running.sockets = listeners(proc.pid)
        time.sleep(0.5)  # a late extra listener (a library's debug port) must be seen too
        running.sockets = listeners(proc.pid)
        running.stdout, running.stderr = out.read_text(), err.read_text()
        yield running
    finally:
        # Our own process group: the CLI and the streamlit child it started, nothing else.
        stop_group(proc, 20)
        running.stdout, running.stderr = out.read_text(), err.read_text()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    Store(path).close()
    return path


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


COMMANDS = {
    "collect": (["collect", "--otlp-port", "0", "--port", "0", "--duration", "60"], 2),
    "watch": (["watch", "--otlp-port", "0", "--port", "0", "--duration", "60"], 2),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_collector_servers_listen_on_loopback_only(
    command: str, store: Path, tmp_path: Path
) -> None:
    args, expected = COMMANDS[command]
    with serving([*args, "--store", str(store)], expected, tmp_path, "/metrics") as run:
        assert len(run.sockets) == expected, run.sockets
        assert all(s.address == "127.0.0.1" for s in run.sockets), run.sockets
        assert _metrics_port(run) in {s.port for s in run.sockets}
        assert "triton_obs_" in _scrape(_metrics_port(run))
    assert "warning" not in run.stderr.lower(), run.stderr
    assert run.proc.returncode == 0, run.stderr  # SIGTERM is a clean stop


def test_collect_beyond_loopback_is_explicit_and_warned(store: Path, tmp_path: Path) -> None:
    args = ["collect", "--otlp-port", "0", "--port", "0", "--duration", "60", "--host", "0.0.0.0"]
    with serving([*args, "--store", str(store)], 2, tmp_path, "/metrics") as run:
        assert {s.address for s in run.sockets} == {"0.0.0.0"}, run.sockets
        assert "triton_obs_" in _scrape(_metrics_port(run))  # through 127.0.0.1 only
    assert "warning:" in run.stderr and "listening on 0.0.0.0, beyond loopback" in run.stderr
    assert "--host 127.0.0.1" in run.stderr, "the warning says how to keep it local"


def _metrics_port(run: Running) -> int:
    found = re.search(r"http://\S+:(\d+)/metrics", run.stdout)
    assert found, run.stdout
    return int(found.group(1))


def test_watch_beyond_loopback_is_warned(store: Path, tmp_path: Path) -> None:
    args = ["watch", "--port", "0", "--otlp-port", "0", "--duration", "60", "--host", "0.0.0.0"]
    with serving([*args, "--store", str(store)], 2, tmp_path, "/metrics") as run:
        assert {s.address for s in run.sockets} == {"0.0.0.0"}, run.sockets
    assert "listening on 0.0.0.0, beyond loopback" in run.stderr


@pytest.mark.skipif(not HAS_STREAMLIT, reason="the triage app needs the app extra (streamlit)")
@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_triage_app_listens_where_asked_and_warns_beyond_loopback(
    host: str, store: Path, tmp_path: Path
) -> None:
    port = _free_port()
    args = ["triage", "--store", str(store), "--port", str(port)]
    if host != "127.0.0.1":
        args += ["--host", host]
    with serving(args, 1, tmp_path, "triage app on") as run:
        assert [(s.address, s.port) for s in run.sockets] == [(host, port)], run.sockets
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as r:
            assert r.status == 200
    warned = "beyond loopback" in run.stderr
    assert warned is (host != "127.0.0.1"), run.stderr
