"""Shape history per model output, with growth marked.

2.51 writes response shapes on ``add response output`` lines that name neither model nor
request; the request lifecycles join them (``observability.detectors.requests``), so this
module reads the outputs of released lifecycles. A response is marked as growth when its
element count is more than twice the largest of the previous responses of that output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from observability.detectors.requests import Requests

__all__ = ["GROWTH_FACTOR", "ShapePoint", "shape_history"]

GROWTH_FACTOR = 2.0


@dataclass(frozen=True)
class ShapePoint:
    model: str
    output: str
    request_id: str
    at_ns: int
    shape: tuple[int, ...]
    elements: int
    growth: bool


def shape_history(requests: Requests) -> dict[tuple[str, str], list[ShapePoint]]:
    """``(model, output)`` -> responses in time order."""
    raw: dict[tuple[str, str], list[tuple[int, str, tuple[int, ...]]]] = {}
    for cycle in requests.lifecycles:
        for out in cycle.outputs:
            key = (cycle.model or out.model or "?", out.output)
            raw.setdefault(key, []).append((out.header.at_ns, cycle.request_id, out.shape))
    history: dict[tuple[str, str], list[ShapePoint]] = {}
    for key, rows in raw.items():
        rows.sort()
        biggest = 0
        points = []
        for at, rid, shape in rows:
            n = math.prod(shape) if shape else 1
            points.append(
                ShapePoint(
                    key[0], key[1], rid, at, shape, n, biggest > 0 and n > GROWTH_FACTOR * biggest
                )
            )
            biggest = max(biggest, n)
        history[key] = points
    return history
