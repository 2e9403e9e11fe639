"""``gc_paused``: the collector's one switch, shared by nested and overlapping pauses."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from observability.gcpause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_nested_pauses_turn_it_on_at_the_last_end() -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_pauses_that_overlap_in_threads_leave_it_on() -> None:
    """A thread's pause that ends while another's goes on must not turn the collector on
    under it, nor leave it off once both are done."""
    first_in, second_out = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gc_paused():
            first_in.set()
            second_out.wait(5)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with gc_paused():
        pass
    second_out.set()
    thread.join(5)
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_an_error_inside_still_ends_the_pause() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
