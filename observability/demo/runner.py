"""Run the demo: lab Triton + healthy background load + the fault schedule + a live view."""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from collectors.logs.parser import parse_bytes
from observability.collect import CollectConfig
from observability.demo.live import LiveMetrics
from observability.demo.scenario import DEMO_STEPS, Scenario
from observability.detectors import Window, run_detectors
from observability.detectors.registry import default_detectors
from observability.findings import Finding
from observability.lab import LabConfig, TritonLab, demo_env, demo_repository
from observability.load import LoadConfig, run_load
from observability.report import findings_table
from observability.store import Store
from observability.watch import WatchConfig, Watcher

__all__ = ["DemoOptions", "run_demo"]


@dataclass
class DemoOptions:
    duration_s: float = 60.0
    run_dir: Path | None = None
    healthy: bool = False
    ui: bool = True
    ids: str = "all"
    """Which requests carry ids (``observability.lab.IDS_MODES``)."""
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


def _interrupt_on_sigterm() -> None:
    """``kill`` (SIGTERM) stops the demo as Ctrl-C does: with Triton and its stubs."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def run_demo(options: DemoOptions, console: Console) -> int:
    _interrupt_on_sigterm()
    lab = TritonLab(
        LabConfig(
            model_repository=demo_repository(),
            run_dir=options.run_dir,
            model_control="explicit",
            # Write traces as they complete: a hung request makes Triton's shutdown hit its
            # exit timeout, and then the at-exit trace file is never written.
            trace_log_frequency=50,
            env=demo_env(options.ids),
        )
    )
    with console.status("starting tritonserver with the demo pipeline…"):
        lab.start()
    console.print(
        f"[green]Triton {lab.triton_version} ready[/]  HTTP {lab.http_url}  "
        f"gRPC {lab.grpc_url}  metrics {lab.metrics_url}\n  run folder {lab.run_dir}"
    )
    events: list[str] = []
    watcher = Watcher(
        WatchConfig(
            collect=CollectConfig(
                store=lab.run_dir / "store.db", url=lab.http_url, metrics_url=lab.metrics_url,
                log=lab.log_path, trace=lab.trace_path, metrics_port=0,
            ),
            detect_interval_s=2.0,
        )
    )  # fmt: skip
    watching = threading.Thread(
        target=watcher.run,
        kwargs={"on_new": lambda f: events.append(f"finding: {_one_line(f)}")},
        name="demo-watch",
        daemon=True,
    )
    watcher.runner.start_servers()
    watching.start()
    console.print(f"  findings as Prometheus metrics: {watcher_url(watcher)}")
    scenario = Scenario(
        lab.grpc_url,
        () if options.healthy else DEMO_STEPS,
        events.append,
        lab.run_dir,
        ids=options.ids,
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
        ids=options.ids,
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
        if not interrupted:
            time.sleep(1.0)  # the last log lines
            watcher.detect_once()
        watcher.stop()
        watching.join(timeout=30)
        with console.status("stopping tritonserver…"):
            lab.stop()
    report = result.get("report")
    if report is not None:
        console.print(report.table())  # type: ignore[attr-defined]
    console.print(_injections_table(scenario))
    findings = _all_findings(lab.run_dir)
    console.print(
        findings_table(
            findings, title="findings (triton-obs analyze shows the advice)", advice=False
        )
    )
    console.print(_expected_table(scenario, findings))
    console.print(f"log, traces, store and run.json are in {lab.run_dir}")
    if interrupted:
        return 130
    if options.ui:
        return _serve_ui(lab.run_dir, console)
    return 0


def _serve_ui(run_dir: Path, console: Console) -> int:
    """Keep running with the triage app on the run's store until Ctrl-C."""
    import importlib.util
    import os
    import subprocess

    from dashboards.app_cli import streamlit_command
    from observability.lab.ports import free_ports

    if importlib.util.find_spec("streamlit") is None:
        console.print(
            "[yellow]The triage app needs the app extra[/] (pip install "
            "'triton-observability[app]'); open it later with "
            f"triton-obs triage --store {run_dir / 'store.db'}"
        )
        return 0
    port = free_ports().http
    env = {
        **os.environ,
        "TRITON_OBS_TRIAGE_STORE": str(run_dir / "store.db"),
        "TRITON_OBS_TRIAGE_LOG": str(run_dir / "triton.log"),
    }
    console.print(f"[green]triage app:[/] http://127.0.0.1:{port}  (Ctrl-C stops it)")
    child = subprocess.Popen(streamlit_command(port, "127.0.0.1"), env=env)
    try:
        child.wait()
    except KeyboardInterrupt:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return 0


def watcher_url(watcher: Watcher) -> str:
    return f"http://127.0.0.1:{watcher.runner.metrics_port}/metrics"


def _one_line(f: Finding) -> str:
    rid = f" {f.request_id}" if f.request_id else ""
    return f"{f.severity.value} {f.kind} · {f.model}{rid}: {f.summary}"


def _all_findings(run_dir: Path) -> list[Finding]:
    """Every finding of the run, resolved ones too, plus the miswired ensemble's, whose
    load error lives in the second lab's log."""
    with Store(run_dir / "store.db") as store:
        findings = store.findings()
        broken_log = run_dir / "ensemble_fanout_broken" / "triton.log"
        if broken_log.is_file():
            events = parse_bytes(broken_log.read_bytes(), year=time.gmtime().tm_year)
            window = Window(since_ns=0, until_ns=time.time_ns(), events=events)
            extra = run_detectors(default_detectors(("ensemble_fanout",)), window)
            findings += extra
    return sorted(findings, key=lambda f: (f.first_seen_ns, f.kind))


def _expected_table(scenario: Scenario, findings: list[Finding]) -> Table:
    found = {(f.kind, f.model) for f in findings}
    table = Table(title="injected → found", title_justify="left")
    for col in ("fault", "expected finding", "found"):
        table.add_column(col)
    for inj in scenario.injections:
        kind, model = inj.step.finds
        ok = (kind, model) in found
        table.add_row(
            inj.step.fault, f"{kind} · {model}", "[green]yes[/]" if ok else "[red]missing[/]"
        )
    return table
