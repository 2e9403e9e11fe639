"""model_stalled: a real deadlock on a Triton without the verbose log, seen live by ``Watcher``
from /metrics and /v2/models/stats alone; the healthy twin is the same Triton and load with no
fault; on a Triton with the verbose log the same stall is left to the log-based detectors.

The rule's edges (a counter reset, a long execution with nothing queued, the stats as second
witness and fallback, deferral) are checked first on small event lists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from observability import events as ev
from observability.collect import CollectConfig
from observability.detectors import Window
from observability.detectors.model_stalled import (
    EXECUTIONS,
    PENDING,
    ModelStalled,
    ended_stalls,
    logged_models,
    stalls,
)
from observability.detectors.signals import Coverage
from observability.detectors.work import ModelWork
from observability.findings import Finding, Severity
from observability.lab import demo_repository
from observability.load.client import TritonClient
from observability.store import Store
from observability.watch import WatchConfig, Watcher
from tests.foreign.parsed import analysis, sliding_window

S = 1_000_000_000
T0 = 1_790_000_000 * S
TARGET = "metrics http://127.0.0.1:8002/metrics"


# -- the rule on event lists ------------------------------------------------------------
def _scrape(at_s: float, pending: float | None, executed: float | None, model: str = "m"):
    samples = []
    if pending is not None:
        samples.append(
            ev.MetricSample(PENDING, (("model", model), ("version", "1")), pending, PENDING)
        )
    if executed is not None:
        samples.append(
            ev.MetricSample(EXECUTIONS, (("model", model), ("version", "1")), executed, EXECUTIONS)
        )
    return ev.MetricsScrape(T0 + int(at_s * S), TARGET, tuple(samples))


def _stats(at_s: float, executions: int, model: str = "m", last_s: float = 0.0) -> ev.ModelStats:
    return ev.ModelStats(
        at_ns=T0 + int(at_s * S),
        model=model,
        version="1",
        last_inference_ms=(T0 + int(last_s * S)) // 1_000_000 if last_s else 0,
        inference_count=executions,
        execution_count=executions,
        success_count=executions,
        success_ns=0,
        fail_count=0,
        fail_ns=0,
        queue_count=executions,
        queue_ns=0,
        compute_input_ns=0,
        compute_infer_ns=executions * 5_000_000,
        compute_output_ns=0,
    )


def _window(events: list[object], until_s: float = 30.0) -> Window:
    return Window(T0, T0 + int(until_s * S), events=events)


def _detect(events: list[object], **settings: object) -> list[Finding]:
    return ModelStalled(**{"deadline_s": 3.0, **settings}).detect(_window(events))  # type: ignore[arg-type]


def _series(
    pending: list[float], executed: list[float], step_s: float = 1.0, model: str = "m"
) -> list[object]:
    return [
        _scrape(i * step_s, p, e, model)
        for i, (p, e) in enumerate(zip(pending, executed, strict=True))
    ]


def test_queued_and_no_execution_past_the_deadline_is_a_stall() -> None:
    events = _series([0, 0, 2, 2, 3, 3, 3, 3], [5, 6, 6, 6, 6, 6, 6, 6])
    found = _detect(events)
    assert [f.model for f in found] == ["m"]
    f = found[0]
    assert f.severity is Severity.CRITICAL
    assert "3 requests queued" in f.summary and "--log-verbose 1" in f.summary
    assert f.first_seen_ns == T0 + 2 * S  # the first scrape of the queue, not the idle before
    assert {e.source for e in f.evidence} == {"metrics"}
    refs = " ".join(e.ref for e in f.evidence)
    assert PENDING in refs and EXECUTIONS in refs


def test_not_yet_past_the_deadline_and_per_model_override() -> None:
    events = _series([1, 1, 1, 1], [6, 6, 6, 6])  # 3 s: not more than the deadline
    assert _detect(events) == []
    assert [f.model for f in _detect(events, deadlines={"m": 2.0})] == ["m"]
    assert _detect(_series([1] * 8, [6] * 8), deadlines={"m": 20.0}) == []


def test_healthy_twin_a_busy_model_that_keeps_executing_is_not_stalled() -> None:
    events = _series([4, 6, 5, 7, 6, 5, 6, 4], [10, 14, 18, 22, 26, 30, 34, 38])
    assert _detect(events) == []


def test_a_long_execution_with_nothing_queued_and_an_idle_model_are_not_stalls() -> None:
    assert _detect(_series([0] * 10, [3] * 10)) == []
    # Queued only for the last 2 s after an hour idle: the clock starts at the queue.
    assert _detect(_series([0] * 8 + [1, 1, 1], [3] * 11)) == []


def test_a_stall_that_ended_is_a_warning_with_its_start_and_end() -> None:
    # img_preprocess_hang_quiet's shape: queued and no execution for 6 s, then it moved on.
    events = _series([0, 1, 2, 3, 4, 4, 4, 4, 2, 0, 0], [5, 6, 6, 6, 6, 6, 6, 6, 9, 12, 12])
    (f,) = _detect(events)
    assert f.severity is Severity.WARNING
    assert "stalled for 6.0 s and then went on" in f.summary and "at most 4" in f.summary
    assert "execution count moved again" in f.summary
    assert (f.first_seen_ns, f.last_seen_ns) == (T0 + S, T0 + 8 * S)
    # A queue that empties with no execution (its requests timed out) ends it too.
    (g,) = _detect(_series([0, 2, 2, 2, 2, 2, 0, 0], [5] * 8))
    assert "its queue emptied with no execution" in g.summary
    # Not past the deadline, or executing all along: nothing.
    assert _detect(_series([0, 1, 1, 1, 0, 0], [5, 5, 5, 5, 6, 6])) == []
    assert _detect(_series([0, 4, 6, 5, 7, 0], [5, 9, 13, 17, 21, 25])) == []
    # Still stalled at the last scrape: the critical finding, not an ended one.
    trailing = _series([0, 1, 1, 1, 1, 1, 1], [5] * 7)
    pend = [(TARGET, e.at_ns, s) for e in trailing for s in e.samples if s.name == PENDING]  # type: ignore[attr-defined]
    done = [(TARGET, e.at_ns, s) for e in trailing for s in e.samples if s.name == EXECUTIONS]  # type: ignore[attr-defined]
    assert ended_stalls(pend, done) == []
    assert [f.severity for f in _detect(trailing)] == [Severity.CRITICAL]


def test_a_stall_that_ended_on_a_real_triton_is_told_from_metrics_alone() -> None:
    """img_preprocess_hang_quiet (tests/fixtures/foreign, --log-verbose 0): a wedged
    img_preprocess batch held calls of both img_gateway instances for 18 s, until the
    gateway's own 20 s guard answered them with errors."""
    found = [f for f in analysis("img_preprocess_hang_quiet").findings if f.severity.rank]
    assert [(f.kind, f.model, f.severity) for f in found] == [
        ("model_stalled", "img_gateway", Severity.WARNING)
    ]
    assert "stalled for 18.0 s and then went on" in found[0].summary
    healthy = [f for f in analysis("img_healthy_surge").findings if f.severity.rank]
    assert healthy == []


def test_a_counter_reset_restarts_the_clock() -> None:
    # Triton restarted at 5 s: the counter drops 40 -> 0 and requests queue while it loads.
    events = _series([1, 1, 1, 1, 1, 1, 1, 1], [40, 40, 40, 40, 40, 0, 0, 0])
    assert _detect(events) == []  # 2 s since the reset, not 7 s since the last increase
    assert stalls(
        [(TARGET, e.at_ns, s) for e in events for s in e.samples if s.name == PENDING],  # type: ignore[attr-defined]
        [(TARGET, e.at_ns, s) for e in events for s in e.samples if s.name == EXECUTIONS],  # type: ignore[attr-defined]
    )[0].reset


def test_stats_veto_and_stand_in_for_the_counter() -> None:
    # The stats saw executions end during the supposed stall: not stalled.
    events = _series([2] * 8, [6] * 8) + [_stats(i, 6 + i) for i in range(8)]
    assert _detect(events) == []
    # No nv_inference_exec_count on the page: the stats' execution_count stands in.
    events = [_scrape(i, 2, None) for i in range(8)] + [_stats(i, 6, last_s=0.5) for i in range(8)]
    found = _detect(events)
    assert [f.model for f in found] == ["m"]
    assert {e.source for e in found[0].evidence} == {"metrics", "stats"}
    assert "since" in found[0].summary
    # Stats alone cannot see a queue: no /metrics, no finding.
    assert _detect([_stats(i, 6) for i in range(8)]) == []


def test_deferral_to_the_verbose_log() -> None:
    header = ev.LogRecord(T0 + S, ev.LogLevel.INFO, "python_be.cc", 1310, 100)
    logged = ev.InstanceExecuting(header, "m", "m_0_0", 1)
    events = _series([2] * 8, [6] * 8)
    assert _detect([*events, logged]) == []
    other = ev.InstanceExecuting(header, "other", "other_0_0", 1)
    assert [f.model for f in _detect([*events, other])] == ["m"]
    released = ev.InstanceReleased(header, "m_0_0", 1)
    assert logged_models(_window([released])) == {"m"}


def test_one_finding_per_model_and_versions_summed() -> None:
    v1 = [(("model", "m"), ("version", "1")), (("model", "m"), ("version", "2"))]
    events = [
        ev.MetricsScrape(
            T0 + i * S,
            TARGET,
            tuple(ev.MetricSample(PENDING, lab, 1, PENDING) for lab in v1)
            + tuple(ev.MetricSample(EXECUTIONS, lab, 3, EXECUTIONS) for lab in v1),
        )
        for i in range(8)
    ]
    found = _detect(events)
    assert len(found) == 1 and "2 requests queued" in found[0].summary


# -- a real Triton --------------------------------------------------------------------
DEADLINE_S = 3.0
GENERATE_INPUTS = {
    "PROMPT_IDS": np.array([1, 2, 3], dtype=np.int64),
    "MAX_TOKENS": np.array([4], dtype=np.int32),
}
ROUTER_INPUTS = {"RAW": np.linspace(0, 1, 32, dtype=np.float32)}


@dataclass
class Watched:
    findings: list[tuple[float, Finding]] = field(default_factory=list)
    """``(time.time() when watch reported it, finding)``."""
    sent_at: float | None = None
    """``time.time()`` just before the stalling request was sent."""
    store: Path | None = None
    since_ns: int = 0
    until_ns: int = 0
    passes: list[tuple[Coverage | None, list[ModelWork]]] = field(default_factory=list)
    """What ``watch`` said of its signals and of the work in flight, pass by pass."""

    def first(self, kind: str, model: str) -> tuple[float, Finding] | None:
        return next(((t, f) for t, f in self.findings if f.kind == kind and f.model == model), None)


class _Load:
    """Healthy background load: generate and router, one request at a time, bounded."""

    def __init__(self, url: str, max_requests: int = 400, max_s: float = 60.0) -> None:
        self.url, self.max_requests, self.max_s = url, max_requests, max_s
        self.stop = threading.Event()
        self.stop_generate = threading.Event()
        """Set: only router requests from then on (a stalled generate must stay stalled)."""
        self.outcomes: list[object] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        client = TritonClient(self.url, 10.0)
        end = time.monotonic() + self.max_s
        try:
            for i in range(self.max_requests):
                if self.stop.is_set() or time.monotonic() > end:
                    break
                model, inputs = ("router", ROUTER_INPUTS) if i % 2 else ("generate", None)
                if model == "generate" and self.stop_generate.is_set():
                    continue
                self.outcomes.append(client.infer(model, inputs or GENERATE_INPUTS, f"load-{i}"))
                time.sleep(0.05)
        finally:
            client.close()

    def __enter__(self) -> _Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=20)


def _watch(
    lab: object,
    store: Path,
    act: Callable[[Watched], None],
    done: Callable[[Watched], bool],
    max_s: float,
) -> Watched:
    """Run the real ``Watcher`` on the lab while ``act`` drives Triton; stop when ``done`` or
    after ``max_s``."""
    watched = Watched(store=store)
    watcher = Watcher(
        WatchConfig(
            collect=CollectConfig(
                store=store,
                url=lab.http_url,  # type: ignore[attr-defined]
                metrics_url=lab.metrics_url,  # type: ignore[attr-defined]
                log=lab.log_path,  # type: ignore[attr-defined]
                interval_s=0.5,
            ),
            detect_interval_s=0.5,
            settings={"deadline_s": DEADLINE_S},
        )
    )
    on_new = lambda f: watched.findings.append((time.time(), f))  # noqa: E731
    on_pass = lambda w: watched.passes.append((w.coverage, w.work))  # noqa: E731
    thread = threading.Thread(
        target=watcher.run,
        kwargs={"duration_s": max_s + 30, "on_new": on_new, "on_pass": on_pass},
        daemon=True,
    )
    watched.since_ns = time.time_ns()
    thread.start()
    try:
        time.sleep(2.0)  # a few scrapes of the idle-but-healthy state first
        act(watched)
        end = time.monotonic() + max_s
        while time.monotonic() < end and not done(watched):
            time.sleep(0.1)
    finally:
        watcher.stop()
        thread.join(timeout=30)
        watched.until_ns = time.time_ns()
    return watched


def _stall_generate(lab: object, watched: Watched) -> list[threading.Thread]:
    """generate (1 instance) calls itself: its BLS child queues behind it; 3 more queue too."""

    def send(rid: str, params: dict[str, str] | None) -> None:
        client = TritonClient(lab.grpc_url, 40.0)  # type: ignore[attr-defined]
        try:
            if params:
                watched.sent_at = time.time()
            client.infer("generate", GENERATE_INPUTS, rid, parameters=params)
        finally:
            client.close()

    threads = [
        threading.Thread(
            target=send, args=("stall", {"fault": "deadlock", "deadlock_s": "30"}), daemon=True
        )
    ]
    threads[0].start()
    time.sleep(0.2)
    for i in range(3):
        threads.append(threading.Thread(target=send, args=(f"behind-{i}", None), daemon=True))
        threads[-1].start()
    return threads


@pytest.fixture(scope="module")
def quiet_lab(lab_factory: Callable[..., object]) -> Iterator[object]:
    """The demo on a Triton started without --log-verbose (and without traces)."""
    lab = lab_factory(
        demo_repository(), name="model-stalled", log_verbose=0, trace=False, exit_timeout_s=5
    )
    yield lab
    lab.stop()  # type: ignore[attr-defined]  # the stalled request would hold it 30 s more


@pytest.fixture(scope="module")
def healthy(quiet_lab: object, tmp_path_factory: pytest.TempPathFactory) -> Watched:
    """The healthy twin: 10 s of generate and router load, no fault."""

    def act(w: Watched) -> None:
        with _Load(quiet_lab.grpc_url, max_s=10.0) as load:  # type: ignore[attr-defined]
            load.thread.join(timeout=15)
        assert len(load.outcomes) > 20

    return _watch(quiet_lab, tmp_path_factory.mktemp("healthy") / "store.db", act,
                  lambda w: False, max_s=2.0)  # fmt: skip


@pytest.fixture(scope="module")
def stalled(
    quiet_lab: object, healthy: Watched, tmp_path_factory: pytest.TempPathFactory
) -> Watched:
    """The same Triton and load; then generate deadlocks itself (after the twin: it leaves
    generate held for 30 s)."""
    threads: list[threading.Thread] = []
    load = _Load(quiet_lab.grpc_url, max_s=30.0)  # type: ignore[attr-defined]

    def act(w: Watched) -> None:
        load.__enter__()
        time.sleep(2.0)
        load.stop_generate.set()  # from now on only the stall and its three queue at generate
        time.sleep(0.2)
        threads.extend(_stall_generate(quiet_lab, w))

    try:
        return _watch(
            quiet_lab,
            tmp_path_factory.mktemp("stalled") / "store.db",
            act,
            lambda w: w.first("model_stalled", "generate") is not None,
            max_s=DEADLINE_S + 15,
        )
    finally:
        load.__exit__()


@pytest.mark.lab
def test_healthy_twin_no_stall_and_nothing_above_info(healthy: Watched) -> None:
    assert not [f for _, f in healthy.findings if f.kind == "model_stalled"]
    loud = [f.to_dict() for _, f in healthy.findings if f.severity.rank >= Severity.WARNING.rank]
    assert loud == []


@pytest.mark.lab
def test_watch_finds_the_stalled_model_within_deadline_plus_2s(stalled: Watched) -> None:
    seen = stalled.first("model_stalled", "generate")
    assert seen is not None, [f.to_dict() for _, f in stalled.findings]
    at, finding = seen
    assert stalled.sent_at is not None
    delay = at - stalled.sent_at
    print(f"model_stalled detection delay: {delay:.2f} s (deadline {DEADLINE_S:g} s)")
    assert delay <= DEADLINE_S + 2.0, delay
    assert finding.severity is Severity.CRITICAL
    assert "4 requests queued" in finding.summary  # the BLS child and the three behind it
    assert "--log-verbose 1" in finding.summary
    assert {e.source for e in finding.evidence} == {"metrics", "stats"}
    others = {f.model for _, f in stalled.findings if f.kind == "model_stalled"}
    assert others == {"generate"}


@pytest.mark.lab
def test_watch_says_what_it_cannot_see_and_what_is_in_flight(stalled: Watched) -> None:
    """Without the verbose log, watch names the kinds it is blind to (it never calls the
    window healthy) and still shows the work queued at generate from the pending gauge."""
    cov, work = stalled.passes[-1]
    assert cov is not None
    assert cov.state("verbose_log") == "missing" and cov.state("metrics") == "present"
    assert {"bls_deadlock", "shape_growth"} <= set(cov.blind)
    assert "model_stalled" not in cov.blind
    assert "hung_request" not in cov.blind  # partly: capacity lost at once, on /metrics
    generate = next(m for m in work if m.model == "generate")
    assert generate.pending is not None and generate.pending >= 4 and generate.active
    assert generate.queued is None  # no instance lines: the gauge is the witness


@pytest.mark.lab
def test_healthy_twin_is_not_called_healthy_without_the_verbose_log(healthy: Watched) -> None:
    said = [cov for cov, _ in healthy.passes if cov is not None]
    assert said and "bls_deadlock" in said[-1].blind


@pytest.mark.lab
def test_analyze_of_the_store_finds_it_too(stalled: Watched) -> None:
    """The same rule offline, over what watch stored (``analyze`` reads a store the same way)."""
    from observability.analyze import analyze_store

    assert stalled.store is not None
    with Store(stalled.store, readonly=True) as store:
        found = analyze_store(
            store, stalled.since_ns, stalled.until_ns, deadline_s=DEADLINE_S
        ).findings
    assert [f.model for f in found if f.kind == "model_stalled"] == ["generate"]


@pytest.mark.lab
def test_with_the_verbose_log_the_stall_is_left_to_the_log_detectors(
    lab_factory: Callable[..., object],
    quiet_lab: object,
    stalled: Watched,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    quiet_lab.stop()  # type: ignore[attr-defined]  # one Triton at a time
    lab = lab_factory(
        demo_repository(), name="model-stalled-verbose", log_verbose=1, trace=False,
        exit_timeout_s=5,
    )  # fmt: skip
    try:
        started = time.monotonic()
        watched = _watch(
            lab,
            tmp_path_factory.mktemp("verbose") / "store.db",
            lambda w: _stall_generate(lab, w) and None,
            lambda w: time.monotonic() - started > DEADLINE_S + 8,
            max_s=DEADLINE_S + 10,
        )
    finally:
        lab.stop()  # type: ignore[attr-defined]
    assert not [f.to_dict() for _, f in watched.findings if f.kind == "model_stalled"]
    assert watched.store is not None
    with Store(watched.store, readonly=True) as store:
        window = Window(watched.since_ns, watched.until_ns, store=store)
        # Silent because it deferred, not because it saw no stall:
        assert "generate" in logged_models(window)
        found = stalls(window.samples(PENDING), window.samples(EXECUTIONS), window.model_stats)
        assert any(s.model == "generate" and s.seconds > DEADLINE_S for s in found)


# -- the shutdown drain (any verbosity) -------------------------------------------------------
def _drain(at_s: float, count: int, model: str = "m") -> ev.ExitInflight:
    header = ev.LogRecord(T0 + int(at_s * S), ev.LogLevel.INFO, "server.cc", 325, int(at_s * 100))
    return ev.ExitInflight(header, model, 1, count)


def test_a_drain_that_never_goes_down_is_a_stall_and_one_that_drains_is_not() -> None:
    """server#6239 (tests/fixtures/wild/34-*): 71 and 35 in-flight inferences unchanged
    through the exit timeout's countdown. A healthy shutdown's count goes down to 0."""
    stuck = [_drain(t, 35) for t in range(0, 12)]
    (found,) = _detect(stuck)
    assert found.model == "m" and found.severity is Severity.CRITICAL
    assert "35 in-flight inferences did not go down for 11 s" in found.summary
    (early,) = _detect(stuck[:3])
    assert early.severity is Severity.WARNING  # the log stops before the deadline
    assert _detect([_drain(0, 5), _drain(1, 3), _drain(2, 1)]) == []
    assert _detect([_drain(0, 5), _drain(1, 5), _drain(2, 0)]) == []
    assert _detect([_drain(0, 5)]) == []  # one line says nothing of progress


def test_a_log_that_begins_after_the_stall_is_not_called_missing() -> None:
    """cap_doc_layout_hang_late: the capture's copy of a verbose log began 20 s into the
    hang, so it holds requests but no line of the stuck batch; the finding says that, not
    that the verbose log is off."""
    found = [f for f in analysis("cap_doc_layout_hang_late").findings if f.kind == "model_stalled"]
    assert {f.model for f in found} == {"doc_layout", "doc_router"}
    assert all("begins after the stall did" in f.summary for f in found)
    quiet = [
        f for f in analysis("cap_doc_layout_hang_quiet_15s").findings if f.kind == "model_stalled"
    ]
    assert all("--log-verbose 1" in f.summary for f in quiet)


def test_a_model_that_never_ran_since_its_load_is_not_called_late_logged() -> None:
    """rl_default_pool_deadlock: the log runs from the server's start and rl_score, queued
    behind the rate limiter's one copy of its resource, never executed. The finding said the
    log began after the stall did; it says its requests wait for something other than its
    instances."""
    (found,) = [
        f
        for f in analysis("rl_default_pool_deadlock").findings
        if f.kind == "model_stalled" and f.model == "rl_score"
    ]
    assert "runs from its load and no batch of it ever started" in found.summary
    assert "begins after the stall did" not in found.summary


def test_a_watch_window_past_the_models_last_batch_does_not_say_the_log_began_late() -> None:
    """rl_resource_deadlock, ``watch`` 36 s in with 20 s of evidence: rl_score's batches and
    its load have left the window, the log has not (the rate limiter's pool line, its
    requests). The finding said the log began after the stall did."""
    (found,) = [
        f
        for f in ModelStalled().detect(sliding_window("rl_resource_deadlock", 36))
        if f.model == "rl_score"
    ]
    assert "runs from before the stall and has no batch of it" in found.summary
    assert "begins after the stall did" not in found.summary
