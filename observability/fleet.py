"""One ``watch`` for many Tritons: ``--targets FILE`` and ``--pod-logs GLOB``.

Each target is a :class:`~observability.watch.Watcher` of its own: its own collector thread
and state (log tailers, scrapers), its own store file (``<store dir>/<target>.db``: the store
keeps its one-writer rule), its own live window (bounded by ``max_records``) and known
findings. One detection thread runs every target's pass in turn, and one HTTP server serves
the /metrics page of all of them (every series with ``target``, ``namespace`` and ``pod``
labels; ``""`` where unknown) and the read-only API (``observability/api.py``).

``--pod-logs`` follows the files the kubelet writes,
``/var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log`` (CRI format): every
:data:`RESCAN_S` it looks for new pod folders (a new target, named ``namespace/pod``) and
for folders gone (the pod was deleted: its target stops, its series leave the page). Inside a
pod, the container restarts (``0.log`` then ``1.log``) and the kubelet's rotations
(``0.log`` renamed ``0.log.<time>``) are followed by the log glob
(``observability/collect/logglob.py``).
"""

from __future__ import annotations

import glob
import importlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Info, ProcessCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

from observability.collect.selfmetrics import serve_http
from observability.findings import Finding
from observability.store import StoreError
from observability.watch import WatchConfig, Watcher, until_next_pass

__all__ = [
    "LABEL_NAMES",
    "FleetWatcher",
    "Target",
    "TargetError",
    "discover_pods",
    "load_targets",
    "pod_log_pattern",
]

log = logging.getLogger(__name__)

LABEL_NAMES = ("target", "namespace", "pod")
"""Added to every series of a fleet's /metrics page; bounded: one value per target."""
MAX_TARGETS = 64
"""Targets at once: a node runs far fewer Triton pods; a flood of folders is not a fleet."""
RESCAN_S = 2.0
"""How often ``--pod-logs`` looks for pods that appeared or went."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,126}$")
_POD_DIR = re.compile(
    r"^(?P<ns>[a-z0-9][a-z0-9-]{0,62})_(?P<pod>[a-z0-9][a-z0-9.-]{0,252})"
    r"_(?P<uid>[0-9a-fA-F-]{1,64})$"
)
_KEYS = {"name", "url", "metrics_url", "log", "log_format", "namespace", "pod"}
_SKIP = ("process_", "python_", "triton_obs_build")
"""Series of the process, not of a target: once on the page, without target labels."""


class TargetError(ValueError):
    """A targets file or pod-log glob that cannot be used; the message says why."""


@dataclass(frozen=True)
class Target:
    name: str
    url: str | None = None
    metrics_url: str | None = None
    log: str | None = None
    """A file or a glob (every file it matches, as they appear)."""
    log_format: str = "auto"
    namespace: str | None = None
    pod: str | None = None
    folder: str | None = None
    """The pod's log folder (``--pod-logs``): the target ends when it is gone."""

    @property
    def labels(self) -> dict[str, str]:
        return {k: v for k, v in (("namespace", self.namespace), ("pod", self.pod)) if v}

    @property
    def store_name(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.name) + ".db"


def load_targets(path: Path) -> list[Target]:
    """The targets of a TOML or YAML file: ``targets = [{name, url, metrics_url, log,
    log_format, namespace, pod}, ...]`` (``docs/guide.md``)."""
    try:
        text = path.read_text()
    except OSError as err:
        raise TargetError(f"{path}: {err.strerror or err}") from None
    data: Any
    try:
        if path.suffix == ".toml":
            try:  # by name: mypy checks for Python 3.10, which has none
                tomllib = importlib.import_module("tomllib")
            except ModuleNotFoundError:  # Python 3.10
                raise TargetError(
                    f"{path}: reading TOML needs Python 3.11 (or write YAML)"
                ) from None
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:  # pragma: no cover - pyproject's dashboards extra has it
                raise TargetError(f"{path}: reading YAML needs pyyaml (or write TOML)") from None
            data = yaml.safe_load(text)
        else:
            raise TargetError(f"{path}: a targets file ends in .toml, .yaml or .yml")
    except TargetError:
        raise
    except Exception as err:  # tomllib's and yaml's own errors, with their line
        raise TargetError(f"{path}: {err}") from None
    rows = data.get("targets") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise TargetError(f"{path}: no 'targets' list")
    if len(rows) > MAX_TARGETS:
        raise TargetError(f"{path}: {len(rows)} targets, at most {MAX_TARGETS}")
    targets: list[Target] = []
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise TargetError(f"{path}: target {n} is not a table")
        unknown = set(row) - _KEYS
        if unknown:
            raise TargetError(f"{path}: target {n}: unknown keys {sorted(unknown)}")
        if not all(isinstance(v, str) for v in row.values()):
            raise TargetError(f"{path}: target {n}: every value is a string")
        name = row.get("name") or row.get("pod")
        if not name or not _NAME.match(name):
            raise TargetError(
                f"{path}: target {n}: a name of letters, digits and _.:/- (127 at most)"
            )
        if not any(row.get(k) for k in ("url", "metrics_url", "log")):
            raise TargetError(f"{path}: target {name!r}: give url, metrics_url or log")
        targets.append(Target(**{**row, "name": name}))
    names = [t.name for t in targets]
    stores = [t.store_name for t in targets]
    if len(set(names)) < len(names) or len(set(stores)) < len(stores):
        raise TargetError(f"{path}: target names must be unique (they name the store files)")
    return targets


def pod_log_pattern(value: str) -> str:
    """``--pod-logs``: a folder (``/var/log/pods``: every container of every pod) or a glob
    whose last three parts are the pod folder, the container and the file
    (``/var/log/pods/*_triton-*_*/triton/*.log``)."""
    if not any(c in value for c in "*?["):
        if not os.path.isdir(value):
            raise TargetError(f"--pod-logs {value!r}: no such folder (or give a glob)")
        return os.path.join(value, "*", "*", "*.log")
    if len(Path(value).parts) < 4:
        raise TargetError(f"--pod-logs {value!r}: <folder>/<pod folder>/<container>/<file>")
    return value


def discover_pods(pattern: str) -> dict[str, Target]:
    """The pods whose logs ``pattern`` matches now, by target name (``namespace/pod``)."""
    container, filename = Path(pattern).parts[-2:]
    found: dict[str, Target] = {}
    for path in sorted(glob.glob(pattern)):
        folder = os.path.dirname(os.path.dirname(path))
        m = _POD_DIR.match(os.path.basename(folder))
        if m is None:
            continue
        name = f"{m['ns']}/{m['pod']}"
        if name in found:
            continue
        found[name] = Target(
            name=name,
            log=os.path.join(folder, container, filename),
            log_format="cri",
            namespace=m["ns"],
            pod=m["pod"],
            folder=folder,
        )
    return found


class _Relabelled:
    """A prometheus_client collector: every target's own registry, each sample with the
    target's labels added, families of one name merged."""

    def __init__(self, fleet: FleetWatcher) -> None:
        self.fleet = fleet

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for w in self.fleet.watchers():
            extra = {"target": w.name, **{k: w.cfg.labels.get(k, "") for k in LABEL_NAMES[1:]}}
            for family in w.runner.metrics.registry.collect():
                if family.name.startswith(_SKIP):
                    continue
                out = families.get(family.name)
                if out is None:
                    out = Metric(family.name, family.documentation, family.type, family.unit)
                    families[family.name] = out
                for s in family.samples:
                    out.samples.append(
                        Sample(s.name, {**s.labels, **extra}, s.value, s.timestamp, s.exemplar)
                    )
        yield from families.values()


@dataclass
class FleetConfig:
    store_dir: Path
    base: WatchConfig
    """Every target's settings (detectors, windows, intervals); ``collect.store`` unused."""
    targets: list[Target] = field(default_factory=list)
    pod_logs: str | None = None
    """The glob of ``--pod-logs`` (see :func:`pod_log_pattern`)."""
    port: int | None = 9464
    host: str = "127.0.0.1"
    detect_interval_s: float = 1.0
    rescan_s: float = RESCAN_S


class FleetWatcher:
    def __init__(self, cfg: FleetConfig) -> None:
        self.cfg = cfg
        cfg.store_dir.mkdir(parents=True, exist_ok=True)
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        from observability import __version__

        help_ = "The triton-observability version running"
        build = Info("triton_obs_build", help_, registry=self.registry)
        build.info({"version": str(__version__)})
        self.registry.register(_Relabelled(self))
        self._watchers: dict[str, Watcher] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._folders: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.port: int | None = None
        self._server: WSGIServer | None = None
        self.errors: list[str] = []
        """Targets that could not start, and why (the CLI prints them)."""
        for target in cfg.targets:
            self.add(target)
        self.rescan()

    def watchers(self) -> list[Watcher]:
        with self._lock:
            return list(self._watchers.values())

    def add(self, target: Target) -> Watcher | None:
        base = self.cfg.base
        collect = replace(
            base.collect,
            store=self.cfg.store_dir / target.store_name,
            url=target.url,
            metrics_url=target.metrics_url,
            log=Path(target.log) if target.log else None,
            log_format=target.log_format,
            trace=None,
            otlp_port=None,
            metrics_port=None,
            checkpoint=None,
        )
        cfg = replace(base, collect=collect, name=target.name, labels=target.labels, api=False)
        try:
            watcher = Watcher(cfg)
        except (StoreError, OSError) as err:
            self.errors.append(f"target {target.name}: {err}")
            log.error("target %s cannot start: %s", target.name, err)
            return None
        thread = threading.Thread(
            target=watcher.runner.run, name=f"collect-{target.name}", daemon=True
        )
        with self._lock:
            self._watchers[target.name] = watcher
            self._threads[target.name] = thread
            if target.folder:
                self._folders[target.name] = target.folder
        if self.port is not None:  # running already: a pod that appeared
            thread.start()
        return watcher

    def remove(self, name: str) -> None:
        with self._lock:
            watcher = self._watchers.pop(name)
            thread = self._threads.pop(name)
            self._folders.pop(name, None)
        watcher.stop()
        if thread.is_alive():
            thread.join(timeout=30)
        elif thread.ident is None:  # never started: close what the runner opened
            watcher.runner.close()

    def rescan(self) -> tuple[list[str], list[str]]:
        """``--pod-logs``: start the pods that appeared, stop those whose folder is gone."""
        if self.cfg.pod_logs is None:
            return [], []
        found = discover_pods(self.cfg.pod_logs)
        with self._lock:
            current = dict(self._folders)
            listed = set(self._watchers) - set(current)
        gone = [name for name, folder in current.items() if not os.path.isdir(folder)]
        for name in gone:
            self.remove(name)
        added = []
        for name, target in found.items():
            if name in listed or (name in current and name not in gone):
                continue  # a targets file's entry of that name wins (it may add URLs)
            if len(self._watchers) >= MAX_TARGETS:
                log.warning("%d targets already: %s not watched", MAX_TARGETS, name)
                break
            if self.add(target) is not None:
                added.append(name)
        return added, gone

    def start(self) -> int:
        """Serve /metrics and the API; start every target's collector. The bound port."""
        from observability.api import ApiApp

        if self.port is None:
            self._server = serve_http(
                None,
                self.cfg.port or 0,
                self.cfg.host,
                api=ApiApp(self.watchers),
                registry=self.registry,
            )
            self.port = int(self._server.server_address[1])
            for thread in list(self._threads.values()):
                if not thread.is_alive() and thread.ident is None:
                    thread.start()
        return self.port

    def stop(self) -> None:
        self._stop.set()

    def detect_once(self) -> Iterator[tuple[Watcher, Finding]]:
        for watcher in self.watchers():
            for finding in watcher.detect_once():
                yield watcher, finding

    def run(
        self,
        duration_s: float | None = None,
        on_new: Callable[[Watcher, Finding], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_pass: Callable[[Iterable[Watcher]], None] | None = None,
        on_targets: Callable[[list[str], list[str]], None] | None = None,
    ) -> None:
        self.start()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        next_scan = time.monotonic() + self.cfg.rescan_s
        try:
            while not self._stop.wait(until_next_pass(self.cfg.detect_interval_s, deadline)):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if time.monotonic() >= next_scan:
                    next_scan = time.monotonic() + self.cfg.rescan_s
                    added, gone = self.rescan()
                    if (added or gone) and on_targets is not None:
                        on_targets(added, gone)
                for watcher in self.watchers():
                    try:
                        for finding in watcher.detect_once():
                            if on_new is not None:
                                on_new(watcher, finding)
                    except StoreError as err:
                        if on_error is not None:
                            on_error(f"{watcher.name}: {err}")
                if on_pass is not None:
                    on_pass(self.watchers())
        finally:
            for name in [w.name for w in self.watchers()]:
                self.remove(name)
            if self._server is not None:
                self._server.shutdown()
                self._server.server_close()
