"""The demo's fault schedule: each pathology once, at a known time, with its evidence.

Faults are injected as real requests carrying the ``fault`` parameter (or, for cold start, a
real model reload), never as fabricated signals, so every later detector sees exactly what it
would see in production.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from observability.catalogue import ScheduledFault, schedule
from observability.load.client import Outcome, Status, TritonClient
from observability.load.runner import set_cold_start
from observability.load.workload import STREAMING, inputs_for

__all__ = ["DEMO_STEPS", "Injection", "Scenario", "Step", "steps_of"]


@dataclass(frozen=True)
class Step:
    at_s: float
    fault: str
    model: str
    """Entry model the requests go to (or the model reloaded)."""
    count: int = 1
    params: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 5.0
    expect: str = ""
    """What a Triton user would see, in one line."""
    finds: tuple[str, str] = ("", "")
    """The finding (kind, model) the detectors must report for it."""


def steps_of(scheduled: tuple[ScheduledFault, ...]) -> tuple[Step, ...]:
    """Scenario steps from a catalogue schedule."""
    return tuple(
        Step(
            s.at_s,
            s.fault.knob,
            s.fault.entry_model,
            count=s.fault.count,
            params=dict(s.fault.params),
            timeout_s=s.fault.timeout_s,
            expect=s.fault.expect,
            finds=s.finds,
        )
        for s in scheduled
    )


DEMO_STEPS: tuple[Step, ...] = steps_of(
    schedule(
        [
            (2, "cold_start"),
            (6, "hang"),
            (10, "slow"),
            (14, "fanout"),
            (18, "callback"),
            (19, "task_error"),
            (22, "shape_growth"),
            (26, "deadlock"),
            (28, "stall"),
            (30, "ensemble_fanout"),
        ]
    )
)
"""Every catalogue fault once; the finding each owes comes from the catalogue."""


@dataclass
class Injection:
    step: Step
    started: float
    outcomes: list[Outcome] = field(default_factory=list)
    error: str = ""
    detail: str = ""

    def verdict(self) -> str:
        if self.error:
            return f"could not inject: {self.error}"
        if self.detail:
            return self.detail
        if not self.outcomes:
            return "reloaded" if self.step.fault == "cold_start" else "pending"
        counts: dict[str, int] = {}
        for o in self.outcomes:
            counts[o.status.value] = counts.get(o.status.value, 0) + 1
        worst = max(o.latency_s for o in self.outcomes)
        parts = [f"{n} {s}" for s, n in sorted(counts.items())]
        return f"{', '.join(parts)}; slowest {worst:.1f} s"


class Scenario:
    """Runs the steps in a background thread; ``injections`` grows as they happen."""

    def __init__(
        self,
        url: str,
        steps: tuple[Step, ...] = DEMO_STEPS,
        on_event: Callable[[str], None] | None = None,
        run_dir: Path | None = None,
        healthy_twin: bool = False,
        ids: str = "all",
    ) -> None:
        """``healthy_twin`` sends the same requests at the same times with no fault asked for
        (and a real but eager reload for cold start): the load a detector must stay quiet on."""
        self.url = url
        self.healthy_twin = healthy_twin
        self.ids = ids
        self.run_dir = run_dir
        self.steps = steps
        self.injections: list[Injection] = []
        self._on_event = on_event or (lambda _msg: None)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, t0: float) -> None:
        runner = threading.Thread(target=self._run, args=(t0,), name="scenario", daemon=True)
        runner.start()
        self._threads.append(runner)

    def stop(self, wait_s: float = 20.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + wait_s
        for t in list(self._threads):
            t.join(timeout=max(0.1, deadline - time.monotonic()))

    def _run(self, t0: float) -> None:
        for step in self.steps:
            if self._stop.wait(max(0.0, t0 + step.at_s - time.monotonic())):
                return
            injection = Injection(step, time.monotonic() - t0)
            with self._lock:
                self.injections.append(injection)
            self._on_event(f"t+{injection.started:4.1f}s inject {step.fault} → {step.model}")
            if step.fault == "cold_start":
                self._reload(injection)
                continue
            if step.fault == "ensemble_fanout" and self.healthy_twin:
                continue
            if step.fault == "ensemble_fanout":
                t = threading.Thread(target=self._ensemble, args=(injection,), daemon=True)
                t.start()
                self._threads.append(t)
                continue
            for i in range(step.count):
                t = threading.Thread(
                    target=self._send, args=(injection, i), name=f"inject-{step.fault}", daemon=True
                )
                t.start()
                self._threads.append(t)

    def _reload(self, injection: Injection) -> None:
        try:
            seconds = float(injection.step.params.get("cold_start_s", "4"))
            set_cold_start(self.url, 0.001 if self.healthy_twin else seconds)
        except Exception as err:
            injection.error = str(err)[:200]

    def _ensemble(self, injection: Injection) -> None:
        """Load the miswired ensemble in a second, short-lived Triton and quote its refusal.

        It has its own server because Triton either refuses to start with it or keeps it
        unloadable; the demo server must stay healthy for the other faults.
        """
        from observability.lab import LabConfig, TritonLab, repository

        lab = TritonLab(
            LabConfig(
                model_repository=repository("ensemble_fanout_broken"),
                run_dir=self.run_dir / "ensemble_fanout_broken" if self.run_dir else None,
                exit_on_error=False,
                strict_readiness=False,
                trace=False,
                exit_timeout_s=5,
            )
        )
        try:
            lab.start()
            lines = [line for line in lab.log_text().splitlines() if "is not written" in line]
            injection.error = "" if lines else "Triton loaded it: no 'not written' error"
            injection.detail = lines[0].split('"', 1)[-1].rstrip('"') if lines else ""
            self._on_event(f"ensemble_fanout: {injection.detail or injection.error}")
        except Exception as err:
            injection.error = str(err)[:200]
        finally:
            lab.stop()

    def _send(self, injection: Injection, index: int) -> None:
        import random

        step = injection.step
        client = TritonClient(self.url, step.timeout_s, send_ids=self.ids != "none")
        send = client.stream if step.model in STREAMING else client.infer
        try:
            outcome = send(
                step.model,
                inputs_for(step.model, random.Random(index)),
                request_id=f"demo-{step.fault}-{index}",
                fault=step.fault,
                parameters=None if self.healthy_twin else {"fault": step.fault, **step.params},
            )
        finally:
            client.close()
        with self._lock:
            injection.outcomes.append(outcome)
        label = {Status.OK: "answered", Status.ERROR: "failed", Status.TIMEOUT: "timed out"}
        self._on_event(
            f"{step.fault}: {outcome.request_id} {label[outcome.status]} "
            f"after {outcome.latency_s:.1f} s"
        )
