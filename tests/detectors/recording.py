"""Record one real lab run — the fault schedule or its healthy twin — for detector tests.

A fresh lab Triton serves the demo pipeline while ``collect`` writes a store live, a capture
writes a bundle of the same window (and receives the in-model library's OTLP spans), a
background load runs at constant concurrency, and the scenario injects each fault once (or,
for the twin, the very same requests without faults). Detectors are evaluated at
``until_ns``, while the hang and the deadlock are still open.

The tests do not record: they read the checked-in recordings of
``tests/fixtures/recordings/`` (see its ``__init__``), made from this function by
``python -m tests.fixtures.recordings.record OUT``. Only the ``lab``-marked
``tests/detectors/test_rerecord.py`` records live, to check the checked-in ones still hold.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from observability.bundle import CaptureConfig, capture
from observability.collect import CollectConfig, CollectRunner
from observability.demo.scenario import Scenario, Step
from observability.lab import LabConfig, TritonLab, demo_env, demo_repository
from observability.lab.ports import free_ports
from observability.load import LoadConfig, run_load

__all__ = ["BLS_DEADLINE_S", "DURATION_S", "IDS", "STEPS", "RecordedRun", "record"]

STEPS: tuple[Step, ...] = (
    Step(1, "cold_start", "classifier", params={"cold_start_s": "4"}),
    Step(6, "hang", "router", params={"hang_s": "300"}, timeout_s=5),
    Step(8, "slow", "router", count=8, params={"slow_s": "0.5"}, timeout_s=20),
    Step(13, "fanout", "router", params={"fanout_n": "64"}, timeout_s=30),
    Step(15, "callback", "router", params={"callback_wait_s": "3"}, timeout_s=15),
    Step(16, "task_error", "router", timeout_s=15),
    Step(18, "shape_growth", "generate", count=3, timeout_s=30),
    Step(21, "deadlock", "generate", params={"deadlock_s": "300"}, timeout_s=5),
    Step(23, "stall", "stream", params={"stall_after": "3", "stall_s": "300"}, timeout_s=60),
)
DURATION_S = 30.0
BLS_DEADLINE_S = 5
IDS = ("all", "client", "none")
"""Which requests carry an id: every one (the default), the client's only, none."""

IDS_PLUMBED = True
"""``observability/demo/scenario.py`` and ``observability/load/`` are gaining an ``ids`` mode;
until they have it only ``all`` (what they do today) can be recorded."""


def _ids(ids: str) -> dict[str, str]:
    """The keyword to pass ``Scenario`` and ``LoadConfig`` for ``ids``."""
    if ids not in IDS:
        raise ValueError(f"ids must be one of {', '.join(IDS)}, not {ids!r}")
    if IDS_PLUMBED:
        return {"ids": ids}
    if ids != "all":
        raise NotImplementedError(f"ids={ids!r}: the demo scenario and the load have no ids mode")
    return {}


@dataclass(frozen=True)
class RecordedRun:
    """A recording as the tests read it: a store, the bundle it holds (a folder), the log,
    and the window to evaluate detectors over.

    ``recording.json`` stores the paths relative to ``root`` (the folder holding it), so a
    recording reads the same wherever it is copied."""

    name: str
    root: Path
    store: Path
    bundle: Path
    log: Path
    since_ns: int
    until_ns: int
    clock_offset_ns: int
    injections: tuple[dict[str, object], ...]
    ids: str = "all"
    extra: dict[str, object] = field(default_factory=dict)
    """What else ``recording.json`` holds (provenance: tritonserver version, load, steps)."""

    _PATHS = ("store", "bundle", "log")

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "ids": self.ids,
            **{k: getattr(self, k).relative_to(self.root).as_posix() for k in self._PATHS},
            "since_ns": self.since_ns,
            "until_ns": self.until_ns,
            "clock_offset_ns": self.clock_offset_ns,
            "injections": list(self.injections),
        }
        return {**data, **self.extra}

    def save(self) -> None:
        (self.root / "recording.json").write_text(json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, root: Path, **paths: Path) -> RecordedRun:
        """Read ``root/recording.json``; ``paths`` (``store=...``) stand in for its paths (a
        checked-in recording has no store: it is derived from the bundle)."""
        data = json.loads((root / "recording.json").read_text())
        known = {
            "name", "ids", "since_ns", "until_ns", "clock_offset_ns", "injections", *cls._PATHS
        }  # fmt: skip
        resolved = {}
        for key in cls._PATHS:
            if key in paths:
                resolved[key] = paths[key]
                continue
            if key not in data:
                raise ValueError(f"{root / 'recording.json'} has no {key}: give it")
            rel = Path(str(data[key]))
            if rel.is_absolute():
                raise ValueError(f"{root / 'recording.json'}: {key} is absolute: {rel}")
            resolved[key] = root / rel
        return cls(
            name=str(data["name"]),
            root=root,
            **resolved,
            since_ns=int(data["since_ns"]),
            until_ns=int(data["until_ns"]),
            clock_offset_ns=int(data["clock_offset_ns"]),
            injections=tuple(data["injections"]),
            ids=str(data.get("ids", "all")),
            extra={k: v for k, v in data.items() if k not in known},
        )


def record(
    name: str, root: Path, healthy: bool, ids: str = "all", duration_s: float = DURATION_S
) -> RecordedRun:
    """Record the demo's fault schedule (or, ``healthy``, its twin) into ``root``: ``store.db``
    (written live by ``collect``), ``bundle/`` (the capture of the same window, with the
    OTLP spans the in-model library exported), ``lab/`` (Triton's own run folder)."""
    id_mode = _ids(ids)
    root.mkdir(parents=True, exist_ok=True)
    otlp_port = free_ports().http
    lab = TritonLab(
        LabConfig(
            model_repository=demo_repository(),
            run_dir=root / "lab",
            model_control="explicit",
            trace_log_frequency=1,
            # The in-model library exports its spans (and hung-call reports, after 5 s) to
            # the capture's OTLP receiver, as in production: the bundle carries them.
            env={
                "TRITON_OBS_ENDPOINT": f"http://127.0.0.1:{otlp_port}/v1/traces",
                "TRITON_OBS_DEADLINE_S": str(BLS_DEADLINE_S),
                **demo_env(ids),
            },
        )
    )
    lab.start()
    scenario: Scenario | None = None
    try:
        since_ns = time.time_ns()
        runner = CollectRunner(
            CollectConfig(
                store=root / "store.db", url=lab.http_url, metrics_url=lab.metrics_url,
                log=lab.log_path, trace=lab.trace_path, interval_s=0.5,
            )
        )  # fmt: skip
        collector = threading.Thread(target=runner.run, kwargs={"duration_s": 300}, daemon=True)
        collector.start()
        capturer = threading.Thread(
            target=capture,
            args=(
                CaptureConfig(
                    out=root / "bundle", url=lab.http_url, metrics_url=lab.metrics_url,
                    log=lab.log_path, trace=lab.trace_path, duration_s=duration_s,
                    interval_s=0.5, log_from_start=True, otlp_port=otlp_port,
                ),
            ),
            daemon=True,
        )  # fmt: skip
        capturer.start()
        scenario = Scenario(lab.grpc_url, STEPS, healthy_twin=healthy, **id_mode)
        stop = threading.Event()
        load_config = LoadConfig(
            url=lab.grpc_url, concurrency=2, requests=100_000, duration_s=duration_s,
            timeout_s=10, run_tag=f"{name}-load", seed=1, **id_mode,
        )  # fmt: skip
        load = threading.Thread(
            target=run_load, args=(load_config,), kwargs={"stop": stop}, daemon=True
        )
        t0 = time.monotonic()
        load.start()
        scenario.start(t0)
        capturer.join(timeout=duration_s + 60)
        load.join(timeout=30)
        until_ns = time.time_ns()
        time.sleep(1.5)  # let the collector read the last lines
        runner.stop()
        collector.join(timeout=30)
        scenario.stop(wait_s=0)
        meta = json.loads((root / "bundle" / "meta.json").read_text())
        run = RecordedRun(
            name=name,
            root=root,
            store=root / "store.db",
            bundle=root / "bundle",
            log=lab.log_path,
            since_ns=since_ns,
            until_ns=until_ns,
            clock_offset_ns=int(
                json.loads(lab.run_json_path.read_text())["clock"]["epoch_ns_minus_monotonic_ns"]
            ),
            injections=tuple(
                {
                    "fault": i.step.fault,
                    "model": i.step.model,
                    "at_s": i.started,
                    "outcomes": [(o.request_id, o.status.value) for o in i.outcomes],
                }
                for i in scenario.injections
            ),
            ids=ids,
            extra={
                "healthy_twin": healthy,
                "tritonserver": meta.get("triton_version", ""),
                "duration_s": duration_s,
                "load": {
                    "concurrency": load_config.concurrency,
                    "timeout_s": load_config.timeout_s,
                    "seed": load_config.seed,
                    "run_tag": load_config.run_tag,
                },
                "bls_deadline_s": BLS_DEADLINE_S,
            },
        )
        run.save()
        return run
    finally:
        if scenario is not None:
            scenario.stop(wait_s=0)
        lab.stop()
