"""What the load tool sends: the demo pipeline's entry models, inputs and fault parameters.

Inputs are random but small and deterministic per seed; they are never logged or stored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from observability.load.faults import FAULTS

__all__ = ["HEALTHY_MIX", "STREAMING", "PlannedRequest", "inputs_for", "plan_request"]

HEALTHY_MIX: tuple[tuple[str, float], ...] = (
    ("router", 0.65),
    ("pipeline", 0.15),
    ("generate", 0.15),
    ("stream", 0.05),
)
"""Entry models of healthy traffic and their shares."""

STREAMING: frozenset[str] = frozenset({"stream"})
"""Decoupled models: a request to one is a stream of responses (``TritonClient.stream``)."""


@dataclass(frozen=True)
class PlannedRequest:
    index: int
    request_id: str
    model: str
    fault: str
    inputs: dict[str, np.ndarray] = field(repr=False)
    parameters: dict[str, str]


def inputs_for(model: str, rng: random.Random, max_tokens: int = 8) -> dict[str, np.ndarray]:
    if model in ("router", "pipeline"):
        values = [rng.random() for _ in range(16)]
        return {"RAW": np.asarray(values, dtype=np.float32)}
    if model in ("generate", "stream"):
        prompt = [rng.randrange(1, 32000) for _ in range(4)]
        return {
            "PROMPT_IDS": np.asarray(prompt, dtype=np.int64),
            "MAX_TOKENS": np.asarray([max_tokens], dtype=np.int32),
        }
    raise ValueError(f"the load tool does not know how to call model {model!r}")


def plan_request(
    index: int,
    rng: random.Random,
    run_tag: str,
    faults: dict[str, float],
    fault_params: dict[str, str],
) -> PlannedRequest:
    """Pick this request's fault (or none) and its entry model."""
    fault = ""
    draw = rng.random()
    for name, prob in faults.items():
        if not FAULTS[name].per_request:
            continue
        if draw < prob:
            fault = name
            break
        draw -= prob
    if fault:
        model = FAULTS[fault].entry_model
    else:
        pick = rng.random()
        model = HEALTHY_MIX[-1][0]
        for name, share in HEALTHY_MIX:
            if pick < share:
                model = name
                break
            pick -= share
    parameters = {"fault": fault, **fault_params} if fault else {}
    return PlannedRequest(
        index=index,
        request_id=f"{run_tag}-{index:06d}",
        model=model,
        fault=fault,
        inputs=inputs_for(model, rng),
        parameters=parameters,
    )
