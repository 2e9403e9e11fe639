"""Soak: ``triton-obs watch`` on the instrumented demo pipeline under mixed load and faults.

One cycle (about 2.5 minutes) injects every fault once: the demo's pathologies as real
requests, and the trouble production gives the collector itself — SIGKILL twice (the second
holds it down, so the models' OTLP endpoint is gone for a stretch), a Triton restart, two
rename rotations and a copytruncate of the live log, garbage in the log, and a full disk
under the store. CI runs one cycle; ``pytest -m soak tests/soak --soak-minutes 60`` repeats
the cycle for an hour. The figures land in ``test-artifacts/soak/report.json``.

Afterwards: every request Triton received is in the store exactly once; every pathology has
its finding (kind and model) and nothing of severity warning or above appears outside a
fault window; the collector's memory stayed flat; no unhandled exception in any log.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest

from observability import events as ev
from observability.catalogue import schedule
from observability.lab import LabConfig, TritonLab, demo_repository
from observability.lab.errors import LabError
from observability.lab.ports import free_port
from observability.load import LoadConfig, Outcome, Status, TritonClient, run_load
from observability.load.runner import set_cold_start
from observability.load.workload import inputs_for
from observability.store import Store, StoreError
from tests.soak.harness import (
    GARBAGE_EXCEPTION,
    CollectorProcess,
    DiskFiller,
    FaultWindow,
    RssSampler,
    append_garbage,
    copytruncate,
    rotate,
)

pytestmark = [pytest.mark.lab, pytest.mark.soak]

CYCLE_S = 140.0
LOAD_PER_S = 30.0
"""A steady open-loop load, about half of what the 2-core CI machine answers flat out."""
RSS_BOUND_MIB = 512
"""The collector's memory ceiling under this load: a 4 MiB tail read and 200 pending
batches at most, whatever the backlog (measured peaks: 230-310 MiB)."""
GRACE_S = 30.0
"""A finding may trail its fault by a detection pass or a restart's catch-up."""
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "soak"
# Client errors that mean the request never reached Triton (it was restarting).
# A stopping Triton unloads its models first: it refuses with "has no available versions"
# before a request exists, so its log has nothing to store. A gRPC stream the restart broke
# refuses to send ("The stream is no longer in valid state"): the token-streaming load.
_UNDELIVERED = ("unavailable", "connection refused", "failed to connect", "socket closed",
                "connect failed", "has no available versions",
                "stream is no longer in valid state")  # fmt: skip
# The injected faults' own exceptions (the demo's callback reads a wrong output name) and
# the garbage line's; anything else in Triton's log is an unhandled exception of ours.
_ALLOWED_EXCEPTIONS = ("ChildError", "KeyError: 'LOGITS'", GARBAGE_EXCEPTION.decode())


def _metric(url: str, name: str) -> float:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            page = resp.read().decode()
    except OSError:
        return float("nan")
    total = 0.0
    for line in page.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Soak:
    """The run's state: lab, collector, load, and the faults as they happen."""

    def __init__(self, tmp: Path, cycles: int) -> None:
        self.tmp = tmp
        self.cycles = cycles
        self.otlp_port = free_port()
        # The store grows ~1.5 MB/s under this load; retention caps it at 2 GiB (+ WAL).
        self.disk = DiskFiller(tmp / "disk", size_mb=min(1024 + 120 * cycles, 3072))
        self.disk.mount()
        self.store_path = self.disk.mountpoint / "store.db"
        self.lab = TritonLab(
            LabConfig(
                model_repository=demo_repository(),
                run_dir=tmp / "run",
                model_control="explicit",
                trace_log_frequency=50,
                log_pipe=True,
                exit_timeout_s=10,
                env={
                    "TRITON_OBS_ENDPOINT": f"http://127.0.0.1:{self.otlp_port}/v1/traces",
                    "TRITON_OBS_FLUSH_INTERVAL_S": "0.5",
                },
            )
        )
        self.collector: CollectorProcess | None = None
        self.windows: list[FaultWindow] = []
        self.outcomes: list[Outcome] = []
        self.notes: list[str] = []
        self.facts: dict[str, list[dict[str, object]]] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.confirmed: dict[tuple[str, str], tuple[int, int]] = {}
        """``(request id, model)`` → ``(times stored, its RequestPrepared at_ns)``, as seen a
        cycle after it was sent: the store's retention may remove it before the end of a long
        run, and the final count must tell that policy from a loss."""
        self.ledger_checks: list[dict[str, object]] = []
        self.store_sizes: list[tuple[float, int]] = []
        """``(seconds since the run began, bytes of the store and its WAL)`` at each cycle's
        start and at the end: the store's growth over a long run."""

    # -- set-up ------------------------------------------------------------------------
    def start(self) -> None:
        self.lab.start()
        self.collector = CollectorProcess(
            [
                "--store", str(self.store_path), "--url", self.lab.http_url,
                "--metrics-url", self.lab.metrics_url, "--log", str(self.lab.log_path),
                "--trace", str(self.lab.trace_path), "--otlp-port", str(self.otlp_port),
                "--port", "0", "--deadline", "10",
            ],
            self.tmp,
        )  # fmt: skip
        self.collector.start()

    def window(self, name: str, finds: tuple[str, str] | None = None) -> FaultWindow:
        w = FaultWindow(name, time.time(), finds=finds)
        with self._lock:
            self.windows.append(w)
        return w

    # -- request faults ----------------------------------------------------------------
    def send(
        self,
        cycle: int,
        fault: str,
        lasts_s: float,
        count: int = 1,
        timeout_s: float = 5.0,
        **params: str,
    ) -> None:
        scheduled = schedule([(0.0, fault)])[0]
        model = scheduled.fault.entry_model
        w = self.window(fault, scheduled.finds)
        w.end = w.start + lasts_s
        w.note = f"soak-c{cycle}-{fault}-"  # its requests' id prefix

        def one(i: int) -> None:
            client = TritonClient(self.lab.grpc_url, timeout_s)
            try:
                outcome = client.infer(
                    model,
                    inputs_for(model, random.Random(i)),
                    request_id=f"soak-c{cycle}-{fault}-{i}",
                    fault=fault,
                    parameters={"fault": fault, **params},
                )
            finally:
                client.close()
            with self._lock:
                self.outcomes.append(outcome)

        for i in range(count):
            t = threading.Thread(target=one, args=(i,), name=f"soak-{fault}", daemon=True)
            t.start()
            self._threads.append(t)

    # -- collector and infrastructure faults -------------------------------------------
    def kill_collector(self, down_s: float) -> None:
        assert self.collector is not None
        name = "collector_sigkill" if down_s < 1 else "collector_sigkill_otlp_down"
        w = self.window(name)
        dropped_before = _metric(self.lab.metrics_url, "triton_obs_bls_dropped_spans_total")
        self.collector.kill()
        time.sleep(down_s)
        if down_s >= 1:
            answered = self._answered_since(w.start)
            dropped = _metric(self.lab.metrics_url, "triton_obs_bls_dropped_spans_total")
            fact = {
                "seconds": down_s,
                "spans_dropped": dropped - dropped_before,
                "requests_answered_meanwhile": answered,
            }
            self.facts.setdefault("otlp_down", []).append(fact)
        self.collector.start()
        w.end = time.time()

    def _answered_since(self, since: float) -> int:
        with self._lock:
            return sum(
                1
                for o in self.outcomes
                if o.status is Status.OK and o.started >= since - time.time() + time.monotonic()
            )

    def restart_triton(self) -> None:
        w = self.window("triton_restart", ("target_down", ""))
        for attempt in range(3):
            try:
                self.lab.restart()
                break
            except LabError as err:
                # Triton 2.51 itself may abort while its python stubs start on a loaded box
                # (boost::interprocess::lock_exception, seen once at minute 58 of an hour):
                # a server that dies on start is what production restarts again, and the
                # collector must ride it out like any other downtime.
                first = str(err).splitlines()[0]
                self.notes.append(f"triton restart attempt {attempt + 1} failed: {first}")
                if attempt == 2:
                    raise
        # Ready over HTTP is not yet reachable over gRPC for a fresh channel: wait for both,
        # so that the next fault's request is not refused.
        import tritonclient.grpc as grpcclient

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            client = grpcclient.InferenceServerClient(self.lab.grpc_url)
            try:
                if client.is_server_ready(client_timeout=2):
                    break
            except Exception:
                time.sleep(0.5)
            finally:
                client.close()
        w.end = time.time() + 5

    def fill_disk(self, hold_s: float, say_within_s: float = 40) -> None:
        """Take every free byte until the collector says the store is full, hold, free it.

        SQLite keeps writing into WAL pages it already has, so a full disk bites only when
        the store needs a new page: the hold starts once the collector has said so."""
        if not self.disk.mounted:
            self.notes.append(f"disk full not injected: cannot mount a tmpfs ({self.disk.why_not})")
            return
        assert self.collector is not None
        w = self.window("disk_full")
        taken = self.disk.fill()
        full = 'triton_obs_store_errors_total{reason="full"}'
        deadline = time.monotonic() + say_within_s
        while time.monotonic() < deadline and not _metric(self.collector.metrics_url, full) > 0:
            time.sleep(0.5)
        said_after = round(time.time() - w.start, 1)
        time.sleep(hold_s)
        errors = _metric(self.collector.metrics_url, full)
        alive = self.collector.alive()
        stored = self._stored_records()
        self.disk.release()
        released = time.time()
        resumed_after = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._stored_records() > stored:
                resumed_after = round(time.time() - released, 1)
                break
            time.sleep(0.5)
        w.end = time.time()
        fact = {
            "bytes_taken": taken,
            "collector_said_full_after_s": said_after,
            "held_s": hold_s,
            "store_full_errors": errors,
            "collector_alive": alive,
            "resumed_s_after_release": resumed_after,
        }
        self.facts.setdefault("disk_full", []).append(fact)

    def _stored_records(self) -> float:
        """Records the collector has inserted, by its own counter: once the store is at its
        size cap, retention deletes as fast as the collector writes, so a row count can
        stand still while writing goes on."""
        assert self.collector is not None
        return _metric(self.collector.metrics_url, "triton_obs_events_stored_total")

    def log_fault(self, name: str, action: Callable[[], object]) -> None:
        w = self.window(name)
        action()
        w.end = time.time() + 2

    def copytruncate(self, cycle: int) -> None:
        w = self.window("copytruncate")
        _, w.lost_bytes, *race = copytruncate(self.lab.log_path, f"c{cycle}ct")
        w.race = (race[0], race[1])
        w.end = time.time() + 2

    def cold_start(self, cycle: int) -> None:
        w = self.window("cold_start", schedule([(0.0, "cold_start")])[0].finds)
        set_cold_start(self.lab.grpc_url, 4)
        client = TritonClient(self.lab.grpc_url, 20)
        try:
            outcome = client.infer(
                "router", inputs_for("router", random.Random(cycle)), f"soak-c{cycle}-cold-0"
            )
        finally:
            client.close()
        with self._lock:
            self.outcomes.append(outcome)
        set_cold_start(self.lab.grpc_url, 0)
        w.end = time.time()

    # -- the ledger ---------------------------------------------------------------------
    def sample_store_size(self, at_s: float) -> None:
        size = sum(p.stat().st_size for p in self.store_path.parent.glob("store.db*"))
        self.store_sizes.append((round(at_s, 1), size))

    def check_ledger(self, sent_before: float) -> None:
        """Count in the store each delivered request sent before ``sent_before`` (monotonic)
        and not confirmed yet. Done between cycles, long before the store's retention cap
        reaches them; a request not there yet is looked for again next time."""
        with self._lock:
            todo = [
                (o.request_id, o.model) for o in self.outcomes
                if o.started < sent_before and _delivered(o)
                and (o.request_id, o.model) not in self.confirmed
            ]  # fmt: skip
        t0, found = time.monotonic(), 0
        try:
            with Store(self.store_path, readonly=True, timeout_s=30) as db:
                wanted = set(todo)
                ids = {rid for rid, _ in todo}
                seen: dict[tuple[str, str], tuple[int, int]] = {}
                for rec in db.log_records(kinds=["RequestPrepared"]):
                    assert isinstance(rec, ev.RequestPrepared)
                    key = (rec.request_id, rec.model)
                    if rec.request_id in ids and key in wanted:  # not a child sharing the id
                        n, at_ns = seen.get(key, (0, rec.header.at_ns))
                        seen[key] = (n + 1, min(at_ns, rec.header.at_ns))
                for key, value in seen.items():
                    self.confirmed[key] = value
                    found += 1
        except (sqlite3.Error, StoreError) as e:  # the run goes on; the final count judges
            self.notes.append(f"ledger check skipped: {e}")
            return
        self.ledger_checks.append(
            {"looked_for": len(todo), "found": found, "took_s": round(time.monotonic() - t0, 1)}
        )

    # -- one cycle ---------------------------------------------------------------------
    def schedule(self, cycle: int) -> list[tuple[float, Callable[[], None]]]:
        """One cycle's faults. The collector is killed in the first cycle only, so that in a
        long soak one collector process lives through every later cycle: its memory per
        cycle is the leak check. Its kills fall between pathologies: bls_deadlock and
        instance_saturation report what is going on, so a deadlock that starts and ends
        while no collector runs is never seen (a documented limit, not a soak finding)."""
        log = self.lab.log_path
        steps = [
            (3, lambda: self.send(cycle, "hang", 22,
                                  hang_s="20")),
            (8, lambda: self.send(cycle, "slow", 12, count=8, timeout_s=15, slow_s="0.5")),
            (23, lambda: self.kill_collector(0)),
            (18, lambda: self.send(cycle, "callback", 8, timeout_s=15, callback_wait_s="5")),
            (19, lambda: self.send(cycle, "task_error", 8, timeout_s=15)),
            (24, lambda: self.log_fault("garbage", lambda: append_garbage(log))),
            (28, lambda: self.log_fault("rotate", lambda: rotate(log, f"c{cycle}r1"))),
            (32, lambda: self.send(cycle, "shape_growth", 10, count=3, timeout_s=30)),
            (38, lambda: self.send(cycle, "deadlock", 16, deadlock_s="12")),
            (54, lambda: self.kill_collector(12)),
            (70, lambda: self.copytruncate(cycle)),
            (74, lambda: self.fill_disk(6)),
            (96, self.restart_triton),
            (118, lambda: self.log_fault("rotate", lambda: rotate(log, f"c{cycle}r2"))),
            (114, lambda: self.send(cycle, "fanout", 14, timeout_s=30, fanout_n="64")),
            (124, lambda: self.cold_start(cycle)),
        ]  # fmt: skip
        if cycle > 0:
            steps = [(at, step) for at, step in steps if at not in (23, 54)]
        return sorted(steps, key=lambda step: step[0])

    def run(self) -> None:
        stop = threading.Event()
        load = LoadConfig(
            url=self.lab.grpc_url, concurrency=4, requests=10_000_000,
            duration_s=self.cycles * CYCLE_S, timeout_s=10, run_tag="soak-load",
            rate_per_s=LOAD_PER_S,
        )  # fmt: skip

        def on_outcome(o: Outcome) -> None:
            with self._lock:
                self.outcomes.append(o)

        loader = threading.Thread(
            target=run_load, args=(load, on_outcome, stop), name="soak-load", daemon=True
        )
        loader.start()
        began = time.monotonic()
        try:
            for cycle in range(self.cycles):
                t0 = time.monotonic()
                self.sample_store_size(t0 - began)
                if cycle > 0:
                    # the last cycle's requests, but for its final seconds: the collector
                    # may not have read them yet (they are looked for again next cycle)
                    self.check_ledger(sent_before=t0 - 20)
                for at, action in self.schedule(cycle):
                    time.sleep(max(0.0, t0 + at - time.monotonic()))
                    action()
                time.sleep(max(0.0, t0 + CYCLE_S - time.monotonic()))
            self.sample_store_size(time.monotonic() - began)
        finally:
            stop.set()
            loader.join(60)
            for t in self._threads:
                t.join(max(0.1, 40))

    def drain(self) -> int:
        """Let the collector read the last lines and detect once more; then stop it."""
        assert self.collector is not None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if _metric(self.collector.metrics_url, "triton_obs_tail_lag_bytes") == 0:
                break
            time.sleep(0.5)
        time.sleep(6)  # two detection passes
        return self.collector.terminate()


def _delivered(o: Outcome) -> bool:
    """Whether the request reached Triton: not refused while it was restarting."""
    return not (o.status is Status.ERROR and any(m in o.error.lower() for m in _UNDELIVERED))


def _log_texts(run_dir: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(run_dir.glob("triton.log*"))]


def _exception_lines(blob: bytes) -> list[str]:
    """The exception line that ends each traceback in the log."""
    out = []
    lines = blob.split(b"\n")
    for i, line in enumerate(lines):
        if b"Traceback (most recent call last):" not in line:
            continue
        for later in lines[i + 1 : i + 200]:
            if later and not later.startswith((b" ", b"\t")):
                out.append(later.decode(errors="replace")[:200])
                break
    return out


def _told(o: Outcome, t_mono0: float) -> str:
    """One request as a failure message shows it: what came back, and when it was sent."""
    said = f" {o.error[:120]}" if o.error else ""
    return f"{o.request_id} ({o.model}) sent at {o.started - t_mono0:.1f} s: {o.status.value}{said}"


def _spans_of(times: list[float], gap_s: float = 2.0) -> list[tuple[float, float, int]]:
    """Sorted instants as ``(first, last, count)`` runs: where in the run something happened."""
    runs: list[list[float]] = []
    for t in times:
        if runs and t - runs[-1][1] <= gap_s:
            runs[-1][1] = t
            runs[-1][2] += 1
        else:
            runs.append([t, t, 1])
    return [(round(a, 1), round(b, 1), int(n)) for a, b, n in runs]


def test_soak_with_faults(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    minutes = request.config.getoption("--soak-minutes")
    cycles = max(1, round(minutes * 60 / CYCLE_S)) if minutes else 1
    soak = Soak(tmp_path, cycles)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    started, t_mono0 = time.time(), time.monotonic()
    run_error: Exception | None = None
    try:
        soak.start()
        assert soak.collector is not None
        rss = RssSampler(soak.collector).start()
        try:
            soak.run()
        except Exception as err:  # what ran is still measured and reported, then it fails
            run_error = err
            soak.notes.append(f"the run stopped: {type(err).__name__}: {str(err)[:300]}")
        exit_code = soak.drain()
        rss.stop()
    finally:
        if soak.collector is not None and soak.collector.alive():
            soak.collector.kill()
        soak.lab.stop()
        request.addfinalizer(soak.disk.unmount)
    collector_output = soak.collector.output()
    if soak.store_path.exists():  # off the tmpfs, for a look after a failure
        for part in soak.store_path.parent.glob("store.db*"):
            shutil.copyfile(part, tmp_path / part.name)

    # -- the store: every request Triton received, exactly once ------------------------------
    with Store(soak.store_path, readonly=True) as store:
        records = [
            r for r in store.log_records(kinds=["RequestPrepared"])
            if isinstance(r, ev.RequestPrepared)
        ]  # fmt: skip
        findings = store.findings()
        otlp_spans = store.count("otlp_spans")
        trace_spans = store.count("trace_spans")
    prepared = Counter((r.request_id, r.model) for r in records if r.request_id.startswith("soak-"))
    oldest_ns = min((r.header.at_ns for r in records), default=0)
    sent = list(soak.outcomes)
    delivered = [o for o in sent if _delivered(o)]

    # A request counted once a cycle after it was sent, and gone at the end, is one the
    # store's size cap removed, if its line is older than the oldest line the store kept.
    def aged_out(o: Outcome) -> bool:
        n, at_ns = soak.confirmed.get((o.request_id, o.model), (0, 0))
        return n == 1 and at_ns < oldest_ns

    retained = [o for o in delivered if prepared[(o.request_id, o.model)] > 0 or not aged_out(o)]
    removed_by_retention = len(delivered) - len(retained)
    missing = [o.request_id for o in retained if prepared[(o.request_id, o.model)] == 0]
    # Lines written between copytruncate's copy and its truncate exist nowhere any more:
    # a request sent in that instant may be missing for that reason alone, and is counted.
    races = [w.race for w in soak.windows if w.lost_bytes]
    epoch = started - t_mono0
    missing_set = set(missing)  # built once: a long run can miss thousands (quadratic before)
    lost_to_race = [
        o.request_id
        for o in delivered
        if o.request_id in missing_set
        and any(a - 1 <= o.started + epoch <= b + 1 for a, b in races)
    ]
    raced = set(lost_to_race)
    # A request that failed while Triton restarted may have died in a stopping server's gRPC
    # stack before any handler logged it (a timeout or a reset stream, not UNAVAILABLE): it is
    # counted, not held against the collector. An answered one must be stored, restart or not.
    restarts = [(w.start, w.end) for w in soak.windows if w.name == "triton_restart"]
    in_restart = [
        o.request_id
        for o in delivered
        if o.request_id in missing_set
        and o.request_id not in raced
        and o.status is not Status.OK
        and any(a <= o.started + epoch <= b for a, b in restarts)
    ]
    unsure = raced | set(in_restart)
    missing = [m for m in missing if m not in unsure]
    missing_set = set(missing)
    doubled = [
        o.request_id for o in delivered
        if prepared[(o.request_id, o.model)] > 1
        or soak.confirmed.get((o.request_id, o.model), (0, 0))[0] > 1
    ]  # fmt: skip

    # -- findings against the fault windows ---------------------------------------------------
    def overlaps(f, w: FaultWindow) -> bool:
        lo, hi = (w.start - 5) * 1e9, (max(w.end, w.start) + GRACE_S) * 1e9
        return f.first_seen_ns <= hi and f.last_seen_ns >= lo

    undelivered = {o.request_id for o in sent} - {o.request_id for o in delivered}
    refused = [
        w
        for w in soak.windows
        if w.finds and w.note
        and all(o.request_id in undelivered for o in sent if o.request_id.startswith(w.note))
    ]  # fmt: skip
    soak.notes += [f"{w.name}: its requests never reached Triton, nothing to find" for w in refused]
    expected = [w for w in soak.windows if w.finds and w not in refused]
    unfound = [
        f"{w.name} → {w.finds}"
        for w in expected
        if not any((f.kind, f.model) == w.finds and overlaps(f, w) for f in findings)
    ]
    loud = [f for f in findings if f.severity.value in ("warning", "critical")]
    stray = [
        f"{f.severity.value} {f.kind} · {f.model}: {f.summary[:120]}"
        for f in loud
        if not any(f.first_seen_ns <= (w.end + GRACE_S) * 1e9 and
                   f.first_seen_ns >= (w.start - 5) * 1e9 for w in soak.windows)
    ]  # fmt: skip

    # -- memory and exceptions ---------------------------------------------------------------
    # Memory: per cycle of the last collector incarnation, its peak. A leak grows the peak
    # cycle over cycle; one cycle (CI) can only show that the peak stays under RSS_BOUND_MIB.
    last_inc = max((inc for _, inc, _ in rss.samples), default=0)
    peaks: list[float] = []
    for _, inc, mib in rss.samples:
        if inc == last_inc:
            peaks.append(mib)
    rss_start, rss_end = (peaks[0], peaks[-1]) if peaks else (0.0, 0.0)
    per_cycle = [0.0] * cycles
    for t, inc, mib in rss.samples:
        c = min(int(t // CYCLE_S), cycles - 1)
        if inc == last_inc:
            per_cycle[c] = max(per_cycle[c], mib)
    ours = [line for line in collector_output.splitlines() if "Traceback" in line]
    exceptions = [e for blob in _log_texts(soak.lab.run_dir) for e in _exception_lines(blob)]
    unexpected = [e for e in exceptions if not e.startswith(_ALLOWED_EXCEPTIONS)]

    report = {
        "minutes": round((time.time() - started) / 60, 1),
        "cycles": cycles,
        "requests_sent": len(sent),
        "requests_delivered": len(delivered),
        "requests_missing_from_store": len(missing),
        "missing_sent_at_s": _spans_of(
            sorted(o.started - t_mono0 for o in delivered if o.request_id in missing_set)
        ),
        "requests_stored_twice": len(doubled),
        "requests_counted_during_run": len(soak.confirmed),
        "requests_removed_by_retention": removed_by_retention,
        "store_oldest_record_at_s": round(oldest_ns / 1e9 - started, 1) if oldest_ns else None,
        "ledger_checks": soak.ledger_checks,
        "store_bytes": {"curve": soak.store_sizes,
                        "per_request": round(soak.store_sizes[-1][1] / max(1, len(delivered)))
                        if soak.store_sizes else None},
        "lost_to_copytruncate_race": {
            "bytes": sum(w.lost_bytes for w in soak.windows),
            "requests": lost_to_race,
        },
        "fault_requests": [
            f"{o.request_id}: {o.status.value} after {o.latency_s:.1f} s {o.error[:80]}"
            for o in sent
            if not o.request_id.startswith("soak-load")
        ],
        "failed_during_restart_not_stored": [
            _told(o, t_mono0) for o in delivered if o.request_id in unsure - raced
        ],
        "missing_answers": [
            _told(o, t_mono0) for o in delivered if o.request_id in missing_set
        ][:10],
        "answers": Counter(
            f"{o.status.value}: {re.sub(r'[0-9]+', 'N', o.error[:90])}" for o in sent
        ).most_common(12),
        "faults_injected": Counter(w.name for w in soak.windows),
        "findings": sorted({f"{f.kind} · {f.model or '(server)'}" for f in findings}),
        "findings_expected_unfound": unfound,
        "findings_warning_or_above_outside_windows": stray,
        "otlp_spans_stored": otlp_spans,
        "trace_spans_stored": trace_spans,
        "rss_mib": {"start": round(rss_start, 1), "end": round(rss_end, 1),
                    "max": round(max(peaks, default=0.0), 1),
                    "peak_per_cycle": [round(p, 1) for p in per_cycle],
                    "curve": [(round(t), inc, round(m, 1)) for t, inc, m in rss.samples[::10]]},
        "collector_exit_code": exit_code,
        "collector_incarnations": soak.collector.incarnation,
        "tracebacks_in_triton_log": Counter(e.split(":")[0] for e in exceptions),
        "facts": soak.facts,
        "notes": soak.notes,
        "windows": [
            {**asdict(w), "at_s": round(w.start - started, 1), "until_s": round(w.end - started, 1)}
            for w in soak.windows
        ],
    }  # fmt: skip
    (ARTIFACTS / "report.json").write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({k: v for k, v in report.items() if k not in ("windows",)}, default=str))

    assert run_error is None, f"the run stopped early: {run_error}"
    assert len(delivered) > 100 * cycles, report
    assert not missing, (
        f"{len(missing)} delivered requests not in the store: {report['missing_answers']}"
    )
    assert not doubled, f"stored twice: {doubled[:10]}"
    assert not unfound, unfound
    assert not stray, stray
    assert not ours, ours[:5]
    assert not unexpected, unexpected[:5]
    assert exit_code == 0, collector_output[-2000:]
    assert soak.collector.incarnation == 3
    assert "store is full" in collector_output or not soak.disk.mounted
    for fact in soak.facts.get("disk_full", []):
        assert fact["collector_alive"] and fact["store_full_errors"] > 0, fact
        assert fact["resumed_s_after_release"] is not None, fact
    for fact in soak.facts.get("otlp_down", []):
        assert fact["requests_answered_meanwhile"] > 0, fact
        assert fact["spans_dropped"] > 0, fact
    assert max(peaks, default=0.0) < RSS_BOUND_MIB, report["rss_mib"]
    later = [p for p in per_cycle[1:] if p > 0]
    if later and per_cycle[0] > 0:  # flat: no cycle's peak 20% (+16 MiB) above the first's
        assert max(later) <= per_cycle[0] * 1.2 + 16, report["rss_mib"]
