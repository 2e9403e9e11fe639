"""target_down on a real Triton stopped mid-collection; the twin is the same run before it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from observability.collect import CollectConfig, CollectRunner
from observability.detectors import Window
from observability.detectors.target_down import TargetDown
from observability.findings import Severity
from observability.store import Store


@dataclass(frozen=True)
class Outage:
    store: Path
    since_ns: int
    stopped_ns: int
    until_ns: int


def _fewest_down_scrapes(store: Path) -> int:
    """Failed scrapes of the target with the fewest (the collectors back off exponentially)."""
    down: dict[str, int] = {}
    with Store(store, readonly=True) as s:
        for x in s.scrapes():
            down[x.target] = down.get(x.target, 0) + (not x.up)
    return min(down.values(), default=0)


@pytest.fixture(scope="module")
def outage(
    lab_factory: Callable[..., object],
    echo_repository: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Outage:
    """Collect from a real lab every 0.2 s, stop the lab mid-way, keep collecting a while."""
    lab = lab_factory(echo_repository, name="target-down", exit_timeout_s=5)
    store = tmp_path_factory.mktemp("target-down") / "store.db"
    runner = CollectRunner(
        CollectConfig(
            store=store,
            url=lab.http_url,  # type: ignore[attr-defined]
            metrics_url=lab.metrics_url,  # type: ignore[attr-defined]
            interval_s=0.2,
        )
    )
    thread = threading.Thread(target=runner.run, kwargs={"duration_s": 120}, daemon=True)
    since_ns = time.time_ns()
    thread.start()
    try:
        time.sleep(2.0)  # a few good scrapes first
        stopped_ns = time.time_ns()
        lab.stop()  # type: ignore[attr-defined]
        for _ in range(100):  # bounded: until each target has 4 failed scrapes stored
            if _fewest_down_scrapes(store) >= 4:
                break
            time.sleep(0.2)
    finally:
        runner.stop()
        thread.join(timeout=30)
    return Outage(store, since_ns, stopped_ns, time.time_ns())


def _window(outage: Outage, until_ns: int) -> Window:
    return Window(outage.since_ns, until_ns, store=Store(outage.store, readonly=True))


def test_stopped_triton_is_down(outage: Outage) -> None:
    findings = TargetDown().detect(_window(outage, outage.until_ns))
    assert len(findings) == 1, [f.to_dict() for f in findings]
    found = findings[0]
    assert found.severity is Severity.CRITICAL
    assert found.model == ""  # the server, not a model
    assert found.first_seen_ns >= outage.stopped_ns
    assert {e.source for e in found.evidence} == {"metrics", "stats"}
    assert all("errors:" in e.detail for e in found.evidence)  # the collector's own words


def test_running_triton_is_not_down(outage: Outage) -> None:
    window = _window(outage, outage.stopped_ns)
    assert any(s.up for s in window.scrapes)
    assert TargetDown().detect(window) == []
