"""Requests still open at "now", oldest first: where a hang shows before any alert fires."""

from __future__ import annotations

from dataclasses import dataclass

from observability.detectors.requests import Requests

__all__ = ["InFlight", "oldest_in_flight"]


@dataclass(frozen=True)
class InFlight:
    request_id: str
    model: str
    state: str
    instance: str
    started_ns: int
    age_s: float
    open_children: int


def oldest_in_flight(requests: Requests, now_ns: int, limit: int = 20) -> list[InFlight]:
    """Client requests (not BLS children) open at ``now_ns``, with their open children: a
    parent is usually stuck because one of its calls is."""
    tops = [
        c
        for c in requests.lifecycles
        if c.open and c.started_ns is not None and requests.parent_id(c.request_id) is None
    ]
    tops.sort(key=lambda c: c.started_ns or 0)
    seen: set[str] = set()
    chosen = []
    for cycle in tops:
        if cycle.request_id in seen:  # an ensemble and its steps share the id: show it once
            continue
        seen.add(cycle.request_id)
        chosen.append(cycle)
        if len(chosen) >= limit:
            break
    children = requests.open_children(c.request_id for c in chosen)
    return [
        InFlight(
            c.request_id,
            c.model,
            c.state,
            c.instance or "",
            c.started_ns or 0,
            (now_ns - (c.started_ns or now_ns)) / 1e9,
            sum(
                len(v)
                for k, v in children.items()
                if k == c.request_id or k.startswith(c.request_id + ".")
            ),
        )
        for c in chosen
    ]
