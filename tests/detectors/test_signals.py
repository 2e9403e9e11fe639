"""What a window can and cannot show (``detectors/signals.py``) and the work in flight per model
and instance (``detectors/work.py``), on the real recordings: with ids and without, and the
faulty recording as a Triton without ``--log-verbose`` would have written it (its verbose
lines removed; a live Triton without the verbose log is in test_model_stalled.py).
"""

from __future__ import annotations

import dataclasses

from observability import events as ev
from observability.detectors import Window
from observability.detectors.signals import coverage
from observability.detectors.work import in_flight
from observability.report import work_rows
from observability.store import Store
from tests.detectors.conftest import window_of
from tests.detectors.recording import RecordedRun

VERBOSE_ONLY = (
    ev.RequestPrepared,
    ev.RequestStateChange,
    ev.InstanceExecuting,
    ev.InstanceReleased,
    ev.ResponseOutput,
    ev.FrontendRequest,
    ev.StreamRequestRead,
    ev.StreamResponse,
)
"""What Triton writes only at --log-verbose 1 (I-level lines that stay: load, errors, stubs)."""


def _events(run: RecordedRun, keep_log: bool = True) -> list[object]:
    with Store(run.store, readonly=True) as store:
        out: list[object] = []
        if keep_log:
            out += [r for r in store.log_records() if not isinstance(r, VERBOSE_ONLY)]
        out += list(store.metric_scrapes(0))
        out += list(store.scrapes())
        out += list(store.model_stats())
        out += list(store.otlp_spans())
    return out


def _quiet(run: RecordedRun, keep_log: bool = True) -> Window:
    """The recording as a Triton without the verbose log leaves it."""
    return Window(run.since_ns, run.until_ns, events=_events(run, keep_log))


def test_healthy_recording_has_every_signal(healthy_run: RecordedRun) -> None:
    cov = coverage(window_of(healthy_run))
    assert {s.name: s.state for s in cov.signals} == {
        "log": "present",
        "verbose_log": "present",
        "metrics": "present",
        "stats": "present",
        "library": "present",
        "request_ids": "present",
    }
    assert cov.blind == () and cov.lines() == []


def test_without_ids_the_window_says_so_and_stays_able_to_see_every_kind(
    faulty_none_run: RecordedRun,
) -> None:
    cov = coverage(window_of(faulty_none_run))
    assert cov.state("request_ids") == "missing"
    assert cov.blind == ()
    (line,) = cov.lines()
    assert "carry no request id" in line and "matched to callers by timing" in line


def test_without_the_verbose_log_the_log_detectors_are_named_blind(
    faulty_run: RecordedRun,
) -> None:
    cov = coverage(_quiet(faulty_run))
    assert cov.state("verbose_log") == "missing"  # requests were served: /metrics says so
    assert cov.state("log") == "present"
    for kind in ("bls_deadlock", "shape_growth"):
        assert kind in cov.blind
    for kind in ("model_stalled", "callback_error", "target_down", "stream_stalled"):
        assert kind not in cov.blind  # metrics, stub output, scrapes, the library
    assert "hung_request" not in cov.blind  # partly: a capacity lost at once, on /metrics
    assert "cold_start" not in cov.blind  # the load line and /metrics
    assert any("--log-verbose 1" in line for line in cov.lines())


def test_with_no_log_and_no_scrape_nothing_is_claimed(faulty_run: RecordedRun) -> None:
    only_spans = [e for e in _events(faulty_run, keep_log=False) if isinstance(e, ev.OtlpSpan)]
    cov = coverage(Window(faulty_run.since_ns, faulty_run.until_ns, events=only_spans))
    assert cov.state("metrics") == "missing" and cov.state("log") == "missing"
    assert {"hung_request", "model_stalled", "target_down", "callback_error"} <= set(cov.blind)


def test_a_quiet_log_read_is_a_log_not_a_missing_one() -> None:
    """A real capture taken under load of a Triton at --log-verbose 0 (cap_..._late_15s): its
    triton.log was read and is empty, as such a Triton writes nothing while nothing breaks.
    Stub tracebacks, load errors and crashes would have been written: those kinds are seen.
    The same events with no log read: every log-based kind is blind."""
    from tests.foreign.parsed import analysis, window

    name = "cap_doc_layout_hang_quiet_late_15s"
    cov = analysis(name).coverage
    assert cov is not None and cov.state("log") == "present"
    # Nothing completed in the window (the stall) and no request arrived: whether the log
    # would have had request lines cannot be told.
    assert cov.state("verbose_log") == "idle"
    assert not any("No log was read" in line for line in cov.lines())
    for kind in ("callback_error", "ensemble_fanout", "model_load_failed", "stub_unhealthy"):
        assert kind not in cov.blind
    unread = dataclasses.replace(window(name), log_read=False)
    assert unread.logs() == []
    assert {"callback_error", "ensemble_fanout"} <= set(coverage(unread).blind)


def test_an_idle_window_is_not_called_blind() -> None:
    """No request and no traffic: whether the log is verbose cannot be told, and no kind is
    called blind for it."""
    t0 = 1_790_000_000_000_000_000
    header = ev.LogRecord(t0, ev.LogLevel.INFO, "server.cc", 1, 0)
    events = [
        ev.ModelStateChange(header, "m", 1, "loaded"),
        ev.ScrapeStatus(t0, "metrics http://127.0.0.1:8002/metrics", True, 0.01),
    ]
    cov = coverage(Window(t0, t0 + 10**9, events=events))
    assert cov.state("verbose_log") == "idle"
    assert "hung_request" not in cov.blind


def test_work_without_ids_names_each_held_instance_and_the_queue(
    faulty_none_run: RecordedRun,
) -> None:
    work = {m.model: m for m in in_flight(window_of(faulty_none_run))}
    for model in ("router", "detector", "generate"):
        (held,) = work[model].busy
        assert held.batch == 1 and held.request_ids == () and held.age_s > 5
    # generate's self-call and the two requests behind it: the log and the gauge agree
    assert work["generate"].queued == 3 and work["generate"].pending == 3
    assert not work["classifier"].active
    rows = work_rows(list(work.values()))
    assert [r[0] for r in rows][:3] == ["router", "detector", "generate"]  # oldest first
    assert all("1 without id" in r[4] for r in rows)


def test_work_with_ids_names_the_requests(faulty_run: RecordedRun) -> None:
    work = {m.model: m for m in in_flight(window_of(faulty_run))}
    (held,) = work["router"].busy
    assert held.request_ids == ("demo-hang-0",)


def test_work_without_the_verbose_log_is_the_pending_gauge(faulty_run: RecordedRun) -> None:
    work = {m.model: m for m in in_flight(_quiet(faulty_run))}
    assert work["generate"].instances == () and work["generate"].queued is None
    assert work["generate"].pending == 3 and work["generate"].active


def test_healthy_recording_ends_with_nothing_stuck(healthy_run: RecordedRun) -> None:
    work = in_flight(window_of(healthy_run))
    assert all(m.oldest_s < 2.0 for m in work), [(m.model, m.oldest_s) for m in work]
