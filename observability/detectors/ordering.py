"""Responses held in order behind a batch that never returns (``preserve_ordering``).

Why: a dynamic batcher with ``preserve_ordering: true`` sends a model's responses in the order
its requests came. When one batch never returns, every request that came after it is executed
by the model's other instances and released, and its response is still never sent: Triton
keeps it until the batch in front of it has answered. The log shows those requests released
in milliseconds (``released 1 requests``, ``EXECUTING to RELEASED``), and nothing after; their
clients time out (dq_child_hang_in_batch: the bulk client's requests straight to dq_rank, run
on dq_rank_0_0 in 30 ms each while dq_rank_0_1's batch of 6 hung, got no response; the same
fault without ``preserve_ordering`` left them answered to the end). A detector that reads
executions sees one stuck batch, the BLS call of a stuck caller, and reports the caller; the
model's own clients, held by the ordering, are owed a finding too.

The setting is read from the model's config as the python backend logs it at load
(``ModelConfig.preserve_ordering``, ``--log-verbose 1``); a model whose config the window does
not have is not judged. Pure over the window's instance lifecycles.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.instances import Admitted, Execution, instances_of
from observability.detectors.window import Window

__all__ = ["HeldResponses", "held_responses", "ordered_models"]


@dataclass(frozen=True)
class HeldResponses:
    """Requests of an ordered model released after ``behind`` began and answered to no one."""

    model: str
    behind: Execution
    """The batch that never returned, the oldest of the model's stuck ones."""
    held: tuple[Admitted, ...]
    """The requests that came after its requests and were released, oldest first."""
    config: ev.ModelConfig
    since_ns: int
    """When its last request came (its start, where none is known): what came after waits."""

    @property
    def released(self) -> list[Execution]:
        """The batches that released them, in order."""
        out: list[Execution] = []
        for r in self.held:
            if r.execution is not None and not any(r.execution is e for e in out):
                out.append(r.execution)
        return out


def ordered_models(window: Window) -> dict[str, ev.ModelConfig]:
    """Model -> its config as last logged, for the models whose batcher keeps order."""
    latest = {c.model: c for c in window.logs(ev.ModelConfig)}
    return {m: c for m, c in latest.items() if c.preserve_ordering}


def held_responses(window: Window, stuck: Iterable[Execution]) -> list[HeldResponses]:
    """For each ordered model with a stuck batch (``waits.py``), the requests that came after
    that batch's requests and were released since: each one's response waits on the batch."""
    ordered = ordered_models(window)
    if not ordered:
        return []
    oldest: dict[str, Execution] = {}
    for e in stuck:
        if e.model in ordered and (e.model not in oldest or e.start_ns < oldest[e.model].start_ns):
            oldest[e.model] = e
    out = []
    for model, behind in sorted(oldest.items()):
        came = max((r.prepared_ns for r in behind.requests), default=behind.start_ns)
        held = sorted(
            (
                r
                for x in instances_of(window).executions
                if x.model == model and x is not behind and x.end_ns is not None and not x.died
                for r in x.requests
                if r.prepared_ns > came
            ),
            key=lambda r: r.prepared_ns,
        )
        if held:
            out.append(HeldResponses(model, behind, tuple(held), ordered[model], came))
    return out
