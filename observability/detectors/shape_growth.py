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
joined through their instance's batch: their growth is read the same way, but which client
request a response belonged to is unknown, so only ``geometric`` growth is reported for them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.requests import Lifecycle, Requests, log_ref, requests_of
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


@dataclass
class ShapeGrowthDetector:
    min_steps: int = 4
    min_ratio: float = 1.5
    max_shapes_in_evidence: int = 40
    kind: str = "shape_growth"

    def detect(self, window: Window) -> list[Finding]:
        reqs = requests_of(window)
        series = _series(reqs)
        out = []
        for (model, instance, name), points in series.items():
            found = self._growth(points, reqs)
            if found is not None:
                mode, run = found
                out.append(self._finding(window, reqs, model, instance, name, mode, run))
        return out

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
        if mode == "geometric":
            ratio = (run[-1][2] / run[0][2]) ** (1 / max(1, len(run) - 1))
            how = f"multiplies by about {ratio:.1f} per response"
        else:
            how = f"grows by {run[1][2] - run[0][2]} elements per response and is not reset"
            how += " between client requests"
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
                f"{name} shapes in response order: {shown}; requests: "
                + ", ".join(roots[:10])
                + (" ..." if len(roots) > 10 else ""),
            ),
            *(
                Evidence(
                    "log",
                    p[1].header.at_ns,
                    log_ref(p[1].header.offset),
                    f"add response output: output: {name}, type: {p[1].dtype}, shape: "
                    f"{_fmt(p[1].shape)} (request {p[0].request_id or 'without an id'})",
                )
                for p in (run[0], run[min(len(run) - 1, self.min_steps)], run[-1])
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


def _root(reqs: Requests, request_id: str) -> str:
    """The client request a BLS child belongs to: its outermost ancestor in the window, else
    the id's first dot-separated part (the parent may have started before the window)."""
    ancestors = reqs.ancestors(request_id)
    return ancestors[-1] if ancestors else request_id.partition(".")[0]


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"
