"""Capacity lost at once: a model completing half as much while its queue never empties.

Why: at ``--log-verbose 0`` a hang is seen only when a model stops completing altogether
(``model_stalled``). One request that never returns holds one instance of several; the others
serve on, so nothing stalls, and the hang left no finding (hx_kb_hang_quiet,
sw_pacing_hang_quiet: one of two instances held for the rest of the window). /metrics still
shows it where the clients keep the model busy: while requests queue at every scrape (so the
model completes as fast as it can), its completions fall by a third or more at one scrape and
stay down, and its queue does not shrink, while the requests it still completes take no
longer each (``nv_inference_compute_infer_duration_us`` per success): capacity gone at once,
an instance held by a request that never finishes. Executions that became slower (a heavier
input mix, a slow dependency) lose throughput as well, but each takes longer: not this.

Rule, per model with no verbose-log instance lines (those have the log-based detectors) and
``nv_inference_pending_request_count`` and ``nv_inference_request_success`` on /metrics: a
scrape ``t`` with ``before_s`` of scrapes before it and at least ``after_s`` after it, pending
above zero at every one of them (the last such run of scrapes, ended at most 5 s before the
window's: clients may stop just before a capture does); the rate of successes after ``t`` at
most ``max_ratio`` of the rate over the ``before_s`` before it in each half of what follows
(no recovery), and above a tenth of it in each (a model that completes next to nothing is
``model_stalled``'s), with the queue after as deep as before (clients that left leave an
empty queue) and the compute time per completed request after at most ``max_slower`` times
what it was before (where /metrics has it). The ``t`` with the deepest fall wins; pure over
the window's samples.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

from observability.detectors.model_stalled import points_by_model
from observability.detectors.window import Window

__all__ = ["CapacityDrop", "capacity_drops"]

PENDING = "nv_inference_pending_request_count"
SUCCESS = "nv_inference_request_success"
COMPUTE = "nv_inference_compute_infer_duration_us"


@dataclass(frozen=True)
class CapacityDrop:
    """A model's completion rate falling at ``at_ns`` with its queue never empty."""

    model: str
    at_ns: int
    rate_before: float
    """Successes per second over the ``before_s`` before ``at_ns``."""
    rate_after: float
    """Successes per second from ``at_ns`` to the last scrape."""
    pending_before: float
    pending_after: float
    """The median queue before and after."""
    last_ns: int


def capacity_drops(
    window: Window,
    skip: Set[str],
    before_s: float = 5.0,
    after_s: float = 10.0,
    max_ratio: float = 0.65,
    max_slower: float = 1.4,
) -> list[CapacityDrop]:
    """The drops of the window's models not in ``skip``, one per model at most."""
    pending = points_by_model(window, PENDING)
    success = points_by_model(window, SUCCESS)
    compute = points_by_model(window, COMPUTE)
    out = []
    for key in sorted(set(pending) & set(success)):
        model = key[1]
        if model in skip:
            continue
        drop = _drop(model, pending[key], success[key], before_s, after_s, max_ratio)
        slower = drop is not None and _slower(
            compute.get(key, {}), success[key], drop, before_s, max_slower
        )
        if drop is not None and not slower:
            out.append(drop)
    return out


def _slower(
    compute: dict[int, float],
    success: dict[int, float],
    drop: CapacityDrop,
    before_s: float,
    max_slower: float,
) -> bool:
    """Whether the requests completed after the drop took ``max_slower`` times longer each
    than those just before: executions that became slower, not capacity lost."""
    before = [t for t in success if t <= drop.at_ns and (drop.at_ns - t) / 1e9 <= before_s]
    if not compute or not before:
        return False
    start = min(before)
    if not {start, drop.at_ns, drop.last_ns} <= compute.keys():
        return False

    def per_request(a: int, b: int) -> float | None:
        done = success[b] - success[a]
        return (compute[b] - compute[a]) / done if done > 0 else None

    was, now = per_request(start, drop.at_ns), per_request(drop.at_ns, drop.last_ns)
    return was is not None and now is not None and now > max_slower * was


def _drop(
    model: str,
    pending: dict[int, float],
    success: dict[int, float],
    before_s: float,
    after_s: float,
    max_ratio: float,
) -> CapacityDrop | None:
    times = sorted(set(pending) & set(success))
    if len(times) < 4:
        return None
    counts = [success[t] for t in times]
    if any(b < a for a, b in pairwise(counts)):
        return None  # a reset (a restart, a reload): not one run of the counter
    # The last run of scrapes with requests queued (the model busy at every one), ended at
    # most ``_TAIL_NS`` before the last scrape: clients that stopped just before the capture
    # did leave the queue empty at its last scrapes (lz_route_hang_load_ends_quiet).
    end = len(times)
    while end > 0 and pending[times[end - 1]] <= 0 and times[-1] - times[end - 1] <= _TAIL_NS:
        end -= 1
    k = end
    while k > 0 and pending[times[k - 1]] > 0:
        k -= 1
    busy = times[k:end]
    if not busy:
        return None
    last = busy[-1]
    found: CapacityDrop | None = None
    for i, at in enumerate(busy):
        if (at - busy[0]) / 1e9 < before_s or (last - at) / 1e9 < after_s:
            continue
        start = max(t for t in busy[: i + 1] if (at - t) / 1e9 >= before_s)
        before = _rate(success, start, at)
        after = _rate(success, at, last)
        mid = busy[i + (len(busy) - i) // 2]
        halves = (_rate(success, at, mid), _rate(success, mid, last))
        queued_before = median(pending[t] for t in busy if start <= t <= at)
        queued_after = median(pending[t] for t in busy if t > at)
        if (
            before > 0
            and _STALLED * before < min(halves)
            and max(halves) <= max_ratio * before
            and queued_after >= queued_before
        ):
            drop = CapacityDrop(model, at, before, after, queued_before, queued_after, last)
            if found is None or after / before < found.rate_after / found.rate_before:
                found = drop
    return found


_TAIL_NS = 5_000_000_000
_STALLED = 0.1
"""A model completing less than this share of its rate, in either half of what follows the
fall, has all but stopped: model_stalled's (lz_stall_quiet: two hangs a second apart on two
instances, 2 completions in between, then none)."""


def _rate(success: dict[int, float], a: int, b: int) -> float:
    return (success[b] - success[a]) / ((b - a) / 1e9) if b > a else 0.0
