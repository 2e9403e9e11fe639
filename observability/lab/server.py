"""Start and stop a real ``tritonserver`` on loopback, with everything a run leaves in one folder.

A run folder holds the verbose log (server and python stubs in one stream, as in production),
the trace file(s), a private backend directory and ``run.json`` (ports, pid, flags, versions,
and the clock offset that joins monotonic trace timestamps to wall-clock log lines).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from observability.lab.errors import LabError, PortInUseError
from observability.lab.install import TritonInstall, find_install
from observability.lab.logpump import LogPump
from observability.lab.ports import LabPorts, free_ports
from observability.lab.processes import pid_alive, processes_mentioning

__all__ = ["LabConfig", "TritonLab"]

_PORT_BUSY_MARKERS = ("already in use", "failed to bind", "bind failed")
_LIVE_LABS: weakref.WeakSet[TritonLab] = weakref.WeakSet()
_SHM_DIR = Path("/dev/shm")
_SHM_PREFIX_OPTION = "python,shm-region-prefix-name="


@dataclass
class LabConfig:
    """How to run the lab server. Defaults suit the demo pipeline and the tests."""

    model_repository: Path
    run_dir: Path | None = None
    """Created when absent; a fresh temporary folder when ``None``."""
    model_control: str = "none"
    """``none``, ``poll`` or ``explicit``; explicit loads ``load_models`` at start."""
    load_models: tuple[str, ...] = ("*",)
    log_verbose: int = 1
    log_format: str = "default"
    trace: bool = True
    trace_rate: int = 1
    trace_level: str = "TIMESTAMPS"
    trace_log_frequency: int | None = None
    """Write a trace file every N traces (``trace.json.0``, ``.1``, ...) instead of at exit."""
    metrics_config: tuple[str, ...] = ("histogram_latencies=true",)
    backend_config: tuple[str, ...] = ()
    """E.g. ``("python,thread-pool-size=8",)``."""
    extra_args: tuple[str, ...] = ()
    exit_timeout_s: int = 20
    """Triton stops python instances one by one (~1 s each); too short a timeout loses the
    trace file, which Triton writes only on a clean exit."""
    ready_timeout_s: float = 120.0
    strict_readiness: bool = True
    exit_on_error: bool = True
    env: dict[str, str] = field(default_factory=dict)
    start_attempts: int = 3
    launcher: tuple[str, ...] = ()
    """A command Triton is run under, ``{log}`` standing for the log's path, e.g. the compose
    stack's ``triton-obs logpipe --file {log} --``: it writes the log itself."""
    log_pipe: bool = False
    """Send Triton's output through a pipe that the lab writes to ``triton.log``, reopening
    the path when it is renamed away, as a container runtime's log driver does. Triton never
    reopens its own log, so only this lets a rename-and-create rotation happen under it."""


class TritonLab:
    """One real tritonserver process and the stubs it starts; a context manager.

    ``start()`` returns only once the server answers ready; ``stop()`` always leaves no
    process behind (SIGTERM, Triton's own exit timeout, then SIGKILL of the whole group).
    """

    def __init__(self, config: LabConfig, install: TritonInstall | None = None) -> None:
        self.config = config
        self._install = install
        self.run_dir = Path(config.run_dir or tempfile.mkdtemp(prefix="triton-lab-")).resolve()
        self.ports: LabPorts | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_handle: BinaryIO | None = None
        self._log_start = 0
        self._pump: LogPump | None = None
        self.argv: list[str] = []
        self.triton_version: str = ""
        self.exit_code: int | None = None
        self.shm_prefix = _shm_prefix(config.backend_config)

    # -- paths and addresses -------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.run_dir / "triton.log"

    @property
    def trace_path(self) -> Path:
        return self.run_dir / "trace.json"

    @property
    def run_json_path(self) -> Path:
        return self.run_dir / "run.json"

    @property
    def backend_dir(self) -> Path:
        return self.run_dir / "backends"

    def _require_ports(self) -> LabPorts:
        if self.ports is None:
            raise LabError("the lab has not been started")
        return self.ports

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self._require_ports().http}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self._require_ports().grpc}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self._require_ports().metrics}/metrics"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def install(self) -> TritonInstall:
        if self._install is None:
            self._install = find_install()
        return self._install

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> TritonLab:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, ports: LabPorts | None = None) -> TritonLab:
        """Start the server; ``ports`` asks for those exact ports (a restart keeps its
        addresses, as a restarted container does) instead of free ones."""
        install = self.install
        repo = Path(self.config.model_repository).resolve()
        if not repo.is_dir():
            raise LabError(f"model repository {repo} does not exist or is not a folder")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._prepare_backend_dir(install)
        last: LabError | None = None
        for _ in range(max(1, self.config.start_attempts)):
            self.ports = ports or free_ports()
            try:
                self._launch(install, repo)
                self._wait_ready()
            except PortInUseError as err:
                last = err
                self._terminate()
                if ports is not None:
                    raise
                continue
            except BaseException:
                self._terminate()
                raise
            self._write_run_json(install, repo)
            _LIVE_LABS.add(self)
            return self
        raise LabError(f"could not find free ports for tritonserver after retries: {last}")

    def stop(self) -> None:
        """Stop the server and every stub it started; safe to call twice."""
        self._terminate()
        _LIVE_LABS.discard(self)
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(self.run_json_path.read_text())
            data["stopped_at"] = time.time()
            data["exit_code"] = self.exit_code
            self.run_json_path.write_text(json.dumps(data, indent=2, sort_keys=True))

    def restart(self) -> TritonLab:
        """Stop and start again on the same ports and run folder: counters reset, the log
        goes on in the same file, trace files start again from ``trace.json.0``."""
        ports = self.ports
        self.stop()
        return self.start(ports)

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def lab_processes(self) -> dict[int, str]:
        """Every live process of this run: the server and its python stubs."""
        return processes_mentioning(str(self.backend_dir))

    def log_tail(self, lines: int = 20) -> list[str]:
        try:
            with self.log_path.open("rb") as fh:
                tail = deque(fh, maxlen=lines)
        except OSError:
            return []
        return [raw.decode(errors="replace").rstrip("\n") for raw in tail]

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    # -- internals -------------------------------------------------------------------------
    def _prepare_backend_dir(self, install: TritonInstall) -> None:
        """A private backend folder: the wheel's python backend plus the stub for this Python.

        Linking instead of copying the stub into site-packages keeps the installed wheel
        untouched and lets two labs with different Pythons coexist.
        """
        target = self.backend_dir / "python"
        target.mkdir(parents=True, exist_ok=True)
        links = {
            "libtriton_python.so": install.python_backend / "libtriton_python.so",
            "triton_python_backend_utils.py": install.python_backend
            / "triton_python_backend_utils.py",
            "triton_python_backend_stub": install.stub,
        }
        for name, source in links.items():
            link = target / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(source)

    def _command(self, install: TritonInstall, repo: Path) -> list[str]:
        cfg = self.config
        ports = self._require_ports()
        argv = [
            str(install.server),
            f"--model-repository={repo}",
            f"--backend-directory={self.backend_dir}",
            "--http-address=127.0.0.1",
            f"--http-port={ports.http}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={ports.grpc}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={ports.metrics}",
            f"--log-verbose={cfg.log_verbose}",
            f"--exit-timeout-secs={cfg.exit_timeout_s}",
            f"--strict-readiness={str(cfg.strict_readiness).lower()}",
            f"--exit-on-error={str(cfg.exit_on_error).lower()}",
            "--allow-gpu-metrics=false",
        ]
        if cfg.log_format != "default":
            argv.append(f"--log-format={cfg.log_format}")
        if cfg.model_control != "none":
            argv.append(f"--model-control-mode={cfg.model_control}")
        if cfg.model_control == "explicit":
            argv += [f"--load-model={name}" for name in cfg.load_models]
        if cfg.trace:
            argv += [
                f"--trace-config=triton,file={self.trace_path}",
                f"--trace-config=rate={cfg.trace_rate}",
                f"--trace-config=level={cfg.trace_level}",
            ]
            if cfg.trace_log_frequency:
                argv.append(f"--trace-config=triton,log-frequency={cfg.trace_log_frequency}")
        argv += [f"--metrics-config={item}" for item in cfg.metrics_config]
        argv += [f"--backend-config={item}" for item in cfg.backend_config]
        if not any(item.startswith(_SHM_PREFIX_OPTION) for item in cfg.backend_config):
            argv.append(f"--backend-config={_SHM_PREFIX_OPTION}{self.shm_prefix}")
        argv += list(cfg.extra_args)
        return argv

    def _environment(self, install: TritonInstall) -> dict[str, str]:
        env = dict(os.environ)
        libs = [str(install.libs)]
        if env.get("LD_LIBRARY_PATH"):
            libs.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
        # The stub's embedded interpreter finds this environment's packages (numpy, ours)
        # through the python3 first on PATH.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        # Log lines carry local wall-clock time with no zone: pin it so they can be joined.
        env["TZ"] = "UTC"
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.config.env)
        return env

    def _launch(self, install: TritonInstall, repo: Path) -> None:
        self.argv = self._command(install, repo)
        if self.config.launcher:
            self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
            launcher = [a.replace("{log}", str(self.log_path)) for a in self.config.launcher]
            self.argv = [*launcher, *self.argv]
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self._environment(install),
                cwd=self.run_dir,
                start_new_session=True,
            )
            return
        if self.config.log_pipe:
            self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self._environment(install),
                cwd=self.run_dir,
                start_new_session=True,
            )
            assert self._proc.stdout is not None
            self._pump = LogPump(self._proc.stdout, self.log_path).start()
            return
        handle = self.log_path.open("ab")
        self._log_handle = handle
        self._log_start = handle.tell()
        self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=self._environment(install),
            cwd=self.run_dir,
            start_new_session=True,
        )

    def _new_log(self) -> str:
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(self._log_start)
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def _failure(self, what: str) -> LabError:
        """An error quoting the server's own words: its error lines first, then the tail."""
        new_log = self._new_log()
        tail = "\n".join(self.log_tail(15))
        if any(marker in new_log.lower() for marker in _PORT_BUSY_MARKERS):
            return PortInUseError(f"{what}: a port was taken\n{tail}")
        errors = [line for line in new_log.splitlines() if line.startswith("E")][:10]
        quoted = "\n".join(errors) + "\n...\n" if errors else ""
        return LabError(f"{what}. From {self.log_path}:\n{quoted}{tail}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.config.ready_timeout_s
        url = f"{self.http_url}/v2/health/ready"
        assert self._proc is not None
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                self.exit_code = code
                raise self._failure(f"tritonserver exited with code {code} before it was ready")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.2)
        raise self._failure(
            f"tritonserver was not ready within {self.config.ready_timeout_s:.0f} s"
        )

    def _server_metadata(self) -> dict[str, object]:
        try:
            with urllib.request.urlopen(f"{self.http_url}/v2", timeout=5) as resp:
                return dict(json.loads(resp.read()))
        except (urllib.error.URLError, OSError, ValueError):
            return {}

    def _write_run_json(self, install: TritonInstall, repo: Path) -> None:
        meta = self._server_metadata()
        self.triton_version = str(meta.get("version", ""))
        ports = self._require_ports()
        data = {
            "format": 1,
            "pid": self.pid,
            "ports": {"http": ports.http, "grpc": ports.grpc, "metrics": ports.metrics},
            "urls": {
                "http": self.http_url,
                "grpc": self.grpc_url,
                "metrics": self.metrics_url,
            },
            "argv": self.argv,
            "model_repository": str(repo),
            "log": str(self.log_path),
            "trace": str(self.trace_path) if self.config.trace else None,
            "versions": {
                "triton": self.triton_version,
                "nvidia_pytriton": install.pytriton_version,
                "python": install.python_version,
            },
            "started_at": time.time(),
            "clock": {
                "epoch_ns_minus_monotonic_ns": time.time_ns() - time.monotonic_ns(),
                "log_timezone": "UTC",
            },
        }
        self.run_json_path.write_text(json.dumps(data, indent=2, sort_keys=True))

    def _terminate(self) -> None:
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=self.config.exit_timeout_s + 10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            self.exit_code = proc.returncode
            # Stubs share the server's process group; whatever survived the server goes too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        for pid in self.lab_processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(pid_alive(p) for p in self.lab_processes()):
            time.sleep(0.1)
        if not any(pid_alive(p) for p in self.lab_processes()):
            self._remove_shm_regions()
        if self._log_handle is not None:
            with contextlib.suppress(OSError):
                self._log_handle.close()
            self._log_handle = None
        if self._pump is not None:
            self._pump.join(timeout=10)
            self._pump = None

    def shm_regions(self) -> list[Path]:
        """The python backend's shared-memory regions of this run (one or more per stub)."""
        try:
            return sorted(_SHM_DIR.glob(f"{self.shm_prefix}*"))
        except OSError:
            return []

    def _remove_shm_regions(self) -> None:
        """Triton unlinks a stub's region only when that stub is shut down cleanly; a stub
        killed (a fault, the exit timeout, SIGKILL) leaves 1 MiB or more in ``/dev/shm`` for
        good, and a host whose ``/dev/shm`` fills can start no python model. Called once no
        process of this run is left, so nothing still maps them."""
        for region in self.shm_regions():
            with contextlib.suppress(OSError):
                region.unlink()


def _shm_prefix(backend_config: tuple[str, ...]) -> str:
    """The region name prefix the lab's python backend uses: the caller's, else one of its
    own, so that a run's leftovers can be told from another server's live regions."""
    for item in backend_config:
        if item.startswith(_SHM_PREFIX_OPTION):
            return item[len(_SHM_PREFIX_OPTION) :]
    return f"triton_obs_lab_{uuid.uuid4().hex[:12]}_"


@atexit.register
def _stop_forgotten_labs() -> None:
    """A lab must never outlive the Python process that started it."""
    for lab in list(_LIVE_LABS):
        with contextlib.suppress(Exception):
            lab.stop()
