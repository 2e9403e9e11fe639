"""The ``--faults`` and ``--fault-params`` mini-languages: good specs and a table of bad ones."""

from __future__ import annotations

import random

import pytest

from observability.load.faults import FAULTS, FaultSpecError, parse_faults, parse_params
from observability.load.report import percentile
from observability.load.workload import plan_request


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", {}),
        ("hang=0.02", {"hang": 0.02}),
        ("hang=0.02, slow=0.1", {"hang": 0.02, "slow": 0.1}),
        ("cold_start=1,deadlock=0", {"cold_start": 1.0, "deadlock": 0.0}),
        ("shape_growth", {"shape_growth": 1.0}),
    ],
)
def test_good_fault_specs(spec: str, expected: dict[str, float]) -> None:
    assert parse_faults(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("explode=0.1", "unknown fault 'explode'"),
        ("hang=lots", "needs a number"),
        ("hang=1.5", "not a probability"),
        ("hang=-0.1", "not a probability"),
        ("hang=nan", "not a probability"),
        ("hang=0.6,slow=0.6", "add up to 1.2"),
        ("hang=0.1,hang=0.2", "given twice"),
    ],
)
def test_bad_fault_specs(spec: str, message: str) -> None:
    with pytest.raises(FaultSpecError, match=message):
        parse_faults(spec)


def test_fault_params() -> None:
    assert parse_params("hang_s=30, slow_s=0.5") == {"hang_s": "30", "slow_s": "0.5"}
    for bad in ("hang_s", "=3", "hang_s=soon"):
        with pytest.raises(FaultSpecError):
            parse_params(bad)


def test_plan_uses_fault_probabilities_and_entry_models() -> None:
    rng = random.Random(7)
    plans = [plan_request(i, rng, "t", {"hang": 0.5}, {"hang_s": "9"}) for i in range(400)]
    hung = [p for p in plans if p.fault == "hang"]
    assert 150 < len(hung) < 250
    assert all(p.model == FAULTS["hang"].entry_model for p in hung)
    assert all(p.parameters == {"fault": "hang", "hang_s": "9"} for p in hung)
    healthy = [p for p in plans if not p.fault]
    assert all(p.parameters == {} for p in healthy)
    assert {p.model for p in healthy} == {"router", "pipeline", "generate", "stream"}
    assert len({p.request_id for p in plans}) == 400


def test_percentile() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 99) == 99.0
