"""Record one real lab run — the fault schedule or its healthy twin — for detector tests.

A fresh lab Triton serves the demo pipeline while ``collect`` writes a store live, a capture
writes a bundle of the same window, a background load runs at constant concurrency, and the
scenario injects each fault once (or, for the twin, the very same requests without faults).
Detectors are evaluated at ``until_ns``, while the hang and the deadlock are still open.

For development, ``python -m tests.detectors.recording faulty DIR`` records into DIR, and
``TRITON_OBS_RECORDINGS=DIR`` makes the test fixtures reuse what is there instead of
recording anew (CI always records).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from observability.bundle import CaptureConfig, capture
from observability.collect import CollectConfig, CollectRunner
from observability.demo.scenario import Scenario, Step
from observability.lab import LabConfig, TritonLab, demo_repository
from observability.lab.ports import free_ports
from observability.load import LoadConfig, run_load

__all__ = ["STEPS", "RecordedRun", "record"]

STEPS: tuple[Step, ...] = (
    Step(1, "cold_start", "classifier", params={"cold_start_s": "4"}),
    Step(6, "hang", "router", params={"hang_s": "300"}, timeout_s=5),
    Step(8, "slow", "router", count=8, params={"slow_s": "0.5"}, timeout_s=20),
    Step(13, "fanout", "router", params={"fanout_n": "64"}, timeout_s=30),
    Step(15, "callback", "router", params={"callback_wait_s": "3"}, timeout_s=15),
    Step(16, "task_error", "router", timeout_s=15),
    Step(18, "shape_growth", "generate", count=3, timeout_s=30),
    Step(21, "deadlock", "generate", params={"deadlock_s": "300"}, timeout_s=5),
)
DURATION_S = 30.0
BLS_DEADLINE_S = 5


@dataclass(frozen=True)
class RecordedRun:
    name: str
    root: Path
    store: Path
    bundle: Path
    log: Path
    since_ns: int
    until_ns: int
    clock_offset_ns: int
    injections: tuple[dict[str, object], ...]

    def save(self) -> None:
        data = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        (self.root / "recording.json").write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, root: Path) -> RecordedRun:
        data = json.loads((root / "recording.json").read_text())
        for key in ("root", "store", "bundle", "log"):
            data[key] = Path(data[key])
        data["injections"] = tuple(data["injections"])
        return cls(**data)


def record(name: str, root: Path, healthy: bool) -> RecordedRun:
    root.mkdir(parents=True, exist_ok=True)
    otlp_port = free_ports().http
    lab = TritonLab(
        LabConfig(
            model_repository=demo_repository(),
            run_dir=root / "lab",
            model_control="explicit",
            trace_log_frequency=1,
            # The in-model library exports its spans (and hung-call reports, after 5 s) to
            # the collector's OTLP receiver, as in production.
            env={
                "TRITON_OBS_ENDPOINT": f"http://127.0.0.1:{otlp_port}/v1/traces",
                "TRITON_OBS_DEADLINE_S": str(BLS_DEADLINE_S),
            },
        )
    )
    lab.start()
    try:
        since_ns = time.time_ns()
        runner = CollectRunner(
            CollectConfig(
                store=root / "store.db", url=lab.http_url, metrics_url=lab.metrics_url,
                log=lab.log_path, trace=lab.trace_path, interval_s=0.5, otlp_port=otlp_port,
            )
        )  # fmt: skip
        collector = threading.Thread(target=runner.run, kwargs={"duration_s": 300}, daemon=True)
        collector.start()
        capturer = threading.Thread(
            target=capture,
            args=(
                CaptureConfig(
                    out=root / "bundle", url=lab.http_url, metrics_url=lab.metrics_url,
                    log=lab.log_path, trace=lab.trace_path, duration_s=DURATION_S,
                    interval_s=0.5, log_from_start=True,
                ),
            ),
            daemon=True,
        )  # fmt: skip
        capturer.start()
        scenario = Scenario(lab.grpc_url, STEPS, healthy_twin=healthy)
        stop = threading.Event()
        load = threading.Thread(
            target=run_load,
            args=(
                LoadConfig(url=lab.grpc_url, concurrency=2, requests=100_000,
                           duration_s=DURATION_S, timeout_s=10, run_tag=f"{name}-load", seed=1),
            ),
            kwargs={"stop": stop},
            daemon=True,
        )  # fmt: skip
        t0 = time.monotonic()
        load.start()
        scenario.start(t0)
        capturer.join(timeout=DURATION_S + 60)
        load.join(timeout=30)
        until_ns = time.time_ns()
        time.sleep(1.5)  # let the collector read the last lines
        runner.stop()
        collector.join(timeout=30)
        scenario.stop(wait_s=0)
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
        )
        run.save()
        return run
    finally:
        stop_all = getattr(scenario, "stop", None) if "scenario" in locals() else None
        if stop_all:
            stop_all(wait_s=0)
        lab.stop()


if __name__ == "__main__":
    kind, folder = sys.argv[1], Path(sys.argv[2])
    recorded = record(kind, folder / kind, healthy=kind == "healthy")
    print(json.dumps(recorded.injections, indent=1))
