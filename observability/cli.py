"""The ``triton-obs`` command line: every command says what it does in one line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from observability import __version__

if TYPE_CHECKING:  # the commands import what they use when they run
    from observability.findings import Finding
    from observability.load.client import Outcome
    from observability.watch import WatchConfig, Watcher

app = typer.Typer(
    help="Observability and tracing for NVIDIA Triton Inference Server pipelines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(width=None if sys.stdout.isatty() else 100_000)
"""Piped or redirected, tables print whole cells on one line each (no terminal to fit)."""
err_console = Console(stderr=True)


def _show_version(value: bool) -> None:
    if value:
        console.print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """Observability and tracing for NVIDIA Triton Inference Server pipelines."""


# Options shared by the commands that read a live Triton (capture, collect, watch).
StoreOpt = Annotated[Path, typer.Option(help="SQLite store file (created if missing)")]
TritonUrlOpt = Annotated[
    str | None, typer.Option("--url", help="Triton HTTP, e.g. http://127.0.0.1:8000")
]
MetricsUrlOpt = Annotated[
    str | None, typer.Option("--metrics-url", help="e.g. http://127.0.0.1:8002/metrics")
]
LogOpt = Annotated[Path | None, typer.Option("--log", help="Triton's verbose log file")]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", help="the trace file given to Triton (F.N files too)")
]
OtlpPortOpt = Annotated[
    int | None, typer.Option("--otlp-port", help="receive OTLP/HTTP spans on 127.0.0.1:PORT")
]
LogFormatOpt = Annotated[
    str,
    typer.Option(
        "--log-format",
        help="how the log is framed: auto (decided from its lines), glog, timestamps (docker or "
        "kubectl --timestamps), compose, log-ui, cri (Kubernetes), docker-json, no-date",
    ),
]
UntilOpt = Annotated[
    float | None,
    typer.Option("--duration", min=0.1, help="stop after S seconds (default: Ctrl-C)"),
]


def _check_sources(
    url: str | None, metrics_url: str | None, log: Path | None, trace: Path | None
) -> None:
    """Usage errors (exit 2) before anything starts: a URL that is not http(s)://host[:port],
    a log or trace path whose folder does not exist, or that exists and cannot be read. A
    file not there yet is fine: Triton may not have written it yet."""
    from urllib.parse import urlsplit

    for flag, value in (("--url", url), ("--metrics-url", metrics_url)):
        if value is None:
            continue
        try:
            parts = urlsplit(value)
            port_ok = parts.port is None or 0 < parts.port < 65536
        except ValueError:
            parts, port_ok = None, False
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise _fail(f"{flag} {value!r} is not a URL like http://127.0.0.1:8000")
        if not port_ok:
            raise _fail(f"{flag} {value!r} has no valid port")
    for flag, path in (("--log", log), ("--trace", trace)):
        if path is None:
            continue
        if not path.parent.is_dir():
            raise _fail(f"{flag} {path}: its folder {path.parent} does not exist")
        if path.exists() and (path.is_dir() or not os.access(path, os.R_OK)):
            raise _fail(f"{flag} {path} cannot be read")


def _log_format(value: str) -> str:
    from collectors.logs.framing import FORMATS

    if value not in FORMATS:
        raise _fail(f"unknown --log-format {value!r}: {', '.join(FORMATS)}")
    return value


def _none_if_auto(value: str) -> str | None:
    """``auto`` on the command line leaves a bundle's own recorded frame in force."""
    return None if value == "auto" else value


def _fail(message: str, code: int = 2) -> typer.Exit:
    # soft_wrap: a path in the message must stay on one line, whatever the terminal width.
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@app.command()
def version() -> None:
    """Print the version of triton-observability."""
    console.print(__version__)


@app.command()
def lab(
    model_repository: Annotated[
        Path, typer.Option("--model-repository", "-m", help="model repository to serve")
    ],
    run_dir: Annotated[
        Path | None, typer.Option(help="folder for the log, traces and run.json")
    ] = None,
    model_control: Annotated[str, typer.Option(help="none, poll or explicit")] = "none",
    log_verbose: Annotated[int, typer.Option(help="Triton --log-verbose level")] = 1,
    backend_config: Annotated[
        list[str] | None,
        typer.Option(help="Triton --backend-config, e.g. python,thread-pool-size=8"),
    ] = None,
) -> None:
    """Run a real tritonserver for your model repository on loopback until Ctrl-C."""
    from observability.lab import LabConfig, LabError, TritonLab

    cfg = LabConfig(
        model_repository=model_repository,
        run_dir=run_dir,
        model_control=model_control,
        log_verbose=log_verbose,
        backend_config=tuple(backend_config or ()),
    )
    server = TritonLab(cfg)
    try:
        with console.status("starting tritonserver…"):
            server.start()
    except LabError as err:
        raise _fail(str(err)) from None
    stop = threading.Event()
    with _sigterm_calls(stop.set):
        console.print(f"[green]Triton {server.triton_version} ready[/] (pid {server.pid})")
        console.print(f"  HTTP     {server.http_url}")
        console.print(f"  gRPC     {server.grpc_url}")
        console.print(f"  metrics  {server.metrics_url}")
        console.print(f"  log      {server.log_path}")
        console.print(f"  run.json {server.run_json_path}")
        console.print("Ctrl-C stops it.")
        try:
            while not stop.wait(1.0):
                if not server.is_running():
                    err_console.print("[red]tritonserver exited[/]; last log lines:")
                    for line in server.log_tail(15):
                        err_console.print(line, markup=False, highlight=False)
                    raise typer.Exit(1)
        except KeyboardInterrupt:
            pass
        finally:
            with console.status("stopping tritonserver…"):
                server.stop()
    console.print("stopped; nothing left running.")


@app.command()
def load(
    url: Annotated[str, typer.Option(help="grpc://HOST:PORT (default) or http://HOST:PORT")],
    concurrency: Annotated[int, typer.Option(min=1, max=256)] = 4,
    requests: Annotated[int, typer.Option(min=1, help="at most this many requests")] = 200,
    duration: Annotated[float, typer.Option(min=0.1, help="stop sending after S seconds")] = 30.0,
    timeout: Annotated[float, typer.Option(min=0.1, help="client timeout per request, s")] = 10.0,
    faults: Annotated[str, typer.Option(help="e.g. hang=0.02,slow=0.1,cold_start=1")] = "",
    fault_params: Annotated[str, typer.Option(help="e.g. hang_s=30,slow_s=0.5")] = "",
    seed: Annotated[int, typer.Option(help="seed of the request mix")] = 0,
    run_tag: Annotated[str, typer.Option(help="prefix of client-side request ids")] = "",
    rate: Annotated[
        float | None,
        typer.Option(min=0.01, help="at most R requests a second (default: as fast as answered)"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Send a bounded load to the demo pipeline, with faults, and summarise the answers."""
    from observability.load import FaultSpecError, LoadConfig, parse_faults, parse_params, run_load

    try:
        cfg = LoadConfig(
            url=url,
            concurrency=concurrency,
            requests=requests,
            duration_s=duration,
            timeout_s=timeout,
            faults=parse_faults(faults),
            fault_params=parse_params(fault_params),
            seed=seed,
            run_tag=run_tag,
            rate_per_s=rate,
        )
    except (FaultSpecError, ValueError) as err:
        raise _fail(str(err)) from None
    stop = threading.Event()
    progress = Progress(
        TextColumn("[bold]load"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=json_out,
    )
    counts = {"ok": 0, "error": 0, "timeout": 0}
    with progress:
        task = progress.add_task("load", total=requests, status="")

        def on_outcome(outcome: Outcome) -> None:
            counts[outcome.status.value] += 1
            progress.update(
                task,
                advance=1,
                status=f"ok {counts['ok']} err {counts['error']} timeout {counts['timeout']}",
            )

        try:
            report = run_load(cfg, on_outcome=on_outcome, stop=stop)
        except KeyboardInterrupt:
            stop.set()
            raise typer.Exit(130) from None
        except Exception as err:
            raise _fail(f"load failed: {err}") from None
    if json_out:
        typer.echo(json.dumps(report.summary(), sort_keys=True))
    else:
        console.print(report.table())
        for note in report.notes:
            console.print(f"note: {note}")


@app.command()
def demo(
    duration: Annotated[float, typer.Option(min=10, help="seconds of load")] = 60.0,
    no_ui: Annotated[
        bool, typer.Option("--no-ui", help="end after the findings instead of opening the app")
    ] = False,
    run_dir: Annotated[Path | None, typer.Option(help="keep the run folder here")] = None,
    healthy: Annotated[bool, typer.Option(help="the same load with no faults")] = False,
    ids: Annotated[
        str,
        typer.Option(
            help="which requests carry ids: all (clients and BLS children), client (clients "
            "only) or none (as tritonclient and perf_analyzer send by default)"
        ),
    ] = "all",
    fleet: Annotated[
        int,
        typer.Option(
            "--fleet",
            min=0,
            max=8,
            help="a fleet in a box instead: N Tritons (3 is the tested size) as kubelet-logged "
            "pods, one watch --pod-logs, a real Prometheus with the alert rules; a hang in "
            "one pod, then which pod's alert fires (needs Debian's prometheus)",
        ),
    ] = 0,
) -> None:
    """Start a real Triton with the demo pipeline, inject every fault, and show what happens."""
    from observability.demo.runner import DemoOptions, run_demo
    from observability.lab import LabError

    if fleet:
        from observability.demo.fleet import FleetOptions, run_fleet_demo

        try:
            code = run_fleet_demo(
                FleetOptions(pods=fleet, run_dir=run_dir, hang_pod=min(1, fleet - 1)),
                console,
                ui=not no_ui,
            )
        except LabError as err:
            raise _fail(str(err)) from None
        raise typer.Exit(code)
    try:
        code = run_demo(
            DemoOptions(
                duration_s=duration, run_dir=run_dir, healthy=healthy, ui=not no_ui, ids=ids
            ),
            console,
        )
    except LabError as err:
        raise _fail(str(err)) from None
    raise typer.Exit(code)


@app.command()
def capture(
    out: Annotated[Path, typer.Option(help="new folder for the bundle")],
    url: TritonUrlOpt = None,
    metrics_url: MetricsUrlOpt = None,
    log: LogOpt = None,
    trace: TraceOpt = None,
    duration: Annotated[float, typer.Option(min=0.1, help="seconds to record")] = 30.0,
    interval: Annotated[float, typer.Option(min=0.1, help="seconds between snapshots")] = 1.0,
    log_from_start: Annotated[bool, typer.Option(help="copy the whole log")] = False,
    otlp_port: OtlpPortOpt = None,
    archive: Annotated[
        bool, typer.Option("--archive", help="also write OUT.tar.gz, to send to someone")
    ] = False,
) -> None:
    """Record a bundle (log, traces, /metrics and stats snapshots) from a live Triton."""
    from observability.bundle import CaptureConfig, write_archive
    from observability.bundle import capture as run_capture

    if not any((url, metrics_url, log, trace, otlp_port is not None)):
        raise _fail("nothing to capture: give --url, --metrics-url, --log, --trace or --otlp-port")
    _check_sources(url, metrics_url, None, trace)
    for path in (log,):
        if path is not None and not path.is_file():
            raise _fail(f"log file {path} does not exist")
    tarball = out.resolve().with_name(out.resolve().name + ".tar.gz")
    if archive and tarball.exists():  # say so now, not after the whole window
        raise _fail(f"{tarball} exists; choose a new --out")
    cfg = CaptureConfig(
        out=out, url=url, metrics_url=metrics_url, log=log, trace=trace,
        duration_s=duration, interval_s=interval, log_from_start=log_from_start,
        otlp_port=otlp_port,
    )  # fmt: skip
    try:
        with console.status(f"capturing for {duration:g} s…"):
            result = run_capture(cfg)
    except FileExistsError as err:
        raise _fail(str(err)) from None
    console.print(
        f"bundle {out}: {result.metrics} metrics and {result.stats} stats snapshots, "
        f"{result.traces} trace files, {result.log_bytes} log bytes"
    )
    if archive:
        try:
            console.print(f"archive {write_archive(out, tarball)}", soft_wrap=True)
        except OSError as err:
            raise _fail(f"cannot write {tarball}: {err}") from None
    for failure in result.failures[:10]:
        err_console.print(f"[yellow]warning:[/] {failure}", highlight=False)


@app.command()
def ingest(
    bundle: Annotated[Path, typer.Argument(help="bundle folder or .tar.gz")],
    store: StoreOpt,
    log_format: LogFormatOpt = "auto",
) -> None:
    """Replay a bundle into a store, with the bundle's timestamps; twice stores nothing twice."""
    from rich.markup import escape

    from dashboards.app.data.text import visible_controls
    from observability.bundle import BundleError
    from observability.bundle.ingest import ingest as run_ingest
    from observability.store import Store, StoreError

    try:
        with Store(store) as db:
            report = run_ingest(bundle, db, log_format=_none_if_auto(_log_format(log_format)))
    except (BundleError, StoreError) as err:
        raise _fail(str(err)) from None
    parts = ", ".join(f"{n} {part}" for part, n in sorted(report.inserted.items())) or "nothing"
    console.print(f"ingested {parts} ({report.duplicates} already stored) into {store}")
    for note in report.notes[:20]:  # notes quote the bundle: no markup, no terminal escapes
        err_console.print(f"[yellow]note:[/] {escape(visible_controls(note))}", highlight=False)


@app.command()
def collect(
    store: StoreOpt,
    url: TritonUrlOpt = None,
    metrics_url: MetricsUrlOpt = None,
    log: LogOpt = None,
    trace: TraceOpt = None,
    otlp_port: OtlpPortOpt = None,
    port: Annotated[
        int | None, typer.Option(help="serve our own /metrics on HOST:PORT (0: any)")
    ] = None,
    interval: Annotated[float, typer.Option(min=0.1, help="seconds between scrapes")] = 1.0,
    duration: UntilOpt = None,
    host: Annotated[
        str, typer.Option(help="address of /metrics and the OTLP receiver; beyond loopback warns")
    ] = "127.0.0.1",
    log_format: LogFormatOpt = "auto",
) -> None:
    """Run every collector live into a store, serving the collector's own /metrics."""
    from observability.collect import CollectConfig, CollectRunner
    from observability.netaddr import is_loopback
    from observability.store import StoreError

    if not any((url, metrics_url, log, trace, otlp_port is not None)):
        raise _fail("nothing to collect: give --url, --metrics-url, --log, --trace or --otlp-port")
    _check_sources(url, metrics_url, log, trace)
    cfg = CollectConfig(
        store=store, url=url, metrics_url=metrics_url, log=log, trace=trace,
        otlp_port=otlp_port, metrics_port=port, interval_s=interval, host=host,
        log_format=_log_format(log_format),
    )  # fmt: skip
    try:
        runner = CollectRunner(cfg)
    except StoreError as err:
        raise _fail(str(err)) from None
    with _sigterm_calls(runner.stop):
        try:
            runner.start_servers()
        except OSError as err:
            runner.close()
            raise _fail(f"cannot listen: {err}") from None
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address needs brackets in a URL
        if not is_loopback(host) and (port is not None or otlp_port is not None):
            err_console.print(
                f"[bold yellow]warning:[/] listening on {host}, beyond loopback: other machines "
                "can reach /metrics and the OTLP receiver (--host 127.0.0.1 keeps them local)",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
        if runner.metrics_port:
            console.print(f"own metrics  http://{shown}:{runner.metrics_port}/metrics")
        if runner.otlp_url:
            console.print(f"OTLP/HTTP    {runner.otlp_url}/v1/traces")
        console.print(f"collecting into {store}; Ctrl-C stops")
        with contextlib.suppress(KeyboardInterrupt):
            runner.run(duration_s=duration)
        stored = ", ".join(f"{n} {k}" for k, n in sorted(runner.state.stored.items())) or "nothing"
        console.print(f"stored {stored}")


@app.command()
def analyze(
    bundle: Annotated[
        Path,
        typer.Argument(
            help="bundle folder or .tar.gz; or a log, /metrics page, stats or trace file, "
            "or a folder of them"
        ),
    ],
    format: Annotated[str, typer.Option("--format", help="json, table or markdown")] = "table",
    store: Annotated[
        Path | None, typer.Option(help="keep the ingested store here (default: temporary)")
    ] = None,
    log_format: LogFormatOpt = "auto",
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="exit 1 when a finding of this severity or above exists: warning or critical "
            "(for CI)",
        ),
    ] = None,
) -> None:
    """Find pathologies in a bundle offline; --format json prints only the JSON array."""
    from rich.markup import escape

    from dashboards.app.data.text import visible_controls
    from observability.analyze import analyze_bundle
    from observability.bundle import BundleError
    from observability.report import (
        findings_json,
        findings_markdown,
        findings_table,
        work_markdown,
        work_table,
    )
    from observability.store import StoreError

    if format not in ("json", "table", "markdown"):
        raise _fail(f"unknown format {format!r}: json, table or markdown")
    if fail_on not in (None, "warning", "critical"):
        raise _fail(f"unknown --fail-on {fail_on!r}: warning or critical")
    try:
        result = analyze_bundle(bundle, store, _none_if_auto(_log_format(log_format)))
    except (BundleError, StoreError) as err:
        raise _fail(str(err)) from None
    for note in result.notes[:20]:  # notes quote the bundle: no markup, no terminal escapes
        err_console.print(f"[yellow]note:[/] {escape(visible_controls(note))}", highlight=False)
    caveats = result.coverage.lines() if result.coverage is not None else []
    if format == "json":  # stdout stays the JSON array; what the signals lacked goes to stderr
        for line in caveats:
            err_console.print(f"[yellow]signals:[/] {escape(line)}", highlight=False)
        typer.echo(findings_json(result.findings))
        _exit_on(result.findings, fail_on)
        return
    if format == "markdown":
        typer.echo(findings_markdown(result.findings))
        if caveats:
            typer.echo(
                "## What these signals cannot show\n\n" + "\n".join(f"- {c}" for c in caveats)
            )
        typer.echo("\n## In flight at the end\n\n" + work_markdown(result.work))
        _exit_on(result.findings, fail_on)
        return
    table = findings_table(result.findings, title=f"findings in {bundle}")
    if not result.findings and caveats:
        table.caption = "no findings among the kinds these signals can show (below)"
    console.print(table)
    for line in caveats:
        console.print(f"[yellow]signals:[/] {escape(line)}", highlight=False)
    console.print(work_table(result.work, title="in flight at the end of the bundle"))
    _exit_on(result.findings, fail_on)


def _exit_on(findings: list[Finding], level: str | None) -> None:
    """``--fail-on``: exit 1 when a finding at or above ``level`` exists."""
    if level is None:
        return
    rank = {"warning": 1, "critical": 2}[level]
    if any(f.severity.rank >= rank for f in findings):
        raise typer.Exit(1)


@app.command()
def watch(
    store: StoreOpt,
    url: TritonUrlOpt = None,
    metrics_url: MetricsUrlOpt = None,
    log: LogOpt = None,
    trace: TraceOpt = None,
    otlp_port: OtlpPortOpt = None,
    port: Annotated[int, typer.Option(help="serve /metrics on HOST:PORT (0: any)")] = 9464,
    deadline: Annotated[
        float, typer.Option(min=0.1, help="seconds before a running request counts as hung")
    ] = 10.0,
    duration: UntilOpt = None,
    host: Annotated[
        str, typer.Option(help="address of /metrics and the OTLP receiver; beyond loopback warns")
    ] = "127.0.0.1",
    evidence: Annotated[
        float, typer.Option(min=1, help="seconds of every signal the detectors read each pass")
    ] = 120.0,
    lookback: Annotated[
        float,
        typer.Option(
            min=1,
            help="seconds a request still open is followed back, and a finding stays active "
            "after it was last seen (at least --evidence)",
        ),
    ] = 600.0,
    status: Annotated[
        float,
        typer.Option(
            min=0,
            help="seconds between tables of the work in flight per model and instance, "
            "printed while there is some (0: never)",
        ),
    ] = 30.0,
    log_format: LogFormatOpt = "auto",
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="text (panels) or jsonl (one finding per line on stdout, for log shippers; "
            "everything else goes to stderr)",
        ),
    ] = "text",
    targets: Annotated[
        Path | None,
        typer.Option(
            "--targets",
            help="watch many Tritons: a TOML or YAML file listing, per target, name, url, "
            "metrics_url, log (a file or a glob), log_format, namespace, pod; --store is then "
            "a folder (one store per target)",
        ),
    ] = None,
    pod_logs: Annotated[
        str | None,
        typer.Option(
            "--pod-logs",
            help="watch every pod whose CRI logs a folder or glob holds "
            "(/var/log/pods, or /var/log/pods/*_triton-*_*/triton/*.log), as pods come and "
            "go; --store is then a folder",
        ),
    ] = None,
    max_records: Annotated[
        int,
        typer.Option(
            min=1000, help="records each target's live window holds at most (~0.4 KiB each)"
        ),
    ] = 600_000,
) -> None:
    """Run collectors and detectors live, print each finding as it appears, serve /metrics.

    Also prints which signals the detectors lack (no verbose log, no request ids, no
    /metrics, no in-model library) whenever that changes, and which kinds they cannot see.
    The same server answers the read-only API under /api/v1/ (docs/api.md)."""
    from rich.markup import escape
    from rich.panel import Panel

    from dashboards.app.data.text import visible_controls
    from observability.collect import CollectConfig
    from observability.netaddr import is_loopback
    from observability.report import work_table
    from observability.store import StoreError
    from observability.watch import WatchConfig, Watcher

    fleet = targets is not None or pod_logs is not None
    if fleet and any((url, metrics_url, log, trace, otlp_port is not None)):
        raise _fail(
            "--targets and --pod-logs list every target: give --url, --metrics-url, --log, "
            "--trace and --otlp-port in the targets file (trace and OTLP: one Triton only)"
        )
    if not fleet and not any((url, metrics_url, log, trace, otlp_port is not None)):
        raise _fail("nothing to watch: give --url, --metrics-url, --log, --trace or --otlp-port")
    if not fleet:
        _check_sources(url, metrics_url, log, trace)
    if lookback < evidence:
        raise _fail(f"--lookback ({lookback:g} s) must be at least --evidence ({evidence:g} s)")
    if format not in ("text", "jsonl"):
        raise _fail(f"unknown --format {format!r}: text or jsonl")
    jsonl = format == "jsonl"
    out = err_console if jsonl else console  # with jsonl, stdout holds findings only
    cfg = WatchConfig(
        collect=CollectConfig(
            store=store, url=url, metrics_url=metrics_url, log=log, trace=trace,
            otlp_port=otlp_port, metrics_port=port, host=host,
            log_format=_log_format(log_format),
        ),
        settings={"deadline_s": deadline}, evidence_s=evidence, lookback_s=lookback,
        max_records=max_records,
    )  # fmt: skip
    if fleet:
        _watch_fleet(cfg, targets, pod_logs, duration, jsonl)
        return
    try:
        watcher = Watcher(cfg)
        watcher.runner.start_servers()
    except (StoreError, OSError) as err:
        raise _fail(str(err)) from None

    def safe(text: str | None) -> str:
        # Findings quote the log (request ids, exception text): neither Rich markup nor a
        # terminal escape in them may act on the user's terminal.
        return escape(visible_controls(text or ""))

    def show(finding: Finding) -> None:
        if jsonl:
            sys.stdout.write(json.dumps(finding.to_dict(), sort_keys=True) + "\n")
            sys.stdout.flush()
            return
        style = {"critical": "red", "warning": "yellow"}.get(finding.severity.value, "dim")
        title = f"{finding.severity.value} {safe(finding.kind)} · {safe(finding.model)}"
        if finding.request_id:
            title += f" · {safe(finding.request_id)}"
        console.print(
            Panel(
                f"{safe(finding.summary)}\n[dim]{safe(finding.advice)}[/]",
                title=title,
                border_style=style,
            )
        )

    said: list[object] = [None]  # the signals' states last printed
    tabled = [0.0]  # when the last in-flight table was printed (monotonic)

    def report(w: Watcher) -> None:
        cov = w.coverage
        if cov is not None:
            key = (tuple((s.name, s.state) for s in cov.signals if s.state != "idle"), cov.blind)
            if key != said[0]:
                said[0] = key
                lines = cov.lines() or ["every signal the detectors read is there."]
                for line in lines:
                    out.print(f"[yellow]signals:[/] {escape(line)}", highlight=False)
        due = status and time.monotonic() - tabled[0] >= status
        if due and any(m.active for m in w.work):
            tabled[0] = time.monotonic()
            out.print(work_table(w.work, title=f"in flight at {time.strftime('%H:%M:%S')}"))

    with _sigterm_calls(watcher.stop):
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address needs brackets in a URL
        if not is_loopback(host):
            err_console.print(
                f"[bold yellow]warning:[/] listening on {host}, beyond loopback: other machines "
                "can reach /metrics and the OTLP receiver (--host 127.0.0.1 keeps them local)",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
        out.print(f"metrics  http://{shown}:{watcher.runner.metrics_port}/metrics")
        out.print(f"watching; findings go to {store}; Ctrl-C stops")

        with contextlib.suppress(KeyboardInterrupt):
            watcher.run(
                duration_s=duration,
                on_new=show,
                on_error=lambda e: err_console.print(e),
                on_pass=report,
            )
        out.print(f"{len(watcher.known)} findings active at exit")


def _watch_fleet(
    cfg: WatchConfig, targets: Path | None, pod_logs: str | None, duration: float | None,
    jsonl: bool,
) -> None:  # fmt: skip
    """``watch --targets`` / ``--pod-logs``: every target in one process (fleet.py)."""
    from rich.markup import escape

    from dashboards.app.data.text import visible_controls
    from observability.api import finding_json
    from observability.fleet import (
        FleetConfig,
        FleetWatcher,
        Target,
        TargetError,
        load_targets,
        pod_log_pattern,
    )
    from observability.netaddr import is_loopback

    out = err_console if jsonl else console
    store_dir = cfg.collect.store
    if store_dir.exists() and not store_dir.is_dir():
        raise _fail(f"--store {store_dir}: with --targets or --pod-logs, a folder (one store each)")
    try:
        listed: list[Target] = load_targets(targets) if targets is not None else []
        pattern = pod_log_pattern(pod_logs) if pod_logs is not None else None
        for t in listed:
            _check_sources(t.url, t.metrics_url, None, None)
            _log_format(t.log_format)
        fleet = FleetWatcher(
            FleetConfig(
                store_dir=store_dir, base=cfg, targets=listed, pod_logs=pattern,
                port=cfg.collect.metrics_port, host=cfg.collect.host,
            )
        )  # fmt: skip
        for problem in fleet.errors:
            err_console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
        bound = fleet.start()
    except (TargetError, OSError) as err:
        raise _fail(str(err)) from None

    def safe(text: str | None) -> str:
        return escape(visible_controls(text or ""))

    def show(watcher: Watcher, finding: Finding) -> None:
        if jsonl:
            sys.stdout.write(json.dumps(finding_json(watcher, finding), sort_keys=True) + "\n")
            sys.stdout.flush()
            return
        title = f"{finding.severity.value} {safe(finding.kind)} · {safe(watcher.name)} · "
        title += safe(finding.model) + (
            f" · {safe(finding.request_id)}" if finding.request_id else ""
        )
        style = {"critical": "red", "warning": "yellow"}.get(finding.severity.value, "dim")
        text = f"[{style}]{title}[/]\n  {safe(finding.summary)}\n  [dim]{safe(finding.advice)}[/]"
        console.print(text, highlight=False)

    def moved(added: list[str], gone: list[str]) -> None:
        for name in added:
            out.print(f"[green]target+[/] {safe(name)}", highlight=False)
        for name in gone:
            out.print(f"[yellow]target-[/] {safe(name)} (its pod folder is gone)", highlight=False)

    host = cfg.collect.host
    with _sigterm_calls(fleet.stop):
        shown = f"[{host}]" if ":" in host else host
        if not is_loopback(host):
            err_console.print(
                f"[bold yellow]warning:[/] listening on {host}, beyond loopback: other machines "
                "can reach /metrics and the API (--host 127.0.0.1 keeps them local)",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
        out.print(
            f"metrics  http://{shown}:{bound}/metrics   api  http://{shown}:{bound}/api/v1/targets"
        )
        names = ", ".join(w.name for w in fleet.watchers()) or "none yet"
        out.print(
            f"watching {safe(names)}; one store each in {store_dir}; Ctrl-C stops", highlight=False
        )
        with contextlib.suppress(KeyboardInterrupt):
            fleet.run(
                duration_s=duration, on_new=show, on_error=lambda e: err_console.print(e),
                on_targets=moved,
            )  # fmt: skip
        out.print("stopped")


@contextlib.contextmanager
def _sigterm_calls(action: Callable[[], object]) -> Iterator[None]:
    """SIGTERM stops a long command as Ctrl-C does. The handler it replaced comes back after,
    so a command run in-process (CliRunner, a notebook) leaves the process as it found it."""
    previous = signal.signal(signal.SIGTERM, lambda *_: action())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _mount_dashboards() -> None:
    from dashboards.cli import app as dashboards_app

    app.add_typer(dashboards_app, name="dashboards", help="Grafana dashboards as code.")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def logpipe(
    ctx: typer.Context,
    file: Annotated[Path, typer.Option("--file", help="the log file to write (appended)")],
) -> None:
    """Run a command (tritonserver) with its output and its stubs' piped into one log file
    and on to stdout: triton-obs logpipe --file /var/log/triton/triton.log -- tritonserver ..."""
    from observability.logpipe import run

    command = ctx.args[1:] if ctx.args[:1] == ["--"] else list(ctx.args)
    if not command:
        raise _fail("give the command to run after --")
    if not file.parent.is_dir():
        raise _fail(f"--file {file}: its folder {file.parent} does not exist")
    try:
        code = run(command, file)
    except OSError as err:
        raise _fail(f"cannot run {command[0]}: {err}") from None
    raise typer.Exit(code)


alerts_app = typer.Typer(help="Prometheus alert rules for your deployment.", no_args_is_help=True)
app.add_typer(alerts_app, name="alerts", help="Prometheus alert rules for your deployment.")


@alerts_app.command("render")
def alerts_render(
    out: Annotated[Path, typer.Option(help="folder for the rendered *.rules.yml")],
    triton_job: Annotated[
        str,
        typer.Option(help='the label matcher of the job scraping Triton, e.g. job=~"triton-.*"'),
    ] = 'job="triton"',
    watch_job: Annotated[
        str, typer.Option(help="the label matcher of the job scraping triton-obs watch")
    ] = 'job="triton-obs"',
    runbook_base: Annotated[
        str, typer.Option(help="where docs/runbooks/ is served (runbook_url = BASE/docs/...)")
    ] = "https://github.com/triton-observability/triton-observability/blob/main/",
) -> None:
    """Write the alert rules with your job selectors and runbook base (promtool-checked as
    shipped: only those strings change)."""
    from dashboards.alerts_render import render_all

    try:
        written = render_all(
            out, triton_job=triton_job, watch_job=watch_job, runbook_base=runbook_base
        )
    except ValueError as err:
        raise _fail(str(err)) from None
    for path in written:
        console.print(str(path), soft_wrap=True)


_mount_dashboards()


def _mount_kubernetes() -> None:
    from dashboards.kubernetes import app as kubernetes_app

    app.add_typer(kubernetes_app, name="kubernetes", help="Kubernetes manifests (kustomize).")


_mount_kubernetes()


def _mount_triage() -> None:
    from dashboards.app_cli import triage

    app.command("triage")(triage)


_mount_triage()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
