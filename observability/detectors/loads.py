"""Model loads as the log tells them: each ``loading`` line paired with the line that ended it.

Why a module of its own: a failed load and a load that never ends are told by the same lines,
which Triton writes at its default verbosity (``model_lifecycle.cc``: ``loading: m:2``,
``successfully loaded 'm'``, ``failed to load 'm' version 2: <error>``, then the bare
``failed to load 'm'``; before 22.x ``model_repository_manager.cc``, and a config the
repository poll refused: ``Poll failed for model directory 'm': <error>``). What a user must be
told depends on whether a copy of the model was serving when the load began: a failed or stuck
*reload* leaves the previous copy answering (the change silently did not happen), a failed or
stuck *first* load leaves the model unavailable.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from observability import events as ev

__all__ = ["Attempt", "attempts", "clock", "served_since", "state_line"]


@dataclass(frozen=True)
class Attempt:
    model: str
    version: int | None
    begun: ev.ModelStateChange | None
    """The ``loading`` line; ``None`` when the window holds only the end (a pasted error line,
    a repository poll that refused the config before any load began)."""
    ended: ev.ModelStateChange | None
    """The ``loaded`` or ``failed`` line; ``None``: still loading at the window's end."""
    serving: frozenset[int | None]
    """The versions of the model loaded (and not unloaded since) when the attempt began."""

    @property
    def failed(self) -> bool:
        return self.ended is not None and self.ended.state == "failed"

    @property
    def at_ns(self) -> int:
        first = self.begun or self.ended
        assert first is not None
        return first.header.at_ns

    @property
    def seconds(self) -> float | None:
        if self.begun is None or self.ended is None:
            return None
        return (self.ended.header.at_ns - self.begun.header.at_ns) / 1e9


def attempts(records: Iterable[ev.ModelStateChange]) -> list[Attempt]:
    """Every load attempt, in the order each began. A ``loaded`` or ``failed`` line ends the
    oldest open attempt of its model and version (2.51's ``successfully loaded`` names no
    version: the oldest of the model), and a ``loaded`` line every older one too (a server
    killed mid-load and started again loads the model anew); the bare ``failed to load 'm'``
    after the versioned line ends nothing more."""
    open_: dict[str, list[tuple[ev.ModelStateChange, frozenset[int | None]]]] = {}
    serving: dict[str, set[int | None]] = {}
    done: list[tuple[int, Attempt]] = []
    for r in records:
        model, state = r.model, r.state
        if state == "loading":
            open_.setdefault(model, []).append((r, frozenset(serving.get(model, ()))))
        elif state in ("loaded", "failed"):
            pending = open_.get(model, [])
            match = next((p for p in pending if r.version in (None, p[0].version)), None)
            if match is not None:
                pending.remove(match)
                begun, was = match
                version = begun.version
                if state == "loaded":  # older loads of it ended too (a restart cut them off)
                    pending[:] = [p for p in pending if r.version not in (None, p[0].version)]
            elif state == "failed" and (r.detail or r.version is not None):
                begun, was, version = None, frozenset(serving.get(model, ())), r.version
            else:
                continue  # the bare summary line, or a load begun before the window
            done.append((begun.header.at_ns if begun else r.header.at_ns, _attempt(r, begun, was)))
            if state == "loaded":
                serving.setdefault(model, set()).add(version)
        elif state == "unloaded":
            serving.get(model, set()).discard(r.version)
    for model, pending in open_.items():
        for begun, was in pending:
            done.append((begun.header.at_ns, Attempt(model, begun.version, begun, None, was)))
    return [a for _, a in sorted(done, key=lambda d: d[0])]


def _attempt(
    end: ev.ModelStateChange, begun: ev.ModelStateChange | None, was: frozenset[int | None]
) -> Attempt:
    version = begun.version if begun is not None else end.version
    return Attempt(end.model, version, begun, end, was)


def served_since(window_prepared: Iterable[ev.RequestPrepared], model: str, at_ns: int) -> int:
    """Requests to ``model`` admitted after ``at_ns`` (verbose log: 0 without it)."""
    return sum(1 for p in window_prepared if p.model == model and p.header.at_ns > at_ns)


def clock(at_ns: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(at_ns / 1e9)) + " UTC"


def state_line(rec: ev.ModelStateChange) -> str:
    """A failure's log message as Triton wrote it (the parser splits the line in two)."""
    if rec.version is None and rec.detail:
        return f"Poll failed for model directory '{rec.model}': {rec.detail}"
    if rec.version is not None:
        return f"failed to load '{rec.model}' version {rec.version}: {rec.detail}"
    return f"failed to load '{rec.model}': {rec.detail}"
