"""Instance lifecycles without ids: the oldest-first join of admitted requests to batches."""

from __future__ import annotations

from observability import events as ev
from observability.detectors.instances import build_instances, instances_of
from tests.foreign.parsed import window as foreign_window

MS = 1_000_000


def _h(at_ms: float, offset: int) -> ev.LogRecord:
    return ev.LogRecord(int(at_ms * MS), ev.LogLevel.INFO, "x.cc", 1, offset)


def prepared(at: float, model: str, rid: str = "", off: int = 0) -> ev.RequestPrepared:
    return ev.RequestPrepared(_h(at, off), rid, model, 1, 1, 0)


def executing(at: float, model: str, inst: str, n: int = 1) -> ev.InstanceExecuting:
    return ev.InstanceExecuting(_h(at, 0), model, inst, n)


def released(at: float, inst: str, n: int = 1) -> ev.InstanceReleased:
    return ev.InstanceReleased(_h(at, 0), inst, n)


def test_batches_take_the_oldest_admitted_requests_of_their_model() -> None:
    got = build_instances(
        [
            prepared(0, "m", "a"),
            prepared(1, "other", "z"),
            prepared(2, "m", "b"),
            prepared(3, "m", "c"),
            executing(4, "m", "m_0", 2),
            released(10, "m_0", 2),
            executing(11, "m", "m_0", 1),
        ],
        until_ns=12 * MS,
    )
    first, second = got.executions
    assert first.ids == ["a", "b"] and not first.open
    assert second.ids == ["c"] and got.open["m_0"] is second
    assert got.queued == {}  # "other" has no instance: not accounted


def test_a_request_still_waiting_while_an_instance_sat_idle_was_never_queued() -> None:
    got = build_instances(
        [
            prepared(0, "m", "cancelled"),
            executing(1, "m", "m_0"),  # takes it: nothing else is queued
            released(2, "m_0"),
            prepared(100, "m", "gone"),  # cancelled in the queue: never runs
            prepared(1900, "m", "real"),
            executing(2000, "m", "m_0"),  # m_0 idle for 2 s: "gone" was not waiting
        ],
        until_ns=2001 * MS,
    )
    assert got.open["m_0"].ids == ["real"]


def test_requests_queued_behind_busy_instances_stay_queued_with_their_age() -> None:
    got = build_instances(
        [
            executing(0, "m", "m_0"),
            prepared(1, "m", "x"),
            prepared(2, "m"),
        ],
        until_ns=5000 * MS,
    )
    assert [r.request_id for r in got.queued["m"]] == ["x", ""]
    assert got.all_busy("m") and got.busy("m")[0].age_s(5000 * MS) == 5.0


def test_queued_requests_beside_an_idle_instance_are_dropped_at_the_end() -> None:
    got = build_instances(
        [executing(0, "m", "m_0"), released(1, "m_0"), prepared(2, "m", "stale")],
        until_ns=5000 * MS,
    )
    assert got.queued == {}


def test_the_first_batch_after_a_load_is_marked_and_an_unload_ends_open_batches() -> None:
    loaded = ev.ModelStateChange(_h(0, 0), "m", 1, "loaded")
    unloading = ev.ModelStateChange(_h(50, 0), "m", 1, "unloading")
    got = build_instances(
        [
            loaded,
            executing(1, "m", "m_0"),
            released(2, "m_0"),
            executing(3, "m", "m_0"),
            executing(4, "m", "m_1"),
            unloading,
        ],
        until_ns=60 * MS,
    )
    assert [e.first_after_load for e in got.executions] == [True, False, True]
    assert got.open == {}


def _versioned(at: float, model: str, version: int) -> ev.RequestPrepared:
    return ev.RequestPrepared(_h(at, 0), "", model, version, 1, 0)


def test_two_versions_on_one_instance_name_keep_the_hung_batch_open() -> None:
    """Versions 1 and 2 both run ``m_0_0`` (foreign st_sequence_hang): version 1's batch
    hangs while version 2's come and go on the same name; each release ends the newest."""
    got = build_instances(
        [
            _versioned(0, "m", 1),
            _versioned(0.5, "m", 2),
            executing(1, "m", "m_0_0"),  # version 1: hangs
            _versioned(2, "m", 2),
            executing(3, "m", "m_0_0"),  # version 2
            released(4, "m_0_0"),
            executing(5, "m", "m_0_0"),  # version 2 again
            released(6, "m_0_0"),
        ],
        until_ns=100 * MS,
    )
    (hung,) = got.open.values()
    assert hung.start_ns == 1 * MS and hung.instance == "m_0_0"
    assert [e.end_ns for e in got.executions] == [None, 4 * MS, 6 * MS]


def test_one_version_a_lost_release_is_forgotten_not_kept_open() -> None:
    got = build_instances(
        [
            _versioned(0, "m", 1),
            executing(1, "m", "m_0_0"),  # its release line was lost
            _versioned(2, "m", 1),
            executing(3, "m", "m_0_0"),
            released(4, "m_0_0"),
        ],
        until_ns=100 * MS,
    )
    assert got.open == {}


def test_a_warmup_s_requests_are_not_a_queue_of_the_served_copy() -> None:
    """tests/fixtures/foreign warm_* (Round 20): a reload's model_warmup prepares its own
    requests (they never reach PENDING) and runs them on instances named like the served
    copy's. Paired as clients' requests, the served copy's batches were credited with them:
    waits of 3 s in warm_reload_slow_warmup, where the clients' round trips took 81 ms at
    most, and 8 requests queued at the end of warm_warmup_hangs that were answered."""
    slow = instances_of(foreign_window("warm_reload_slow_warmup"))
    waits = [(e.start_ns - r.prepared_ns) / 1e9 for e in slow.executions for r in e.requests]
    assert len(waits) > 1000 and max(waits) < 0.1
    hung = instances_of(foreign_window("warm_warmup_hangs"))
    assert hung.queued == {} and hung.open == {}  # the warmup that never returns is a load's


def test_callees_read_requests_prepared_in_the_same_microsecond() -> None:
    """Two requests of a model prepared at the same instant, one taken by a batch and one
    still queued (a copied log, whole-second ISO8601 times): learning who calls whom compared
    the queued one's missing start with the other's and raised, and five detectors with it."""
    from observability.detectors.waits import callees

    inst = build_instances(
        [prepared(0, "c", off=1), prepared(0, "c", off=2), executing(1, "c", "c_0")],
        until_ns=2 * MS,
    )
    assert [r.offset for r in inst.queued["c"]] == [2]
    assert [r.offset for r in inst.open["c_0"].requests] == [1]
    assert callees(inst) == {}  # sorted without raising; too few batches to learn from
