"""Calls that never finished, read at ``--log-verbose 0`` from models that were level.

Why: a BLS model that calls two children at once for each request (``async_exec`` under
``asyncio.gather``) leaves their completion counters level with each other and with its own:
one success each per request. When one child's call never returns, that child and the caller
waiting on it each stay one request short for good, while the other child, called beside it,
completes that request and every later one. Under a light load nothing queues and the other
instances serve on, so no model stalls and no capacity is lost (``model_stalled`` and
``capacity.py`` have nothing to read): gs_spam_hang_quiet, 64 log lines, none after the start.
The counters are the only witness.

Rule, per target, over the models with no verbose-log instance lines (those have the
log-based detectors), on ``nv_inference_request_success`` + ``nv_inference_request_failure``
(a request that failed did finish): a model ``S`` and at least two others whose counts equal
``S``'s at ``before_n`` or more scrapes in a row (over ``before_s`` or more), then fall short
of it by the same ``k`` at one scrape and stay exactly ``k`` short at every scrape to the end,
at least ``after_s`` later, while ``S`` and each of them complete ``min_done`` more. Pure over
the window's samples.

Why two: one model falling behind a sibling alone is as well a caller that stopped calling
it for some requests (an early answer for an empty input, an error of the first child that
skips the second: day_urgency_bad_deploy_quiet); a caller finishes those requests, so it
does not fall behind with it. A hung child holds its caller. Which of the two is the caller
the counters cannot tell; both are named. Not found (missed, never invented): a load that
keeps a call in flight at some scrapes (the counts are then not exactly level or exactly
short), a caller that calls its children one after the other (the hung call's siblings are
never called: day_lang_hang_quiet), a caller whose batches hold several requests.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from itertools import pairwise

from observability.detectors.model_stalled import points_by_model
from observability.detectors.window import Window

__all__ = ["LockstepLag", "lockstep_lags"]

COMPLETED = ("nv_inference_request_success", "nv_inference_request_failure")


@dataclass(frozen=True)
class LockstepLag:
    """Models that ran level with ``sibling`` and fell ``short`` requests behind it for good."""

    models: tuple[str, ...]
    """The models short of ``sibling`` (a hung child and the caller it holds), sorted."""
    sibling: str
    short: int
    at_ns: int
    """The first scrape at which they were short."""
    last_ns: int
    level_since_ns: int
    """The first scrape of the run of level counts before ``at_ns``."""
    sibling_done: int
    """What ``sibling`` completed from ``at_ns`` to the last scrape."""


def lockstep_lags(
    window: Window,
    skip: Set[str],
    before_n: int = 5,
    before_s: float = 5.0,
    after_s: float = 10.0,
    min_done: int = 20,
) -> list[LockstepLag]:
    """The window's lags, one per sibling at most (the largest group), models in ``skip``
    left out."""
    counts = _completed(window)
    out = []
    for (target, sibling), ahead in sorted(counts.items()):
        if sibling in skip:
            continue
        behind: dict[tuple[int, int], list[tuple[str, int]]] = {}
        for (other_target, model), points in counts.items():
            if other_target != target or model == sibling or model in skip:
                continue
            lag = _lag(ahead, points, before_n, before_s, after_s, min_done)
            if lag is not None:
                at, level_since, short = lag
                behind.setdefault((at, short), []).append((model, level_since))
        groups = [(key, found) for key, found in behind.items() if len(found) >= 2]
        if not groups:
            continue
        (at, short), found = max(groups, key=lambda g: (len(g[1]), g[0]))
        last = max(ahead)
        models = tuple(sorted(model for model, _ in found))
        level_since = max(since for _, since in found)
        done = int(ahead[last] - ahead[at])
        out.append(LockstepLag(models, sibling, short, at, last, level_since, done))
    return out


def _completed(window: Window) -> dict[tuple[str, str], dict[int, float]]:
    """``(target, model)`` -> scrape time -> requests finished, successes and failures."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for name in COMPLETED:
        for key, points in points_by_model(window, name).items():
            per = out.setdefault(key, {})
            for at, value in points.items():
                per[at] = per.get(at, 0.0) + value
    return out


def _lag(
    ahead: dict[int, float],
    points: dict[int, float],
    before_n: int,
    before_s: float,
    after_s: float,
    min_done: int,
) -> tuple[int, int, int] | None:
    """``(first short scrape, first level scrape, requests short)`` when ``points`` ran level
    with ``ahead`` and then stayed the same number short of it to the last scrape."""
    times = sorted(ahead.keys() & points.keys())
    if len(times) < before_n + 2:
        return None
    for series in (ahead, points):
        if any(series[b] < series[a] for a, b in pairwise(times)):
            return None  # a reset (a restart, a reload): not one run of the counter
    gap = [ahead[t] - points[t] for t in times]
    k = len(gap) - 1
    while k > 0 and gap[k - 1] == gap[k]:
        k -= 1
    short = gap[-1]
    if k == 0 or short < 1 or short != int(short):
        return None
    j = k
    while j > 0 and gap[j - 1] == 0:
        j -= 1
    if k - j < before_n or (times[k - 1] - times[j]) / 1e9 < before_s:
        return None
    if (times[-1] - times[k]) / 1e9 < after_s:
        return None
    at, last = times[k], times[-1]
    if min(ahead[last] - ahead[at], points[last] - points[at]) < min_done:
        return None
    return at, times[j], int(short)
