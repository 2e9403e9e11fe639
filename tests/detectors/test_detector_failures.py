"""A detector that raises in ``watch`` is counted on /metrics, by detector, from 0.

``run_detectors`` skips it so the other findings still come; ``TritonObsDetectorFailing``
(dashboards/alerts/collector.rules.yml, its promtool test beside it) reads this counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from observability.collect import CollectConfig
from observability.detectors import Window
from observability.findings import Finding
from observability.watch import WatchConfig, Watcher

FAILURES = "triton_obs_detector_failures_total"


@dataclass
class _Raises:
    kind: str = "broken_kind"

    def detect(self, window: Window) -> list[Finding]:
        raise KeyError("a bug")


@pytest.mark.detector_may_raise
def test_each_failure_is_counted_by_detector_from_zero(tmp_path: Path) -> None:
    watcher = Watcher(WatchConfig(collect=CollectConfig(store=tmp_path / "store.db"), api=False))
    registry = watcher.runner.metrics.registry
    every = {getattr(d, "kind", "") for d in watcher.detectors}
    assert "hung_request" in every
    for kind in every:  # present at 0 before anything failed: increase() sees the first one
        assert registry.get_sample_value(FAILURES, {"detector": kind}) == 0
    watcher.detectors = [*watcher.detectors, _Raises()]
    for _ in range(3):
        watcher.detect_once()
    assert registry.get_sample_value(FAILURES, {"detector": "broken_kind"}) == 3
    assert registry.get_sample_value(FAILURES, {"detector": "hung_request"}) == 0
