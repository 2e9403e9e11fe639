"""The live window ``watch`` detects over, checked against the store-backed window on the
recorded fault run (``faulty_run``: a real lab Triton, see tests/detectors/recording.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from observability import events as ev
from observability.analyze import _time_of, analyze_bundle
from observability.collect import CollectConfig
from observability.detectors import Window, run_detectors
from observability.detectors.live import LiveWindow
from observability.detectors.registry import default_detectors
from observability.findings import Finding
from observability.store import Store
from observability.watch import WatchConfig, Watcher
from tests.detectors.recording import BLS_DEADLINE_S, RecordedRun
from tests.foreign.parsed import _archive as foreign_archive
from tests.foreign.parsed import window as foreign_window

HOUR_S = 3600.0
Key = tuple[str, str, str, str]


def _keys(findings: list[Finding]) -> set[Key]:
    return {(f.kind, f.model, f.request_id or "", f.severity.value) for f in findings}


def _detect(window: Window) -> set[Key]:
    return _keys(run_detectors(default_detectors(deadline_s=BLS_DEADLINE_S), window))


@pytest.fixture(scope="module")
def reference(faulty_run: RecordedRun) -> set[Key]:
    with Store(faulty_run.store, readonly=True) as store:
        found = _detect(Window(since_ns=0, until_ns=faulty_run.until_ns, store=store))
    assert {k[0] for k in found} >= {"hung_request", "bls_deadlock", "cold_start"}
    return found


def _tapped(store: Store) -> list[tuple[str, list[object]]]:
    """What the collector hands ``on_stored``: batches of one source, in file order."""
    rows = list(store.log_rows(0))
    batches = [
        (rows[i][0], [rec for _, rec in rows[i : i + 400]]) for i in range(0, len(rows), 400)
    ]
    batches.append(("", list(store.otlp_spans())))
    batches.append(("", list(store.metric_scrapes(0))))
    batches.append(("", list(store.scrapes())))
    batches.append(("", list(store.model_stats())))
    return batches


def test_primed_from_the_store_it_finds_what_the_store_window_finds(
    faulty_run: RecordedRun, reference: set[Key]
) -> None:
    live = LiveWindow(evidence_s=HOUR_S, lookback_s=HOUR_S)
    with Store(faulty_run.store, readonly=True) as store:
        live.prime(store, faulty_run.until_ns)
    assert _detect(live.window(faulty_run.until_ns)) == reference
    assert live.stats.carried == 0 and live.stats.records == live.stats.primed


def test_fed_batch_by_batch_with_replays_it_finds_the_same(
    faulty_run: RecordedRun, reference: set[Key]
) -> None:
    live = LiveWindow(evidence_s=HOUR_S, lookback_s=HOUR_S)
    with Store(faulty_run.store, readonly=True) as store:
        batches = _tapped(store)
    half = len(batches) // 2
    for source, events in batches[:half]:
        live.add(source, events)
    live.window(faulty_run.until_ns)  # a pass in between
    replayed = sum(len(events) for _, events in batches[half - 3 : half])
    for source, events in batches[half - 3 :]:  # a restarted reader sends three batches again
        live.add(source, events)
    assert _detect(live.window(faulty_run.until_ns)) == reference
    assert live.stats.duplicates == replayed


def test_a_short_evidence_window_keeps_open_requests_and_invents_nothing(
    faulty_run: RecordedRun, reference: set[Key]
) -> None:
    """5 s of evidence at the end of the run: the hang and the deadlock began ~10-25 s before;
    they are still open, so their requests are carried and still found. Whatever else is
    found must be in the full window's findings: cutting history must not make a finding."""
    live = LiveWindow(evidence_s=5, lookback_s=HOUR_S)
    with Store(faulty_run.store, readonly=True) as store:
        live.prime(store, faulty_run.until_ns)
    window = live.window(faulty_run.until_ns)
    found = _detect(window)
    assert live.stats.carried > 0
    assert found <= reference, found - reference
    assert {(k[0], k[1]) for k in found} >= {
        ("hung_request", "router"),
        ("hung_request", "generate"),
        ("bls_deadlock", "generate"),
    }
    # The same when the records came through the tap and were cut by later passes.
    tapped = LiveWindow(evidence_s=5, lookback_s=HOUR_S)
    with Store(faulty_run.store, readonly=True) as store:
        for source, events in _tapped(store):
            tapped.add(source, events)
    mid = (faulty_run.since_ns + faulty_run.until_ns) // 2
    tapped.window(mid)
    assert _detect(tapped.window(faulty_run.until_ns)) == found


def test_nothing_but_the_setup_is_carried_past_the_lookback(faulty_run: RecordedRun) -> None:
    live = LiveWindow(evidence_s=5, lookback_s=10)
    with Store(faulty_run.store, readonly=True) as store:
        live.prime(store, faulty_run.until_ns)
        configs = {c.model for _, c in store.setup_lines() if isinstance(c, ev.ModelConfig)}
    later = faulty_run.until_ns + 11 * 10**9
    window = live.window(later)
    assert configs, "the demo's python models logged their configs at load"
    assert all(isinstance(r, ev.ModelConfig) for r in window.logs())
    assert {c.model for c in window.logs(ev.ModelConfig)} == configs
    assert live.stats.records == len(configs)
    assert _detect(window) == set()


def test_over_its_cap_it_drops_the_oldest(faulty_run: RecordedRun) -> None:
    live = LiveWindow(evidence_s=HOUR_S, lookback_s=HOUR_S, max_records=1000)
    with Store(faulty_run.store, readonly=True) as store:
        live.prime(store, faulty_run.until_ns)
    window = live.window(faulty_run.until_ns)
    assert live.stats.records == 1000 and live.stats.dropped_over_cap == live.stats.primed - 1000
    times = [getattr(getattr(r, "header", r), "at_ns", 0) for r in window.logs()]
    assert times == sorted(times) and times[0] >= window.since_ns
    # The oldest records of all, the configs logged at load, are the last to go.
    assert window.logs(ev.ModelConfig) and times[0] == window.logs(ev.ModelConfig)[0].header.at_ns


def test_watch_keeps_aged_out_findings_active_until_the_lookback(
    faulty_run: RecordedRun, reference: set[Key], tmp_path: Path
) -> None:
    """A finding whose evidence left the window was not seen to resolve: it stays active
    until ``lookback_s`` after it was last seen, then resolves."""
    store = tmp_path / "store.db"
    shutil.copy(faulty_run.store, store)
    watcher = Watcher(
        WatchConfig(
            collect=CollectConfig(store=store),
            evidence_s=5,
            lookback_s=60,
            settings={"deadline_s": BLS_DEADLINE_S},
        )
    )
    # The recording's whole story is read once (as a watch started on this store would),
    # then the clock moves on with no new records.
    watcher.live.evidence_ns = int(HOUR_S * 1e9)
    first = watcher.detect_once(faulty_run.until_ns)
    assert _keys(first) == reference
    watcher.live.evidence_ns = 5 * 10**9

    def active() -> set[Key]:
        with Store(store, readonly=True) as reader:
            return _keys(reader.findings(active_only=True))

    assert active() == reference
    # (Requests in flight when the recording stopped look hung by now: they may add findings.)
    watcher.detect_once(faulty_run.until_ns + 30 * 10**9)
    assert reference <= active()  # aged out, not resolved
    watcher.detect_once(faulty_run.until_ns + 200 * 10**9)
    assert active() == set()


def _fed(
    name: str, evidence_s: float, lookback_s: float = HOUR_S, drop: int | None = None
) -> Window:
    """Foreign recording ``name``'s events through ``LiveWindow.add`` in the collector's
    batches, the window taken at its last event: what ``watch`` detects over then. ``drop``:
    the index of an event the tap never gets (a line lost to a rotation)."""
    events = list(foreign_window(name).events)
    if drop is not None:
        del events[drop]
    live = LiveWindow(evidence_s=evidence_s, lookback_s=lookback_s)
    until = foreign_window(name).until_ns
    for i in range(0, len(events), 400):
        live.add("triton.log", events[i : i + 400])
        live.window(min(until, _time_of(events[min(i + 399, len(events) - 1)])))
    return live.window(until)


@pytest.mark.parametrize(
    ("name", "evidence_s", "kind", "model"),
    [
        ("vid_detect_wrong_dtype", 5, "output_contract", "vid_detect"),
        ("dq_child_hang_in_batch", 5, "hung_request", "dq_rank"),
        # 30 s: the deadlock's cycle is read from calls learned in the window (5 s has none).
        ("rl_resource_deadlock", 30, "bls_deadlock", "rl_router"),
    ],
)
def test_the_servers_setup_outlives_the_evidence_window(
    name: str, evidence_s: float, kind: str, model: str
) -> None:
    """Triton logs a model's config and the rate limiter's pool once, at load; ``watch`` runs
    for days. A window of a few seconds of evidence, taken 15 s or more after the load, must
    still know them: the breach of a declared output type, the responses held by
    preserve_ordering and a deadlock through the limiter's pool are judged against them (all
    three were lost with those lines after the evidence window)."""
    window = _fed(name, evidence_s)
    setup = window.logs(ev.ModelConfig, ev.RateLimiterPool)
    assert setup and max(_time_of(e) for e in setup) < window.until_ns - 15 * 10**9
    found = run_detectors(default_detectors(), window)
    assert (kind, model) in {(f.kind, f.model) for f in found if f.severity.rank}


@pytest.mark.parametrize(
    ("name", "lookback_s", "kind", "model"),
    [
        ("dq_child_hang_in_batch", HOUR_S, "hung_request", "dq_rank"),
        # A lookback shorter than the time since the load: the config is the setup table's.
        ("vid_detect_wrong_dtype", 10, "output_contract", "vid_detect"),
    ],
)
def test_a_restarted_watch_finds_the_setup_in_the_store(
    tmp_path: Path, name: str, lookback_s: float, kind: str, model: str
) -> None:
    """``prime`` on a store: the configs logged at load, older than the evidence window (and
    than the lookback), come back with the evidence, and so do the batches still running."""
    path = tmp_path / "store.db"
    analyze_bundle(foreign_archive(name), store_path=path)
    live = LiveWindow(evidence_s=5, lookback_s=lookback_s)
    until = foreign_window(name).until_ns
    with Store(path, readonly=True) as store:
        live.prime(store, until)
    window = live.window(until)
    loaded = window.logs(ev.ModelConfig)
    assert model in {c.model for c in loaded}
    assert (
        min(c.header.at_ns for c in loaded) < until - (lookback_s if lookback_s < 60 else 15) * 1e9
    )
    found = run_detectors(default_detectors(), window)
    assert (kind, model) in {(f.kind, f.model) for f in found}


def test_batches_a_crash_ended_are_not_read_as_hung_once_the_crash_line_is_old() -> None:
    """tts_queue_full: tritonserver crashed (SIGSEGV) with batches in flight; the tap carries
    their executing lines as busy. With the crash's line dropped as old, they read as three
    hung models on a server that was gone."""
    window = _fed("tts_queue_full", 5)
    found = {
        (f.kind, f.model) for f in run_detectors(default_detectors(), window) if f.severity.rank
    }
    assert found == {("target_down", "")}


def test_a_batch_hung_under_a_name_another_version_keeps_using_is_carried() -> None:
    """st_sequence_hang: sess_tracker versions 1 and 2 are served at once and both run an
    instance named sess_tracker_0_1; version 1's batch there hangs while version 2's batches
    under the same name come and go. The window carried only each name's last line, a
    release: the hung batch was gone 5 s after it began."""
    window = _fed("st_sequence_hang", 5)
    found = {
        (f.kind, f.model) for f in run_detectors(default_detectors(), window) if f.severity.rank
    }
    assert ("hung_request", "sess_tracker") in found


def _fed_short(name: str, drop: int | None = None, evidence_s: float = 5) -> Window:
    """``name`` through the tap with a 10 s lookback: a ``watch`` that has run far longer than
    its lookback since the fault began."""
    return _fed(name, evidence_s, lookback_s=10, drop=drop)


@pytest.mark.parametrize(
    ("name", "model"),
    [("vis_step_hang", "vis_embed"), ("zoo_router_child_hangs", "zoo_router")],
)
def test_a_batch_still_stuck_past_the_lookback_stays_found(name: str, model: str) -> None:
    """The batch that never ends began 20 s and more before the recording's end: with a 10 s
    lookback its line was dropped, and ``watch`` let the finding resolve while the model was
    still stuck (a hang overnight resolved its alert after twice the lookback). A batch line
    that is its instance's last, with nothing reloaded or crashed since, is carried while its
    server keeps logging."""
    found = run_detectors(default_detectors(), _fed_short(name))
    assert ("hung_request", model) in {(f.kind, f.model) for f in found if f.severity.rank}


def test_a_load_still_stuck_past_the_lookback_is_carried() -> None:
    """kws_classifier_load_hangs: the reload's ``loading`` line stays while the load has not
    ended (``model_load_stuck`` then waits its ``unknown_s``: the earlier load that set the
    model's own bar is gone with the lookback)."""
    window = _fed_short("kws_classifier_load_hangs")
    loads = [e for e in window.logs(ev.ModelStateChange) if e.model == "kws_classifier"]
    assert [e.state for e in loads] == ["loading"]
    assert loads[0].header.at_ns < window.until_ns - 10 * 10**9


def test_a_healthy_pipeline_past_the_lookback_carries_nothing_stuck() -> None:
    window = _fed_short("vis_healthy")
    assert not [f for f in run_detectors(default_detectors(), window) if f.severity.rank]
    assert not [e for e in window.logs() if e.header.at_ns < window.until_ns - 10 * 10**9
                and not isinstance(e, ev.ModelConfig | ev.RateLimiterPool)]  # fmt: skip


def test_a_batch_whose_release_was_lost_is_not_carried_once_its_instance_ran_again() -> None:
    """zoo_healthy with the release of zoo_fraud_lite's batch 14 s before the end lost (as a
    log rotation can lose a line): the instance ran one more batch 5 s later, then nothing.
    With 2 s of evidence that batch's lines are gone before the lost one is 10 s old, but
    that the instance ran after it is remembered: the lost release is no hang, and the batch
    is not carried past the lookback."""
    events = foreign_window("zoo_healthy").events
    lost = [
        i
        for i, e in enumerate(events)
        if isinstance(e, ev.InstanceReleased) and e.instance == "zoo_fraud_lite_0_0"
    ][-2]
    window = _fed_short("zoo_healthy", drop=lost, evidence_s=2)
    assert not [f for f in run_detectors(default_detectors(), window) if f.severity.rank]
    assert not [e for e in window.logs(ev.InstanceExecuting) if e.model == "zoo_fraud_lite"]


def _watched(name: str, store: Path) -> set[tuple[str, str]]:
    """``watch`` over recording ``name`` with 20 s of evidence and a 2 s lookback, fed through
    the tap a pass a second with what was written by then; the kinds and models it saw, and
    leaves the active ones in ``store``."""
    watcher = Watcher(
        WatchConfig(collect=CollectConfig(store=store), evidence_s=20, lookback_s=2, api=False)
    )
    with Store(store):
        pass
    window = foreign_window(name)
    events, at, seen = sorted(window.events, key=_time_of), window.since_ns, set()
    while at < window.until_ns:
        at = min(at + 10**9, window.until_ns)
        upto = next((i for i, e in enumerate(events) if _time_of(e) > at), len(events))
        watcher.live.add("triton.log", events[:upto])
        del events[:upto]
        seen |= {(f.kind, f.model) for f in watcher.detect_once(at)}
    return seen


def _active(store: Path) -> set[tuple[str, str]]:
    with Store(store, readonly=True) as reader:
        return {(f.kind, f.model) for f in reader.findings(active_only=True)}


@pytest.mark.parametrize(("name", "model"), [("ch_self_deadlock", "ch_planner")])
def test_a_deadlock_stays_active_while_its_model_is_still_stuck(
    name: str, model: str, tmp_path: Path
) -> None:
    """The deadlock is read from its queued calls, which leave the window while the deadlock
    lasts: at the recording's end it is no longer seen, and with a 2 s lookback it resolved,
    while the batch holding the model's instance never ended (``hung_request``). It stays
    active while that batch runs."""
    seen = _watched(name, tmp_path / "store.db")
    assert ("bls_deadlock", model) in seen
    assert {("hung_request", model), ("bls_deadlock", model)} <= _active(tmp_path / "store.db")


def test_a_hang_outliving_the_window_is_never_read_as_a_deadlock(tmp_path: Path) -> None:
    """doc_extract_hang: a hang, no cycle. Once doc_extract's healthy batches leave the 20 s
    window, its calls (none) cannot be learned from the window; the watch keeps what its
    earlier passes learned (``LiveWindow.learn``), so the hung batch never claims the client
    requests queued for doc_router, and no pass reads a deadlock."""
    seen = _watched("doc_extract_hang", tmp_path / "store.db")
    assert not [k for k in seen if k[0] == "bls_deadlock"]
    assert ("hung_request", "doc_extract") in _active(tmp_path / "store.db")


def test_a_hang_read_as_a_deadlock_for_one_pass_is_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch that has not learned doc_extract's calls (restarted once its healthy batches
    were older than the window; here learning is switched off): one pass reads a call from
    doc_extract to doc_router and calls it a deadlock. Seen once, it is not held by the batch
    that still runs (``HELD_AFTER_PASSES``)."""
    monkeypatch.setattr(LiveWindow, "learn", lambda _self, _window: None)
    seen = _watched("doc_extract_hang", tmp_path / "store.db")
    assert ("bls_deadlock", "doc_extract") in seen
    active = _active(tmp_path / "store.db")
    assert ("hung_request", "doc_extract") in active
    assert not [k for k in active if k[0] == "bls_deadlock"]
