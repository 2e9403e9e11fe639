"""What ``waits.callees`` learns on real recordings of pipelines it was not tuned on: the BLS
calls, not an ensemble's next step (``observability/detectors/waits.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from observability.analyze import _event_range
from observability.detectors import Window
from observability.detectors.instances import instances_of
from observability.detectors.waits import callees
from tests.foreign.parsed import parsed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"


def _learned(scenario: str) -> dict[str, set[str]]:
    bundle = parsed(scenario)
    offset = bundle.meta.epoch_minus_monotonic_ns
    span = _event_range(bundle.events, offset)
    assert span is not None
    window = Window(
        since_ns=span[0], until_ns=span[1], events=bundle.events, clock_offset_ns=offset
    )
    return {m: c for m, c in callees(instances_of(window)).items() if c}


@pytest.mark.parametrize(
    ("scenario", "learned"),
    [
        # an ensemble whose middle step makes BLS calls: only those are calls
        ("ocr_healthy", {"text_det": {"det_backbone"}}),
        # a pure ensemble: one step's output fans out to two steps, no BLS at all
        ("vis_healthy", {}),
        # no ensemble: a BLS router whose last call (a decoupled decoder) is fast
        ("asr_healthy", {"asr_router": {"asr_encoder", "asr_beam"}}),
        # a three-level chain: the gateway calls the planner, the planner the worker; the
        # worker's requests, admitted inside the gateway's batches too, are the planner's
        ("ch_healthy", {"ch_gateway": {"ch_planner"}, "ch_planner": {"ch_worker"}}),
        ("ch_gather_error", {"ch_gateway": {"ch_planner"}}),
        # an ensemble whose BLS step gathers a plain model and a decoupled stream
        ("rag_healthy", {"rag_orchestrator": {"rag_embed", "rag_generate"}}),
        # an async BLS gateway fanning out to a dynamically batched child, then a detokenizer
        ("xl_healthy", {"xl_gateway": {"xl_translate", "xl_detok"}}),
        # ... where the gateway's clients keep arriving while the translator's batches run:
        # a model only clients call is nobody's callee (origins.py's frontend lines)
        ("xl_translate_hang", {"xl_gateway": {"xl_translate", "xl_detok"}}),
    ],
)
def test_calls_are_learned_and_ensemble_steps_are_not(
    scenario: str, learned: dict[str, set[str]]
) -> None:
    assert _learned(scenario) == learned
