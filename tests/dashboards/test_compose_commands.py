"""Every service of compose.yaml whose program exists here runs with the stack's own command
line, so a typo in a flag or a path fails a test although no Docker engine runs here.

A container path is translated to the host path its volume mounts (``./deploy/...`` to the
repository, named volumes to a temporary folder), files that name container paths are copied
with those paths translated too, and fixed ports become free loopback ports: nothing else of
the command line changes. Prometheus (with the stack's rules and scrape config) and
Alertmanager must become ready; ``watch`` and the triage app (the Triton-facing services) run
against the lab Triton (``lab``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from observability.lab import TritonLab
from observability.lab.ports import free_port
from tests import yamlfast

ROOT = Path(__file__).resolve().parents[2]
SERVICES: dict[str, dict] = yamlfast.load((ROOT / "compose.yaml").read_text())["services"]
BINARIES = {"prometheus": "prometheus", "alertmanager": "prometheus-alertmanager"}
"""Debian's names of the stack's programs."""


def _defaults(text: str) -> str:
    """``${VAR:-default}`` as compose interpolates it with VAR unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


class Mounts:
    """Container path -> host path, from a service's volumes."""

    def __init__(self, service: str, scratch: Path) -> None:
        self.pairs: list[tuple[str, str]] = []
        for volume in SERVICES[service].get("volumes", []):
            source, target = _defaults(volume).split(":")[:2]
            host = ROOT / source if source.startswith(".") else scratch / source
            if not source.startswith("."):
                host.mkdir(parents=True, exist_ok=True)
            self.pairs.append((target, str(host)))
        self.pairs.sort(key=lambda p: -len(p[0]))  # the longest container path first

    def __call__(self, text: str) -> str:
        """Each container path (not a part of a longer one) replaced, in one pass."""
        pairs = sorted(self.pairs, key=lambda p: -len(p[0]))
        hosts = dict(pairs)
        pattern = "|".join(re.escape(c) for c, _ in pairs)
        return re.sub(rf"(?<![\w/.-])({pattern})(?=$|[/\s\"'\]])", lambda m: hosts[m[1]], text)


def _args(service: str, mounts: Mounts, ports: dict[str, str]) -> list[str]:
    out = []
    for arg in SERVICES[service]["command"]:
        arg = mounts(_defaults(arg))
        for old, new in ports.items():
            arg = arg.replace(old, new)
        out.append(arg)
    return out


def _ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


@pytest.fixture
def running() -> Iterator[Callable[[list[str]], subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="apt-get install prometheus")
def test_prometheus_runs_with_the_stacks_config_and_rules(tmp_path: Path, running) -> None:
    mounts = Mounts("prometheus", tmp_path)
    config = tmp_path / "prometheus.yml"
    config.write_text(mounts((ROOT / "deploy/prometheus/prometheus.yml").read_text()))
    port = str(free_port())
    mounts.pairs = [p for p in mounts.pairs if p[0] != "/etc/prometheus/prometheus.yml"]
    mounts.pairs.append(("/etc/prometheus/prometheus.yml", str(config)))  # the translated copy
    argv = ["prometheus", *_args("prometheus", mounts, {":9090": f":{port}"})]
    proc = running(argv)
    assert _ready(f"http://127.0.0.1:{port}/-/ready", proc), proc.communicate(timeout=5)[0]
    loaded: set[str] = set()
    deadline = time.monotonic() + 20  # the rule manager starts just after the ready flag
    while not loaded and time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/rules", timeout=5) as r:
            groups = yamlfast.load(r.read())["data"]["groups"]
        loaded = {rule["name"] for g in groups for rule in g["rules"]}
        time.sleep(0.5)
    assert {"TritonTargetDown", "TritonHungRequests", "TritonObsCollectorDown"} <= loaded
    assert "triton:request_latency_ms:rate5m" in loaded


@pytest.mark.skipif(
    shutil.which("prometheus-alertmanager") is None,
    reason="apt-get install prometheus-alertmanager",
)
def test_alertmanager_runs_with_the_stacks_config(tmp_path: Path, running) -> None:
    mounts = Mounts("alertmanager", tmp_path)
    port = str(free_port())
    argv = ["prometheus-alertmanager", *_args("alertmanager", mounts, {":9093": f":{port}"})]
    proc = running(argv)
    assert _ready(f"http://127.0.0.1:{port}/-/ready", proc), proc.communicate(timeout=5)[0]


@pytest.mark.lab
def test_watch_and_triage_run_with_the_stacks_arguments(
    tmp_path: Path, running, lab_factory: Callable[..., TritonLab]
) -> None:
    lab = lab_factory(ROOT / "observability/lab/repos/demo", name="compose-args", trace=False)
    try:
        ports = {
            "127.0.0.1:8000": lab.http_url.removeprefix("http://"),
            "127.0.0.1:8002": lab.metrics_url.removeprefix("http://").removesuffix("/metrics"),
            "9464": str(free_port()),
        }
        mounts = Mounts("triton-obs", tmp_path)
        log = Path(mounts("/var/log/triton/triton.log"))
        log.parent.mkdir(parents=True, exist_ok=True)
        log.symlink_to(lab.log_path)
        watch = running(
            [sys.executable, "-m", "observability.cli", *_args("triton-obs", mounts, ports)]
        )
        assert _ready(f"http://127.0.0.1:{ports['9464']}/metrics", watch, 60)
        time.sleep(3)  # a detection pass or two writes the store
        store = Path(mounts("/data/triton-obs.db"))
        assert store.exists()
        triage_port = str(free_port())
        mounts = Mounts("triage", tmp_path)
        argv = _args("triage", mounts, {"8501": triage_port, "0.0.0.0": "127.0.0.1"})
        triage = running([sys.executable, "-m", "observability.cli", *argv])
        assert _ready(f"http://127.0.0.1:{triage_port}/_stcore/health", triage, 60)
    finally:
        lab.stop()
