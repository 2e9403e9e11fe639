"""shape_growth: an output whose size keeps growing across successive responses.

Growth alone is normal: an autoregressive decode loop returns one more token per step (the
demo's healthy generate: decoder TOKEN_IDS 5, 6, 7, ... 12, back to 5 for the next client
request). What a Triton user calls pathological is state that leaks: a model that appends to
instance state instead of replacing it (server#7383-style), so sizes double per step
(4, 9, 19, 39, ...) or keep growing by a fixed chunk without ever resetting between client
requests, until memory or latency gives out. So, per model instance and output, over the
responses in log order, within a run of strictly increasing sizes (elements, the product of
the shape):

* ``geometric``: ``min_steps`` consecutive steps each multiplying the size by at least
  ``min_ratio`` (default 1.5) -> critical;
* ``carried``: ``min_steps`` consecutive steps adding the same chunk, and the run spans more
  than one client request (the state survived the end of a request) -> warning.

Responses are joined to their request and model by :mod:`observability.detectors.requests`
(2.51's ``add response output`` line names neither); an output name joined to a model in
fewer than half of its responses is a join mistake and is ignored. Requests without an id are
joined through their instance's batch (``executing N requests`` ... ``released``), and their
``geometric`` growth is read the same way. Which client request they belonged to is unknown,
so ``carried`` growth is read from what the log does show:

* ``carried`` without ids: over the id-less responses of one instance, grouped by the batch
  (execution) that produced them, a run in which every batch's sizes are at least the
  previous batch's largest and which rises at ``min_rises_without_ids`` (default 32)
  executions, while no request of the log *owned* the whole run -> warning. A decode loop
  grows only within the request that drives it and starts again small for the next one (a
  sawtooth: the healthy twins' loops rise 7 to 9 times, and concurrent loops on one instance
  interleave and break the run at once); a cache that is never reset rises across every
  request that uses it. The requests the log shows without ids are the instance executions of
  every model (a BLS parent's batch holds its instance while its loop runs), the requests with
  ids, and the gRPC stream requests from their ``READ`` to their final response (a decoupled
  model's ``execute`` returns before its loop). One that was open from the run's first
  response to its last owned it, unless at least two other requests of its model and kind
  began and ended within the run: then it is not the loop's driver but a request stuck
  alongside (a hang, a stalled stream) while the state carried on across the others. Batches
  are compared as wholes because within a batch the pairing of outputs to requests is not
  known, and per instance because each instance keeps its own state (one batch out of line,
  two instances' outputs swapped by the join, is skipped); an output whose size follows its
  input's length (noise) does not rise 32 times in a row. Not seen: a request's end that the
  log does not write (an HTTP ``generate_stream``), so a healthy loop of 32 steps or more
  driven by one is reported; a leak whose whole run falls inside a request of a model that
  completes nothing else meanwhile (a lone hang that began before the run) is not.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from observability import events as ev
from observability.detectors.instances import instances_of
from observability.detectors.requests import Lifecycle, Requests, log_ref, requests_of
from observability.detectors.streams import window_streams
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ShapeGrowthDetector"]

ADVICE = (
    "Look for state kept across responses in this model: a list or array on self (or a "
    "module global) that execute appends to instead of replacing, or a cache keyed by "
    "something that never repeats. Reset it per request (or per sequence with the sequence "
    "batcher's START/END flags), cap it, and give the output a bounded dims in config.pbtxt "
    "so Triton rejects runaway shapes. Until fixed, reloading the model clears the state."
)

_Point = tuple[Lifecycle, ev.ResponseOutput, int]


@dataclass(frozen=True)
class _Seen:
    """A request as the log shows it without ids: its kind (``execution``, ``request``,
    ``stream``), model, and when it began and ended (``None``: still open)."""

    kind: str
    model: str
    start_ns: int
    end_ns: int | None


@dataclass
class ShapeGrowthDetector:
    min_steps: int = 4
    min_ratio: float = 1.5
    max_shapes_in_evidence: int = 40
    min_rises_without_ids: int = 32
    """Executions a run of id-less responses must rise at to be read as carried growth."""
    kind: str = "shape_growth"

    def detect(self, window: Window) -> list[Finding]:
        reqs = requests_of(window)
        series = _series(reqs)
        seen: list[_Seen] | None = None

        def requests() -> list[_Seen]:
            nonlocal seen
            if seen is None:
                seen = _seen(window, reqs)
            return seen

        versions = instances_of(window).versions
        grown: list[tuple[str, str | None, str, str, list[_Point]]] = []
        for (model, instance, name), points in series.items():
            found = self._growth(points, reqs)
            if found is None:
                served = len(versions.get(model, ()))
                for chain in _chains(points, served) if served > 1 else [points]:
                    found = self._carried_without_ids(chain, requests)
                    if found is not None:
                        break
            if found is not None:
                grown.append((model, instance, name, *found))
        relays = _relays([g[4] for g in grown], [(g[0], g[2]) for g in grown])
        out = []
        for i, (model, instance, name, mode, run) in enumerate(grown):
            if i in relays:
                continue
            finding = self._finding(window, reqs, model, instance, name, mode, run)
            passed = sorted({(grown[j][0], grown[j][2]) for j, k in relays.items() if k == i})
            if passed:
                finding = replace(
                    finding, summary=f"{finding.summary} {_relayed_by(model, passed)}"
                )
            out.append(finding)
        return out

    def _carried_without_ids(
        self, points: list[_Point], requests: Callable[[], list[_Seen]]
    ) -> tuple[str, list[_Point]] | None:
        """The first run of id-less batches that rises at ``min_rises_without_ids``
        executions while no request owned it; None if none.

        One batch out of line is a join mistake, not a reset: several instances (or
        batches) releasing close together can swap their outputs, so a batch below the run
        is skipped when the next one is back at its level, and a batch above it (a spike) is
        dropped when the next one is back in line with the batch before it."""
        batches = _batches(p for p in points if not p[0].request_id)
        low = [min(p[2] for p in b) for b in batches]
        high = [max(p[2] for p in b) for b in batches]
        run: list[int] = []
        for i in range(len(batches) + 1):
            if i < len(batches) and (not run or low[i] >= high[run[-1]]):
                run.append(i)
                continue
            if i < len(batches):
                if len(run) >= 2 and low[i] >= high[run[-2]]:
                    run[-1] = i  # the last one was a spike
                    continue
                if i + 1 < len(batches) and low[i + 1] >= high[run[-1]]:
                    continue  # this one is a dip
            rises = sum(1 for a, b in itertools.pairwise(run) if low[b] > high[a])
            if rises >= self.min_rises_without_ids:
                flat = [p for j in run for p in batches[j]]
                if not _owned(flat[0][1].header.at_ns, flat[-1][1].header.at_ns, requests()):
                    return "carried_without_ids", flat
            run = [i]
        return None

    def _growth(self, points: list[_Point], reqs: Requests) -> tuple[str, list[_Point]] | None:
        """The first run that grows pathologically, extended to its end; None if none."""
        best: tuple[str, list[_Point]] | None = None
        run: list[_Point] = []
        for p in points:
            if run and p[2] <= run[-1][2]:
                if best is not None:
                    return best
                run = []
            run.append(p)
            if best is None:
                mode = self._mode(run, reqs)
                if mode is not None:
                    best = (mode, run)
        return best

    def _mode(self, run: list[_Point], reqs: Requests) -> str | None:
        n = self.min_steps
        if len(run) <= n:
            return None
        tail = [p[2] for p in run[-(n + 1) :]]
        if all(b >= a * self.min_ratio for a, b in itertools.pairwise(tail)):
            return "geometric"
        steps = {b - a for a, b in itertools.pairwise(tail)}
        if len(steps) == 1:
            roots = {_root(reqs, p[0].request_id) for p in run[-(n + 1) :]}
            if len(roots) > 1 and "" not in roots:
                return "carried"
        return None

    def _finding(
        self,
        window: Window,
        reqs: Requests,
        model: str,
        instance: str | None,
        name: str,
        mode: str,
        run: list[_Point],
    ) -> Finding:
        shapes = [p[1].shape for p in run]
        roots = list(dict.fromkeys(_root(reqs, p[0].request_id) for p in run))
        shown = " ".join(_fmt(s) for s in shapes[: self.max_shapes_in_evidence])
        if len(shapes) > self.max_shapes_in_evidence:
            shown += f" ... {_fmt(shapes[-1])}"
        requests = ", ".join(roots[:10]) + (" ..." if len(roots) > 10 else "")
        mark = self.min_steps  # the response at which the growth became a finding
        if mode == "geometric":
            ratio = (run[-1][2] / run[0][2]) ** (1 / max(1, len(run) - 1))
            how = f"multiplies by about {ratio:.1f} per response"
        elif mode == "carried":
            how = f"grows by {run[1][2] - run[0][2]} elements per response and is not reset"
            how += " between client requests"
        else:
            executions = len({p[0].released_offset for p in run})
            steps = sorted({b - a for a, b in itertools.pairwise(p[2] for p in run) if b > a})
            by = f"{steps[0]}" if len(steps) == 1 else f"{steps[0]} to {steps[-1]}"
            how = (
                f"grows by {by} elements at each of {executions} successive executions of "
                f"{instance or model} and is never reset: it outlived every request seen "
                "running meanwhile"
            )
            streams = _streams_within(run[0][1].header.at_ns, run[-1][1].header.at_ns, window)
            if streams:
                how += f" ({streams} gRPC stream requests began and ended meanwhile)"
            requests = f"without ids, {executions} executions of {instance or model}"
            mark = self.min_rises_without_ids
        summary = (
            f"{model} output {name} {how}: {_fmt(shapes[0])} to {_fmt(shapes[-1])} over "
            f"{len(shapes)} successive responses ("
            + (f"{len(roots)} client request(s)" if any(roots) else "requests without ids")
            + "); state is leaking across responses."
        )
        first, last = run[0][1], run[-1][1]
        evidence = (
            Evidence(
                "log",
                first.header.at_ns,
                f"{model}/{name}",
                f"{name} shapes in response order: {shown}; requests: {requests}",
            ),
            *(
                Evidence(
                    "log",
                    p[1].header.at_ns,
                    log_ref(p[1].header.offset),
                    f"add response output: output: {name}, type: {p[1].dtype}, shape: "
                    f"{_fmt(p[1].shape)} (request {p[0].request_id or 'without an id'})",
                )
                for p in (run[0], run[min(len(run) - 1, mark)], run[-1])
            ),
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if mode == "geometric" else Severity.WARNING,
            model=model,
            instance=instance,
            request_id=roots[0] or None,
            first_seen_ns=first.header.at_ns,
            last_seen_ns=last.header.at_ns,
            summary=summary,
            evidence=evidence,
            advice=ADVICE,
        )


_RELAY_NS = 100_000_000
"""A caller's copy of a child's output is logged this soon after the child's (1-4 ms in
xl_detok_leak: the gateway returns what its BLS call answered)."""


def _relays(runs: list[list[_Point]], outputs: list[tuple[str, str]]) -> dict[int, int]:
    """Index of a growing run -> the run of another model it relays: each of its responses
    has the size of one of the other's logged up to ``_RELAY_NS`` before. A BLS parent that
    returns its child's output grows with it and keeps no state of its own; the finding
    belongs to the child (xl_detok_leak: xl_gateway's TGT was xl_detok's TEXT_IDS). Of the
    same model too, under another output name: an ensemble's output copying its step's,
    which the join gives the step (gen_postprocessing_leak: text_output of OUTPUT)."""
    out: dict[int, int] = {}
    by_size: list[dict[int, list[int]]] = []
    for run in runs:
        sizes: dict[int, list[int]] = {}
        for p in run:
            sizes.setdefault(p[2], []).append(p[1].header.at_ns)
        by_size.append({k: sorted(v) for k, v in sizes.items()})
    for i, run in enumerate(runs):
        for j, source in enumerate(by_size):
            if (
                outputs[j] != outputs[i]
                and j not in out
                and all(_logged_before(source.get(p[2], ()), p[1].header.at_ns) for p in run)
            ):
                out[i] = j
                break
    return out


def _logged_before(stamps: Sequence[int], at_ns: int) -> bool:
    """Whether one of ``stamps`` (sorted) lies up to ``_RELAY_NS`` before ``at_ns``."""
    k = bisect_right(stamps, at_ns)
    return k > 0 and at_ns - stamps[k - 1] <= _RELAY_NS


def _relayed_by(model: str, passed: list[tuple[str, str]]) -> str:
    others = [(m, o) for m, o in passed if m != model]
    copies = [o for m, o in passed if m == model]
    text = []
    if others:
        who = ", ".join(f"{caller} as {output}" for caller, output in others)
        text.append(
            f"Relayed by: {who} (each of those responses follows one of {model}'s of the "
            f"same size within {_RELAY_NS // 1_000_000} ms: a caller returning what its BLS "
            f"call answered grows with it and keeps no state of its own, so the leak is {model}'s)."
        )
    if copies:
        text.append(
            f"The same sizes come back as {', '.join(copies)} within "
            f"{_RELAY_NS // 1_000_000} ms of each of its "
            "responses: a copy of this output (an ensemble's output mapped from it), not a "
            "second leak."
        )
    return " ".join(text)


def _series(reqs: Requests) -> dict[tuple[str, str | None, str], list[_Point]]:
    """(model, instance, output) -> responses in log order, join mistakes left out."""
    per_model: dict[str, int] = {}
    per_name: dict[tuple[str, str], int] = {}
    cycles = [*reqs.lifecycles, *reqs.anonymous]
    for c in cycles:
        if c.outputs and c.model:
            per_model[c.model] = per_model.get(c.model, 0) + 1
            for name in {o.output for o in c.outputs}:
                per_name[c.model, name] = per_name.get((c.model, name), 0) + 1
    series: dict[tuple[str, str | None, str], list[_Point]] = {}
    for c in cycles:
        for o in c.outputs:
            if 2 * per_name.get((c.model, o.output), 0) < per_model.get(c.model, 0):
                continue
            series.setdefault((c.model, c.instance, o.output), []).append(
                (c, o, math.prod(o.shape) if o.shape else 1)
            )
    for points in series.values():
        points.sort(key=lambda p: (p[1].header.at_ns, p[1].header.offset))
    return series


def _batches(points: Iterable[_Point]) -> list[list[_Point]]:
    """Id-less points grouped by the batch (instance execution) that wrote them, in order."""
    out: dict[int, list[_Point]] = {}
    for p in points:
        key = p[0].released_offset
        out.setdefault(key if key is not None else -len(out) - 1, []).append(p)
    return list(out.values())


def _chains(points: list[_Point], k: int) -> list[list[_Point]]:
    """The id-less batches of one instance name split into at most ``k`` non-decreasing
    chains. Two versions served at once both run instances named ``m_0_0`` and the python
    backend's lines carry no version, so each version's state is one chain and the log
    interleaves them out of step (tests/fixtures/foreign st_state_growth: TRAIL rows ``12 13
    14 15 16 13 16 16 17``): each batch joins the chain it continues most closely (the one
    whose last size is the highest not above its own), or, when none can, the chain that
    ended lowest, as a reset of it."""
    chains: list[list[list[_Point]]] = []
    for batch in _batches(p for p in points if not p[0].request_id):
        low = min(p[2] for p in batch)
        tops = [max(p[2] for p in c[-1]) for c in chains]
        fits = [i for i, top in enumerate(tops) if top <= low]
        if fits:
            chains[max(fits, key=lambda i: tops[i])].append(batch)
        elif len(chains) < k:
            chains.append([batch])
        else:
            chains[min(range(len(chains)), key=lambda i: tops[i])].append(batch)
    return [[p for batch in chain for p in batch] for chain in chains]


def _seen(window: Window, reqs: Requests) -> list[_Seen]:
    """Every request the log shows, with or without an id (see the module docstring)."""
    out = [
        _Seen("execution", e.model, e.start_ns, e.end_ns) for e in instances_of(window).executions
    ]
    out += [
        _Seen("request", c.model, c.started_ns, c.released_ns)
        for c in reqs.lifecycles
        if c.started_ns is not None
    ]
    out += [_Seen("stream", s.model, s.opened_ns, s.final_ns) for s in window_streams(window)]
    return out


def _owned(first_ns: int, last_ns: int, seen: list[_Seen]) -> bool:
    """Whether a request open from ``first_ns`` to ``last_ns`` drove the growth between: one
    was, and fewer than two others of its model and kind began and ended in between."""
    owners = [
        r for r in seen if r.start_ns <= first_ns and (r.end_ns is None or r.end_ns >= last_ns)
    ]
    if not owners:
        return False
    within = Counter(
        (r.kind, r.model)
        for r in seen
        if r.start_ns >= first_ns and r.end_ns is not None and r.end_ns <= last_ns
    )
    return any(within[r.kind, r.model] < 2 for r in owners)


def _streams_within(first_ns: int, last_ns: int, window: Window) -> int:
    return sum(
        1
        for s in window_streams(window)
        if s.opened_ns >= first_ns and s.final_ns is not None and s.final_ns <= last_ns
    )


def _root(reqs: Requests, request_id: str) -> str:
    """The client request a BLS child belongs to: its outermost ancestor in the window, else
    the id's first dot-separated part (the parent may have started before the window)."""
    ancestors = reqs.ancestors(request_id)
    return ancestors[-1] if ancestors else request_id.partition(".")[0]


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"
