"""The demo pipeline's fault knobs, and the ``--faults`` mini-language that picks them.

A fault is chosen per request: the client sets the request parameter ``fault`` on the entry
model and the pipeline passes it down its BLS calls. ``cold_start`` is the exception: it is a
property of a model load, so the load tool reloads ``classifier`` with a lazy-initialisation
config before the run and restores it afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from observability.catalogue import FAULTS as CATALOGUE_FAULTS
from observability.catalogue import Fault

__all__ = ["FAULTS", "Fault", "FaultSpecError", "parse_faults", "parse_params"]


FAULTS: Mapping[str, Fault] = MappingProxyType(
    {knob: f for knob, f in CATALOGUE_FAULTS.items() if knob != "ensemble_fanout"}
)
"""The knobs a load can turn on (from the pathology catalogue); ``ensemble_fanout`` needs a
second, miswired server and is the demo's alone."""


class FaultSpecError(ValueError):
    """A ``--faults`` or ``--fault-params`` value that cannot be understood."""


def parse_faults(spec: str) -> dict[str, float]:
    """``"hang=0.02,slow=0.1"`` → ``{"hang": 0.02, "slow": 0.1}``.

    Per-request faults take a probability in [0, 1] and together at most 1; ``cold_start``
    takes any positive number to switch it on (the value is otherwise unused).
    """
    out: dict[str, float] = {}
    for raw in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, value = raw.partition("=")
        name = name.strip()
        if name not in FAULTS:
            raise FaultSpecError(f"unknown fault {name!r} in {spec!r}; known: {', '.join(FAULTS)}")
        if name in out:
            raise FaultSpecError(f"fault {name!r} given twice in {spec!r}")
        try:
            prob = float(value) if sep else 1.0
        except ValueError:
            raise FaultSpecError(f"fault {name!r} needs a number, got {value!r}") from None
        if prob != prob or prob < 0 or (FAULTS[name].per_request and prob > 1):
            raise FaultSpecError(f"fault {name!r}: {value!r} is not a probability in [0, 1]")
        out[name] = prob
    total = sum(p for n, p in out.items() if FAULTS[n].per_request)
    if total > 1 + 1e-9:
        raise FaultSpecError(f"fault probabilities add up to {total:g}, more than 1")
    return out


def parse_params(spec: str) -> dict[str, str]:
    """``"hang_s=30,slow_s=0.5"`` → request parameters passed with every faulty request."""
    out: dict[str, str] = {}
    for raw in filter(None, (part.strip() for part in spec.split(","))):
        key, sep, value = raw.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise FaultSpecError(f"fault parameter {raw!r} is not KEY=VALUE")
        try:
            float(value)
        except ValueError:
            raise FaultSpecError(f"fault parameter {key!r} needs a number, got {value!r}") from None
        out[key.strip()] = value.strip()
    return out
