"""Work in flight at a window's end, per model and instance, with or without request ids.

Why: the request view (``requests.py``) follows request ids, and real clients send none: the
triage app said "No request is in flight at this moment" while every instance of a model was
held. Two witnesses need no id: the instance lifecycles of the verbose log (which batch holds
which instance, since when, and what is queued per model; ``instances.py``) and
``nv_inference_pending_request_count`` on /metrics (what Triton's schedulers hold queued). Both
are shown side by side: on a Triton without ``--log-verbose`` the gauge is all there is.
"""

from __future__ import annotations

from dataclasses import dataclass

from observability.detectors.instances import instances_of
from observability.detectors.window import Window

__all__ = ["InstanceWork", "ModelWork", "in_flight"]

PENDING = "nv_inference_pending_request_count"


@dataclass(frozen=True)
class InstanceWork:
    instance: str
    batch: int
    """Requests in the batch it is executing; 0 when idle."""
    age_s: float
    """How long that batch has run."""
    request_ids: tuple[str, ...]
    """The ids among them (none for requests sent without one)."""

    @property
    def busy(self) -> bool:
        return self.batch > 0


@dataclass(frozen=True)
class ModelWork:
    model: str
    instances: tuple[InstanceWork, ...]
    """Every instance seen executing in the window, busy ones first."""
    queued: int | None
    """Requests admitted and not yet executing, from the log (``None``: no instance lines)."""
    oldest_queued_s: float | None
    pending: float | None
    """The pending gauge at the last scrape (``None``: no /metrics)."""

    @property
    def busy(self) -> list[InstanceWork]:
        return [i for i in self.instances if i.busy]

    @property
    def oldest_s(self) -> float:
        """The age of the oldest work of the model: a batch running or a request queued."""
        ages = [i.age_s for i in self.busy]
        if self.oldest_queued_s is not None:
            ages.append(self.oldest_queued_s)
        return max(ages, default=0.0)

    @property
    def active(self) -> bool:
        return bool(self.busy or self.queued or self.pending)


def in_flight(window: Window) -> list[ModelWork]:
    """Every model with work in flight or instances seen, oldest work first."""
    now = window.until_ns
    inst = instances_of(window)
    pending = _pending(window)
    out = []
    for model in sorted(set(inst.model_instances) | set(pending)):
        rows = []
        for name in sorted(inst.model_instances.get(model, ())):
            e = inst.open.get(name)
            if e is None or e.model != model:
                rows.append(InstanceWork(name, 0, 0.0, ()))
            else:
                rows.append(InstanceWork(name, e.count, e.age_s(now), tuple(e.ids)))
        rows.sort(key=lambda i: (-i.age_s, i.instance))
        queue = inst.queued.get(model, []) if model in inst.model_instances else None
        oldest = (now - queue[0].prepared_ns) / 1e9 if queue else None
        out.append(
            ModelWork(
                model,
                tuple(rows),
                None if queue is None else len(queue),
                oldest,
                pending.get(model),
            )
        )
    out.sort(key=lambda m: (not m.active, -m.oldest_s, m.model))
    return out


def _pending(window: Window) -> dict[str, float]:
    """Model -> the pending gauge at each target's last scrape, summed over versions (a
    series absent from that scrape is gone, not still pending)."""
    last: dict[str, int] = {}
    rows = window.samples(PENDING)
    for target, at, _sample in rows:
        last[target] = max(last.get(target, at), at)
    out: dict[str, float] = {}
    for target, at, sample in rows:
        if at == last[target]:
            model = sample.label("model")
            out[model] = out.get(model, 0.0) + sample.value
    return out
