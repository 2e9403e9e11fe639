"""``--rate`` paces an open-loop load on the real lab: evenly spaced, never a burst."""

from __future__ import annotations

import itertools

import pytest

from observability.lab import TritonLab
from observability.load import LoadConfig, Outcome, run_load

pytestmark = pytest.mark.lab


def test_rate_spaces_the_requests(triton_lab: TritonLab) -> None:
    outcomes: list[Outcome] = []
    cfg = LoadConfig(
        url=triton_lab.grpc_url, concurrency=4, requests=1000, duration_s=2.0, rate_per_s=10,
        run_tag="rate",
    )  # fmt: skip
    run_load(cfg, on_outcome=outcomes.append)
    starts = sorted(o.started for o in outcomes)
    assert 15 <= len(starts) <= 21  # 2 s at 10/s; 4 workers could have sent ~100 unpaced
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert sum(g < 0.05 for g in gaps) <= 2, gaps  # no burst of back-to-back sends


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rate"):
        LoadConfig(url="x", rate_per_s=0).validate()
