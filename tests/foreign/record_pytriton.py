"""Record the ``pt`` family: models served through PyTriton, as its users serve them.

    python -m tests.foreign.record_pytriton OUT_DIR [scenario ...]

Unlike ``tests.foreign.record`` (a model repository served by the lab's tritonserver), each
scenario here runs ``tests/foreign/pytriton_app.py`` as its own process: PyTriton's
``Triton(config=TritonConfig(...))`` starts tritonserver 2.51 (from the nvidia-pytriton
wheel) as its child, loads the bound models through the repository API and serves each batch
to an ``infer_func`` in that process over ZeroMQ. The recorder starts that process on three
free loopback ports, drives it with id-less gRPC clients (``observability.load.TritonClient``)
for the whole window, arms the scenario's fault through a file the app polls, records with
the product's own ``capture`` (the log file given to ``TritonConfig(log_file=...)``, /metrics,
/v2/models/stats; no trace file: PyTriton turns ``TritonConfig(trace_config=...)`` into an
OpenTelemetry tracer of its own) and stops the app and every process under it by pid.
PyTriton's workspace (its copy of tritonserver, the generated models, the ZeroMQ sockets)
lives in the scenario's temporary folder: a stop that times out on a hung ``infer_func``
leaves nothing in ~/.cache/pytriton.
Each scenario leaves in ``OUT_DIR/<scenario>/`` the layout of ``tests.foreign.record``:
``bundle.tar.gz``, ``expected.json``, ``PROVENANCE.md``, ``analysis-at-recording.md``.
OUT_DIR/<scenario> must not exist. This is a tool, not a test.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from observability.lab.ports import free_port
from tests.foreign.record import (
    ARCHIVE,
    MAX_REQUESTS_PER_WORKER,
    Outcomes,
    _git_commit,
    _scrub_meta,
    analysis_markdown,
    run_cli,
)
from tests.security.sockets import process_tree

ROOT = Path(__file__).resolve().parents[2]
PAUSE_S = 0.3
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PtScenario:
    name: str
    summary: str
    expected: tuple[tuple[str, str], ...] = ()
    absent: tuple[tuple[str, str], ...] = ()
    mentions: tuple[tuple[str, str, str], ...] = ()
    fault: str = ""
    """``pytriton_app --fault``: ``embed_hang``, ``tag_raises``, ``embed_cold``, ``tag_leak``."""
    arm_at_s: float | None = None
    """Seconds after the capture started when the fault is armed (None: armed from the start)."""
    log_verbose: int = 1
    duration_s: float = 30.0
    note: str = ""
    default_security: bool = False
    """PyTriton's default ``TritonSecurityConfig``: /v2/models/stats refuses the capture (403)."""

    @property
    def healthy(self) -> bool:
        return not self.expected


_FAMILY = (
    "three models bound with PyTriton 0.7.0 (`Triton.bind`), each a python-backend proxy that "
    "forwards its batches over ZeroMQ to an infer_func in the app's process: pt_rank (2 "
    "instances, no batching, each calling pt_embed through its own pytriton ModelClient over "
    "gRPC: a client-side chain), pt_embed (@batch, max_batch_size 8, dynamic batching 2 ms, "
    "1 instance) and pt_tag (@batch, max_batch_size 4, dynamic batching 1 ms, 1 instance, "
    "TAGS [-1]); two id-less gRPC clients on pt_rank and one on pt_tag"
)

SCENARIOS: dict[str, PtScenario] = {
    s.name: s
    for s in (
        PtScenario("pt_healthy", f"{_FAMILY}; verbose log; nothing injected"),
        PtScenario(
            "pt_healthy_quiet",
            f"{_FAMILY}; `log_verbose=0` (metrics and statistics only); nothing injected",
            log_verbose=0,
        ),
        PtScenario(
            "pt_healthy_guarded",
            f"{_FAMILY}; verbose log; PyTriton's default TritonSecurityConfig, which guards "
            "/v2/models/stats with a generated access token: every statistics scrape of the "
            "capture is refused (403); nothing injected",
            default_security=True,
            note="A user must hear nothing of warning or above; the refused statistics "
            "are a coverage matter (the bundle's scrapes.jsonl), not a fault of the models.",
        ),
        PtScenario(
            "pt_embed_hang",
            f"{_FAMILY}; verbose log; 5 s in, pt_embed's infer_func blocks forever on its "
            "next batch (a lock never released): its only instance is held, both pt_rank "
            "instances wait in ModelClient.infer_sample (60 s default timeout), the clients "
            "give up after 10 s",
            expected=(("hung_request", "pt_embed"),),
            absent=(
                ("hung_request", "pt_tag"),
                ("model_failing", "pt_tag"),
                ("bls_deadlock", "pt_embed"),
            ),
            mentions=(
                ("hung_request", "pt_embed", "its own execute is stuck"),
                ("hung_request", "pt_rank", "pt_embed"),
            ),
            fault="embed_hang",
            arm_at_s=5.0,
            note="pt_embed makes no call: the hung batch is its own infer_func (a finding on "
            "it must say so). pt_rank's instances hang too, waiting in ModelClient on "
            "pt_embed: a hung_request on pt_rank is true, and must say that it waits on "
            "pt_embed.",
        ),
        PtScenario(
            "pt_tag_raises",
            f"{_FAMILY}; verbose log; 10 s in, pt_tag's infer_func raises KeyError on every "
            "call (a vocabulary lookup that fails from then on)",
            expected=(("model_failing", "pt_tag"),),
            absent=(("model_failing", "pt_rank"), ("model_failing", "pt_embed")),
            mentions=(("model_failing", "pt_tag", "KeyError"),),
            fault="tag_raises",
            arm_at_s=10.0,
        ),
        PtScenario(
            "pt_embed_cold_start",
            f"{_FAMILY}; verbose log; pt_embed's infer_func takes 4 s on its first call (a lazy "
            "set-up), then ~5 ms; no warm-up, so the first call falls in the window",
            expected=(("cold_start", "pt_embed"),),
            absent=(("cold_start", "pt_rank"), ("hung_request", "pt_rank")),
            fault="embed_cold",
        ),
        PtScenario(
            "pt_tag_state_doubling",
            f"{_FAMILY}; verbose log; pt_tag's infer_func appends what it emits to a list it "
            "keeps and answers the whole list: TAGS doubles every call (8, 16, ... 131072: cut "
            "back to 8 once past 65536)",
            expected=(("shape_growth", "pt_tag"),),
            absent=(("shape_growth", "pt_rank"), ("shape_growth", "pt_embed")),
            fault="tag_leak",
        ),
        PtScenario(
            "pt_embed_hang_quiet",
            f"{_FAMILY}; `log_verbose=0` (metrics and statistics only); 5 s in, pt_embed's "
            "infer_func blocks forever on its next batch, as in pt_embed_hang",
            expected=(("model_stalled", "pt_embed"),),
            absent=(("model_failing", "pt_tag"), ("model_stalled", "pt_tag")),
            fault="embed_hang",
            arm_at_s=5.0,
            log_verbose=0,
        ),
    )
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def _stop_app(app: subprocess.Popen[bytes]) -> list[int]:
    """SIGTERM the app (Triton.stop()), then SIGKILL, by pid, whatever of it is left."""
    tree = sorted(process_tree(app.pid) - {app.pid})
    app.send_signal(signal.SIGTERM)
    try:
        app.wait(timeout=30)
    except subprocess.TimeoutExpired:
        app.kill()
        app.wait(timeout=10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in tree):
        time.sleep(0.5)
    left = [p for p in tree if _alive(p)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


def _client(
    url: str, model: str, seed: int, stop: threading.Event, until: float, out: Outcomes, t0: float
) -> None:
    from observability.load import TritonClient

    client = TritonClient(url, timeout_s=TIMEOUT_S, send_ids=False)
    rng = np.random.default_rng(seed)
    try:
        for _ in range(MAX_REQUESTS_PER_WORKER):
            if stop.is_set() or time.monotonic() > until:
                break
            if model == "pt_rank":
                inputs = {"QUERY": rng.integers(0, 30000, size=16).astype(np.int32)}
            else:
                inputs = {"TEXT": rng.integers(0, 30000, size=(1, 8)).astype(np.int32)}
            out.add(f"healthy:{model}", client.infer(model, inputs, ""), t0)
            stop.wait(PAUSE_S)
    finally:
        client.close()


def _get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return dict(json.loads(resp.read()))


def record_scenario(scenario: PtScenario, out: Path) -> Path:
    from observability.bundle import write_archive
    from observability.bundle.capture import CaptureConfig, capture

    if out.exists():
        raise SystemExit(f"{out} exists: remove it first (or record elsewhere)")
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    outcomes = Outcomes()
    http, grpc, metrics = (free_port() for _ in range(3))
    with tempfile.TemporaryDirectory(prefix=f"foreign-{scenario.name}-") as tmp_name:
        tmp = Path(tmp_name)
        log = tmp / "triton.log"
        arm = tmp / "armed"
        env = dict(os.environ)
        # The wheel's stub embeds libpython3.11 from the loader path: it must be this
        # interpreter's, or PyTriton's proxy dies in multiprocessing (stdlib of one 3.11
        # patch release, C runtime of another).
        libdir = str(sysconfig.get_config_var("LIBDIR") or "")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p
        )
        env["TZ"] = "UTC"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        argv = [
            sys.executable, "-m", "tests.foreign.pytriton_app",
            "--http-port", str(http), "--grpc-port", str(grpc), "--metrics-port", str(metrics),
            "--log-file", str(log), "--log-verbose", str(scenario.log_verbose),
            "--workspace", str(tmp / "workspace"),
        ]  # fmt: skip
        if scenario.fault:
            argv += ["--fault", scenario.fault, "--arm-file", str(arm)]
        if scenario.default_security:
            argv.append("--default-security")
        if scenario.fault and scenario.arm_at_s is None:
            arm.touch()
        app_out = (tmp / "app.out").open("wb")
        app = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=app_out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        stop = threading.Event()
        threads: list[threading.Thread] = []
        left: list[int] = []
        armed_at: list[str] = []
        try:
            deadline = time.monotonic() + 180
            while b"PT_READY" not in (tmp / "app.out").read_bytes():
                if app.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"app did not start:\n{(tmp / 'app.out').read_text()[-3000:]}")
                time.sleep(0.5)
            version = str(_get_json(f"http://127.0.0.1:{http}/v2")["version"])
            t0 = time.monotonic()
            until = t0 + scenario.duration_s + 2
            url = f"grpc://127.0.0.1:{grpc}"
            for seed, model in ((1, "pt_rank"), (2, "pt_rank"), (3, "pt_tag")):
                th = threading.Thread(
                    target=_client, args=(url, model, seed, stop, until, outcomes, t0), daemon=True
                )
                th.start()
                threads.append(th)
            if scenario.fault and scenario.arm_at_s is not None:
                at = scenario.arm_at_s

                def _arm() -> None:
                    arm.touch()
                    armed_at.append(datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3])

                timer = threading.Timer(at, _arm)
                timer.daemon = True
                timer.start()
            bundle = tmp / scenario.name
            result = capture(
                CaptureConfig(
                    out=bundle,
                    url=f"http://127.0.0.1:{http}",
                    metrics_url=f"http://127.0.0.1:{metrics}/metrics",
                    log=log,
                    duration_s=scenario.duration_s,
                    interval_s=1.0,
                    log_from_start=True,
                )
            )
            stop.set()
            for th in threads:
                th.join(timeout=15)
        finally:
            stop.set()
            left = _stop_app(app)
            app_out.close()
        _scrub_meta(bundle)
        out.mkdir(parents=True)
        write_archive(bundle, out / ARCHIVE)
    expected: dict[str, object] = {
        "findings": [list(p) for p in scenario.expected],
        "healthy": scenario.healthy,
    }
    if scenario.absent:
        expected["absent"] = [list(p) for p in scenario.absent]
    if scenario.mentions:
        expected["mentions"] = [list(p) for p in scenario.mentions]
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    labels = sorted({str(r["label"]) for r in outcomes.rows})
    clients = {label: outcomes.summary(label) for label in labels}
    (out / "PROVENANCE.md").write_text(
        _provenance(scenario, out, started, version, result.failures, clients, left, armed_at)
    )
    (out / "analysis-at-recording.md").write_text(analysis_markdown(out / ARCHIVE, scenario))  # type: ignore[arg-type]
    return out


def _provenance(
    scenario: PtScenario,
    out: Path,
    started: str,
    version: str,
    failures: list[str],
    clients: dict[str, dict[str, object]],
    left: list[int],
    armed_at: list[str],
) -> str:
    from importlib.metadata import version as dist_version

    armed = (
        f"armed {scenario.arm_at_s:g} s after the capture started"
        f" ({armed_at[0] if armed_at else '?'} UTC)"
        if scenario.arm_at_s is not None
        else "armed from the start"
    )
    fault = f"`--fault {scenario.fault}`, {armed}" if scenario.fault else "none: the healthy twin"
    expected = (
        ", ".join(f"`{k}` on `{m}`" for k, m in scenario.expected)
        or "none of severity warning or above (healthy)"
    )
    absent = ", ".join(f"`{k}` on `{m}`" for k, m in scenario.absent) or "-"
    size = (out / ARCHIVE).stat().st_size
    return f"""# {scenario.name}

{scenario.summary}.

Recorded by

    python -m tests.foreign.record_pytriton tests/fixtures/foreign {scenario.name}

- Recorded: {started} (UTC), on {platform.platform()}, Python {platform.python_version()},
  tree at commit {_git_commit()} (plus its uncommitted edits).
- tritonserver {version} started by **PyTriton {dist_version("nvidia-pytriton")}**
  (`tests/foreign/pytriton_app.py`: `Triton(config=TritonConfig(http/grpc/metrics on
  127.0.0.1, log_file=..., log_verbose={scenario.log_verbose}, exit_timeout_secs=5,
  allow_gpu_metrics=False), security_config={_security_text(scenario)}, then `bind` x3
  and `run()`), CPU
  only; model control `explicit` (PyTriton loads each bound model through the repository API
  with its generated config); `LD_LIBRARY_PATH` led by this interpreter's libdir; no trace
  file.
- Signals: `observability.bundle.capture` for {scenario.duration_s:g} s (1 s interval, the
  log from its start), written with `write_archive` as `{ARCHIVE}` ({size:,} bytes);
  `meta.json`'s source paths cut to file names. Capture failures: {len(failures)}.
- Load: two gRPC clients on `pt_rank` (QUERY [16] INT32) and one on `pt_tag` (TEXT [1, 8]
  INT32), `observability.load.TritonClient`, `send_ids=False`, each pausing {PAUSE_S:g} s
  after an answer, timeout {TIMEOUT_S:g} s, at most {MAX_REQUESTS_PER_WORKER} requests each,
  for the whole window; no warm-up.
- Fault: {fault}.
- Expected: {expected}; absent: {absent}.
- What the clients saw: `{json.dumps(clients)}`
- Processes left after `Triton.stop()` and killed by pid: {left or "none"}.
{f"{chr(10)}{scenario.note}{chr(10)}" if scenario.note else ""}"""


def _security_text(scenario: PtScenario) -> str:
    if scenario.default_security:
        return (
            "None)` (PyTriton's default: shared-memory, model-repository,\n"
            "  **statistics**, trace and logging need its generated `triton-access-token`)"
        )
    return (
        "TritonSecurityConfig(restricted_endpoints=\n"
        "  [shared-memory, model-repository, trace, logging]))`"
    )


def main(argv: list[str] | None = None) -> int:
    return run_cli(
        argv, "python -m tests.foreign.record_pytriton", __doc__, SCENARIOS, record_scenario
    )


if __name__ == "__main__":
    sys.exit(main())
