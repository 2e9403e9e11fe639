"""Run the demo: lab Triton + healthy background load + the fault schedule + a live view."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from observability.demo.live import LiveMetrics
from observability.demo.scenario import DEMO_STEPS, Scenario
from observability.lab import LabConfig, TritonLab, demo_repository
from observability.load import LoadConfig, run_load

__all__ = ["DemoOptions", "run_demo"]


@dataclass
class DemoOptions:
    duration_s: float = 60.0
    run_dir: Path | None = None
    healthy: bool = False
    ui: bool = True
    concurrency: int = 2


def _injections_table(scenario: Scenario) -> Table:
    table = Table(title="injected faults", title_justify="left")
    for col in ("t", "fault", "model", "what a user sees", "client outcome"):
        table.add_column(col)
    for inj in list(scenario.injections):
        table.add_row(
            f"+{inj.started:.0f}s", inj.step.fault, inj.step.model, inj.step.expect, inj.verdict()
        )
    return table


def _frame(
    live: LiveMetrics, scenario: Scenario, events: list[str], t0: float, duration_s: float
) -> Group:
    elapsed = time.monotonic() - t0
    return Group(
        Text(f"demo t+{elapsed:4.0f}s of {duration_s:.0f}s", style="bold"),
        live.table(),
        _injections_table(scenario),
        Text("\n".join(events[-8:]), style="dim"),
    )


def run_demo(options: DemoOptions, console: Console) -> int:
    if options.ui:
        console.print(
            "[dim]The triage app is not built yet; showing the live terminal view "
            "(--no-ui gives the same).[/]"
        )
    lab = TritonLab(
        LabConfig(
            model_repository=demo_repository(),
            run_dir=options.run_dir,
            model_control="explicit",
            # Write traces as they complete: a hung request makes Triton's shutdown hit its
            # exit timeout, and then the at-exit trace file is never written.
            trace_log_frequency=50,
        )
    )
    with console.status("starting tritonserver with the demo pipeline…"):
        lab.start()
    console.print(
        f"[green]Triton {lab.triton_version} ready[/]  HTTP {lab.http_url}  "
        f"gRPC {lab.grpc_url}  metrics {lab.metrics_url}\n  run folder {lab.run_dir}"
    )
    events: list[str] = []
    scenario = Scenario(
        lab.grpc_url, () if options.healthy else DEMO_STEPS, events.append, lab.run_dir
    )
    stop = threading.Event()
    live = LiveMetrics(lab.metrics_url)
    load_cfg = LoadConfig(
        url=lab.grpc_url,
        concurrency=options.concurrency,
        requests=1_000_000,
        duration_s=options.duration_s,
        timeout_s=10.0,
        run_tag="demo-load",
    )
    result: dict[str, object] = {}

    def background() -> None:
        result["report"] = run_load(load_cfg, stop=stop)

    loader = threading.Thread(target=background, name="demo-load", daemon=True)
    t0 = time.monotonic()
    loader.start()
    scenario.start(t0)
    interrupted = False
    try:
        if console.is_terminal:
            with Live(console=console, refresh_per_second=2, transient=False) as view:
                while loader.is_alive():
                    live.scrape()
                    view.update(_frame(live, scenario, events, t0, options.duration_s))
                    loader.join(timeout=1.0)
        else:
            # Piped output (CI, a log file): one compact table per second, and each event once.
            seen = 0
            while loader.is_alive():
                live.scrape()
                news, seen = events[seen:], seen + len(events[seen:])
                for line in news:
                    console.print(line, highlight=False)
                table = live.table()
                table.title = f"t+{time.monotonic() - t0:.0f}s per model (last second)"
                table.box = None
                console.print(table)
                loader.join(timeout=1.0)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted: stopping the load, the injections and Triton…[/]")
    finally:
        stop.set()
        scenario.stop(wait_s=0 if interrupted else 20)
        loader.join(timeout=15)
        with console.status("stopping tritonserver…"):
            lab.stop()
    report = result.get("report")
    if report is not None:
        console.print(report.table())  # type: ignore[attr-defined]
    console.print(_injections_table(scenario))
    console.print(f"log, traces and run.json are in {lab.run_dir}")
    return 130 if interrupted else 0
