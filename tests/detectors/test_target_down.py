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


def test_a_scrape_the_server_refuses_is_not_an_outage() -> None:
    """pt_healthy_guarded (tests/fixtures/foreign): PyTriton's default security answers every
    /v2/models/stats scrape with 403 while /metrics and the log show it serving. Triton
    answered: not down. The coverage notes say the stats were refused."""
    from observability import events as ev
    from tests.foreign.parsed import analysis

    result = analysis("pt_healthy_guarded")
    assert [f for f in result.findings if f.severity.rank] == []
    assert result.coverage is not None
    assert any("refused every scrape (HTTP Error 403" in n for n in result.coverage.lines())
    refused = [
        ev.ScrapeStatus(i * 1_000_000_000, "stats http://x/v2/models/stats", False, 0.01, e)
        for i, e in enumerate(["HTTP Error 403: Forbidden"] * 5 + ["timed out"] * 5)
    ]
    (down,) = TargetDown().detect(Window(0, 10_000_000_000, events=refused))
    assert "5 consecutive scrapes" in down.summary and "timed out" in down.summary
