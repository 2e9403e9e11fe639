"""A fleet in a box (issue 16): N lab Tritons as kubelet-logged pods, one ``watch``, Prometheus.

Each Triton runs under :mod:`observability.demo.crilog`, which writes its output the way the
kubelet does (``<root>/pods/<namespace>_<pod>_<uid>/triton/0.log``, CRI lines, rotated by
rename). One ``triton-obs watch --pod-logs <root>/pods --targets targets.yaml`` follows every
pod (the targets file adds each pod's URLs, so /metrics and stats are read too; its entries are
named ``namespace/pod``, the names ``--pod-logs`` gives, so they win over the bare pods). A real
Prometheus (Debian's ``prometheus``, loopback) scrapes every Triton as job ``triton`` with the
``namespace``/``pod`` labels a PodMonitor would add, and the ``watch`` as job ``triton-obs``
(its series carry their own ``namespace``/``pod``), with the repository's alert rules, each
``for:`` scaled down so that an alert fires within a demo (the expressions unchanged).

Every process is started here and stopped here by its pid; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from observability.lab import LabConfig, TritonLab, demo_env, demo_repository
from observability.lab.errors import LabError
from observability.lab.ports import free_port

__all__ = ["FleetBox", "FleetOptions", "Pod", "scaled_rules"]

NAMESPACE = "ml"
HANG_MODEL = "router"


@dataclass
class FleetOptions:
    pods: int = 3
    run_dir: Path | None = None
    """The box's folder (``pods/``, ``stores/``, ``prometheus/``, each lab's run folder);
    a fresh temporary one when ``None``."""
    hang_pod: int = 1
    """Which pod (0-based) gets the hang."""
    hang_s: float = 60.0
    deadline_s: float = 3.0
    """watch's ``--deadline``: seconds before a running request counts as hung."""
    for_scale: float = 0.1
    """Every alert rule's ``for:`` times this (1m: 6 s); expressions unchanged."""
    rotate_bytes: int = 1 * 2**20
    """0.log is rotated past this size (the kubelet's ``containerLogMaxSize``, 10 MiB)."""
    load_rate_per_s: float = 4.0
    """Healthy background requests per second, per pod (0: none)."""
    watch_duration_s: float = 900.0
    """A bound on the ``watch`` process whatever happens to this one."""
    env: dict[str, str] = field(default_factory=dict)
    """More environment for the Tritons' models (the in-model library's settings)."""


@dataclass
class Pod:
    name: str
    uid: str
    folder: Path
    lab: TritonLab

    @property
    def log(self) -> Path:
        return self.folder / "triton" / "0.log"

    @property
    def target(self) -> str:
        return f"{NAMESPACE}/{self.name}"


def _get(url: str, timeout_s: float = 5.0, limit: int = 8 * 2**20) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # loopback only
        return bytes(resp.read(limit))


def _duration_s(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(int(v) * units[u] for v, u in re.findall(r"(\d+)(ms|s|m|h)", text))


def rules_dir() -> Path:
    import dashboards

    return Path(dashboards.__file__).resolve().parent / "alerts"


def scaled_rules(out: Path, scale: float) -> dict[str, float]:
    """The repository's rule files copied into ``out`` with every ``for:`` times ``scale``
    (expressions byte for byte the same); each alert's ``for`` in seconds."""
    out.mkdir(parents=True, exist_ok=True)
    fors: dict[str, float] = {}
    for path in sorted(rules_dir().glob("*.rules.yml")):
        doc = yaml.safe_load(path.read_text())
        for group in doc["groups"]:
            for rule in group["rules"]:
                seconds = _duration_s(rule.get("for", "0s")) * scale
                if seconds:
                    rule["for"] = f"{max(1, round(seconds))}s"
                if "alert" in rule:
                    fors[rule["alert"]] = max(1, round(seconds)) if seconds else 0.0
        (out / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return fors


def _stop(proc: subprocess.Popen[bytes] | None, timeout_s: float = 20.0) -> None:
    """SIGTERM to the process we started (by its pid), SIGKILL if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@dataclass
class FleetBox:
    """Start with :meth:`start`, always :meth:`stop` (a context manager does)."""

    options: FleetOptions = field(default_factory=FleetOptions)
    say: Callable[[str], None] = lambda _msg: None
    root: Path = field(init=False)
    pods: list[Pod] = field(default_factory=list, init=False)
    watch_port: int = field(default=0, init=False)
    prom_port: int = field(default=0, init=False)
    fors: dict[str, float] = field(default_factory=dict, init=False)
    _watch: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _prom: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _load_stop: threading.Event = field(default_factory=threading.Event, init=False)
    _loads: list[threading.Thread] = field(default_factory=list, init=False)
    findings: list[dict[str, Any]] = field(default_factory=list, init=False)
    """Each finding ``watch --format jsonl`` printed, as it printed it."""

    def __post_init__(self) -> None:
        given = self.options.run_dir
        self.root = Path(given or tempfile.mkdtemp(prefix="triton-fleet-")).resolve()

    # -- addresses ---------------------------------------------------------------------
    @property
    def pods_dir(self) -> Path:
        return self.root / "pods"

    @property
    def watch_url(self) -> str:
        return f"http://127.0.0.1:{self.watch_port}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.prom_port}"

    def watch_urls(self) -> dict[str, str]:
        """Pod -> the watch API that holds it (one watch: the same for all)."""
        return {p.name: self.watch_url for p in self.pods}

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> FleetBox:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> FleetBox:
        if shutil.which("prometheus") is None:
            raise LabError("the fleet needs Prometheus: apt-get install -y prometheus")
        try:
            for i in range(self.options.pods):
                self._start_pod(i)
            self._start_watch()
            self._start_prometheus()
            self._start_load()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_pod(self, i: int) -> None:
        name = f"triton-{i}"
        uid = str(uuid.uuid4())
        folder = self.pods_dir / f"{NAMESPACE}_{name}_{uid}"
        log = folder / "triton" / "0.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        launcher = (
            sys.executable, "-m", "observability.demo.crilog", "--file", str(log),
            "--plain", "{log}", "--max-bytes", str(self.options.rotate_bytes), "--",
        )  # fmt: skip
        lab = TritonLab(
            LabConfig(
                model_repository=demo_repository(),
                run_dir=self.root / "labs" / name,
                model_control="explicit",
                trace=False,
                launcher=launcher,
                env={
                    **demo_env("all"),
                    # The in-model library's BLS deadline: the same as watch's.
                    "TRITON_OBS_DEADLINE_S": f"{self.options.deadline_s:g}",
                    **self.options.env,
                },
                exit_timeout_s=5,
            )
        )
        pod = Pod(name, uid, folder, lab)
        self.pods.append(pod)  # before start: stop() stops a half-started one too
        self.say(f"starting {pod.target} (Triton on loopback, CRI log {log})")
        lab.start()

    def _start_watch(self) -> None:
        targets = self.root / "targets.yaml"
        rows = [
            {
                "name": p.target, "namespace": NAMESPACE, "pod": p.name,
                "url": p.lab.http_url, "metrics_url": p.lab.metrics_url,
                "log": str(p.folder / "triton" / "*.log"), "log_format": "cri",
            }
            for p in self.pods
        ]  # fmt: skip
        targets.write_text(yaml.safe_dump({"targets": rows}, sort_keys=False))
        argv = [
            sys.executable, "-c", "from observability.cli import main; main()", "watch",
            "--pod-logs", str(self.pods_dir), "--targets", str(targets),
            "--store", str(self.root / "stores"), "--port", "0",
            "--deadline", str(self.options.deadline_s), "--evidence", "60", "--lookback", "300",
            "--duration", str(self.options.watch_duration_s), "--format", "jsonl",
        ]  # fmt: skip
        self.say("starting triton-obs watch --pod-logs " + str(self.pods_dir))
        err = (self.root / "watch.log").open("ab")
        self._watch = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL
        )
        err.close()
        assert self._watch.stdout is not None
        threading.Thread(
            target=self._read_findings, args=(self._watch.stdout,), daemon=True
        ).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self._watch.poll() is None:
            m = re.search(r"127\.0\.0\.1:(\d+)/metrics", (self.root / "watch.log").read_text())
            if m:
                self.watch_port = int(m.group(1))
                return
            time.sleep(0.2)
        raise LabError(f"watch did not start: {(self.root / 'watch.log').read_text()[-2000:]}")

    def _read_findings(self, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                self.findings.append(json.loads(line))
            except ValueError:
                continue

    def _start_prometheus(self) -> None:
        prom_root = self.root / "prometheus"
        self.fors = scaled_rules(prom_root / "rules", self.options.for_scale)
        triton = [
            {
                "targets": [urllib.parse.urlparse(p.lab.metrics_url).netloc],
                "labels": {"namespace": NAMESPACE, "pod": p.name},
            }
            for p in self.pods
        ]
        config = {
            "global": {
                "scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s",
            },
            "rule_files": [str(p) for p in sorted((prom_root / "rules").glob("*.rules.yml"))],
            "scrape_configs": [
                {"job_name": "triton", "static_configs": triton},
                {"job_name": "triton-obs",
                 "static_configs": [{"targets": [f"127.0.0.1:{self.watch_port}"]}]},
            ],
        }  # fmt: skip
        cfg = prom_root / "prometheus.yml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        for _attempt in range(3):  # another process can take the port between probe and bind
            self.prom_port = free_port()
            log = (prom_root / "prometheus.log").open("ab")
            self._prom = subprocess.Popen(
                [
                    "prometheus", f"--config.file={cfg}",
                    f"--storage.tsdb.path={prom_root / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{self.prom_port}", "--log.level=warn",
                ],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            log.close()
            self.say(f"starting prometheus on {self.prometheus_url}")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self._prom.poll() is None:
                try:
                    _get(f"{self.prometheus_url}/-/ready", 1.0)
                    return
                except OSError:
                    time.sleep(0.2)
            _stop(self._prom)
        raise LabError("prometheus did not start: " + (prom_root / "prometheus.log").read_text())

    def _start_load(self) -> None:
        if not self.options.load_rate_per_s:
            return
        from observability.load import LoadConfig, run_load

        for p in self.pods:
            cfg = LoadConfig(
                url=p.lab.grpc_url, concurrency=1, requests=1_000_000,
                duration_s=self.options.watch_duration_s, timeout_s=10,
                run_tag=f"{p.name}-load", rate_per_s=self.options.load_rate_per_s,
            )  # fmt: skip
            t = threading.Thread(
                target=run_load, args=(cfg,), kwargs={"stop": self._load_stop}, daemon=True
            )
            t.start()
            self._loads.append(t)

    def stop(self) -> None:
        """Stop everything started, by pid: the load, Prometheus, watch, each Triton."""
        self._load_stop.set()
        for t in self._loads:
            t.join(timeout=15)
        _stop(self._prom)
        _stop(self._watch, 40)
        for p in self.pods:
            p.lab.stop()

    # -- the fault and what it gives ---------------------------------------------------
    def inject_hang(self, index: int | None = None, request_id: str = "fleet-hang") -> Pod:
        """One request to ``router`` on one pod whose detector child does not answer for
        ``hang_s``; the client gives up after 2 s (the request stays executing in Triton)."""
        from observability.load import TritonClient
        from observability.load.workload import inputs_for

        pod = self.pods[self.options.hang_pod if index is None else index]
        client = TritonClient(pod.lab.grpc_url, 2)
        try:
            client.infer(
                HANG_MODEL, inputs_for(HANG_MODEL, random.Random(7)), request_id, "hang",
                {"fault": "hang", "hang_s": f"{self.options.hang_s:g}"},
            )  # fmt: skip
        finally:
            client.close()
        return pod

    def prom_api(self, path: str, **params: str | float) -> Any:
        query = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
        body = json.loads(_get(f"{self.prometheus_url}/api/v1/{path}?{query}", 30.0))
        if body.get("status") != "success":
            raise LabError(f"prometheus {path}: {body}")
        return body["data"]

    def firing(self) -> list[dict[str, str]]:
        """Labels of every alert firing now (Prometheus's /api/v1/alerts)."""
        alerts = self.prom_api("alerts")["alerts"]
        return [dict(a["labels"]) for a in alerts if a.get("state") == "firing"]

    def wait_for(
        self, predicate: Callable[[], bool], timeout_s: float, every_s: float = 1.0
    ) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if predicate():
                    return True
            except (OSError, ValueError, LabError):
                pass
            time.sleep(every_s)
        return False

    def targets_up(self) -> dict[tuple[str, str], bool]:
        rows = self.prom_api("query", query="up")["result"]
        return {
            (r["metric"]["job"], r["metric"].get("pod", "")): r["value"][1] == "1" for r in rows
        }

    def rotations(self) -> dict[str, int]:
        """Rotated log files each pod's folder holds now."""
        return {p.name: len(list(p.log.parent.glob("0.log.*"))) for p in self.pods}

    def environ_note(self) -> str:
        return f"root {self.root}; pid {os.getpid()}"


def run_fleet_demo(
    options: FleetOptions, console: Any, ui: bool = False, alert_timeout_s: float = 90.0
) -> int:
    """``triton-obs demo --fleet N``: start the box, hang one pod, show which pod's alert
    fires and what its watch found; then the triage app's Fleet page until Ctrl-C (``ui``)."""
    from rich.markup import escape
    from rich.table import Table

    from observability.demo.runner import _interrupt_on_sigterm

    _interrupt_on_sigterm()
    t0 = time.monotonic()

    def say(msg: str) -> None:
        console.print(f"[dim]t+{time.monotonic() - t0:4.0f}s[/] {escape(msg)}", highlight=False)

    box = FleetBox(options, say)
    try:
        box.start()
        table = Table(title=f"{len(box.pods)} pods", title_justify="left")
        for col in ("pod", "Triton HTTP", "metrics", "CRI log"):
            table.add_column(col)
        for p in box.pods:
            table.add_row(p.target, p.lab.http_url, p.lab.metrics_url, str(p.log))
        console.print(table)
        console.print(f"watch API   {box.watch_url}/api/v1/targets")
        console.print(f"Prometheus  {box.prometheus_url}  (rules' for: x{options.for_scale:g})")
        if not box.wait_for(lambda: len(box.targets_up()) == len(box.pods) + 1
                            and all(box.targets_up().values()), 30):  # fmt: skip
            say(f"not every target is up in Prometheus: {box.targets_up()}")
        time.sleep(3)  # a few healthy scrapes and passes first
        pod = box.inject_hang()
        say(f"injected a hang ({HANG_MODEL}, {options.hang_s:g} s) into {pod.target} only")
        box.wait_for(
            lambda: any(a.get("alertname") == "TritonHungRequests" for a in box.firing()),
            alert_timeout_s,
        )
        firing = box.firing()
        alerts = Table(title="alerts firing in Prometheus", title_justify="left")
        for col in ("alert", "severity", "namespace", "pod", "model"):
            alerts.add_column(col)
        for a in sorted(firing, key=lambda a: (a.get("pod", ""), a.get("alertname", ""))):
            alerts.add_row(
                a.get("alertname", ""), a.get("severity", ""), a.get("namespace", ""),
                a.get("pod", ""), a.get("model", ""),
            )  # fmt: skip
        console.print(alerts)
        found = json.loads(
            _get(f"{box.watch_url}/api/v1/findings?target={urllib.parse.quote(pod.target)}")
        )
        findings = Table(title=f"what watch found on {pod.target}", title_justify="left")
        for col in ("severity", "kind", "model", "request", "summary"):
            findings.add_column(col)
        for f in found.get("findings", []):
            findings.add_row(
                f["severity"], f["kind"], f["model"], f.get("request_id") or "",
                escape(f["summary"][:160]),
            )  # fmt: skip
        console.print(findings)
        pods_firing = sorted({a.get("pod", "") for a in firing if a.get("pod")})
        console.print(
            f"pods with a firing alert: {', '.join(pods_firing) or 'none'} "
            f"(hang injected into {pod.name})"
        )
        console.print(f"logs, stores and Prometheus's data are in {box.root}")
        code = 0 if pods_firing == [pod.name] else 1
        if ui:
            _serve_fleet_ui(box, console)
        return code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: stopping everything…[/]")
        return 130
    finally:
        say("stopping prometheus, watch and the Tritons…")
        box.stop()


def _serve_fleet_ui(box: FleetBox, console: Any) -> None:
    import importlib.util

    from dashboards.app_cli import streamlit_command
    from observability.lab.processes import stop_group

    if importlib.util.find_spec("streamlit") is None:
        console.print("[yellow]The triage app needs the app extra[/]: pip install "
                      "'triton-observability[app]'")  # fmt: skip
        return
    port = free_port()
    env = {
        **os.environ,
        "TRITON_OBS_TRIAGE_PROMETHEUS": box.prometheus_url,
        "TRITON_OBS_TRIAGE_WATCH": box.watch_url,
    }
    console.print(f"[green]triage app, Fleet page:[/] http://127.0.0.1:{port}/?page=fleet "
                  "(Ctrl-C stops it and the fleet)")  # fmt: skip
    child = subprocess.Popen(streamlit_command(port, "127.0.0.1"), env=env, start_new_session=True)
    try:
        child.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop_group(child, 10)
