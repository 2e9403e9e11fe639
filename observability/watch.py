"""``triton-obs watch``: collectors and detectors live; each new finding printed as it appears.

The collector thread owns the store's writer and hands each stored batch to a
:class:`~observability.detectors.live.LiveWindow`; every ``detect_interval_s`` the detectors
run over it (``evidence_s`` of signals plus what is still open), the findings are saved
(resolved ones marked inactive) and the exporter's gauges refreshed. A finding stays active
until ``lookback_s`` after it was last seen, unless the detectors saw it resolve; a deadlock
stays while the batch that holds it runs (:func:`still_held`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from observability.collect import CollectConfig, CollectRunner
from observability.detectors import run_detectors
from observability.detectors.base import DetectorFailure, detector_kind
from observability.detectors.live import LiveWindow
from observability.detectors.registry import default_detectors
from observability.detectors.signals import Coverage, coverage
from observability.detectors.window import Window
from observability.detectors.work import ModelWork, in_flight
from observability.exporters.prometheus import FindingsExporter
from observability.findings import Finding
from observability.store import Store, StoreError

__all__ = ["HELD_AFTER_PASSES", "WatchConfig", "WatchView", "Watcher", "still_held"]


HELD_AFTER_PASSES = 3
"""Passes a deadlock must have been seen in before it is held (``still_held``). A hang that
outlives the evidence window can read as a deadlock for one pass where no pass learned its
model's calls while its healthy batches were in the window (a watch restarted later:
doc_extract_hang with 8 s or 20 s of evidence and no learning, one pass each); a deadlock is
seen for as long as its queued calls stay in the window, a pass every two seconds."""


def still_held(finding: Finding, work: list[ModelWork], now_ns: int) -> bool:
    """A deadlock not seen this pass whose holding batch still runs: it lasts.

    A deadlock is read from its queued calls, which leave the evidence window while the
    deadlock lasts for good (what its models call is remembered, ``LiveWindow.learn``; the
    queued requests are not): every deadlock of the corpus fed through the live window with
    20 s of evidence read as a plain hang at its end, and ``watch`` resolved it
    ``lookback_s`` later. It ends only when the batch holding its model's instance
    (``Finding.instance``) does: while that instance still runs a batch begun before the
    deadlock was first seen, the deadlock is still there."""
    if finding.kind != "bls_deadlock" or not finding.instance:
        return False
    return any(
        i.instance == finding.instance and now_ns - i.age_s * 1e9 <= finding.first_seen_ns
        for m in work
        for i in m.busy
    )


def until_next_pass(interval_s: float, deadline: float | None) -> float:
    """A ``--duration`` shorter than the detection interval ends on time: the wait is cut at
    the deadline (``watch --duration 0.5`` took 2 s, the default interval)."""
    if deadline is None:
        return interval_s
    return max(0.0, min(interval_s, deadline - time.monotonic()))


@dataclass
class WatchConfig:
    collect: CollectConfig
    detect_interval_s: float = 2.0
    lookback_s: float = 600.0
    """How long a finding stays active after it was last seen, and how far back a request
    still open is followed."""
    evidence_s: float = 120.0
    """How much of every signal the detectors read on each pass (see ``LiveWindow``)."""
    settings: dict[str, object] = field(default_factory=dict)
    """Detector settings by field name, e.g. ``{"deadline_s": 5}``."""
    name: str = "triton"
    """The target's name: the API's ``?target=``, the ``target`` label of a fleet."""
    labels: dict[str, str] = field(default_factory=dict)
    """Bounded labels of the target (``namespace``, ``pod``) beside its name."""
    max_records: int = 600_000
    """The live window's bound on records (memory: ~0.4 KiB each)."""
    api: bool = True
    """Serve the read-only API (``observability/api.py``) under ``/api/`` beside /metrics."""


@dataclass(frozen=True)
class WatchView:
    """What the last detection pass saw, replaced whole after each (the API reads it from
    its own threads; nothing in it is changed after)."""

    at_ns: int
    findings: tuple[Finding, ...]
    """Active ones: seen this pass, or aged out of the window within ``lookback_s``."""
    work: tuple[ModelWork, ...]
    window: Window


class Watcher:
    def __init__(self, cfg: WatchConfig) -> None:
        self.cfg = cfg
        self.runner = CollectRunner(cfg.collect)
        self.exporter = FindingsExporter(self.runner.metrics.registry)
        # ``**settings`` could fill ``kinds``: until default_detectors makes it positional-only.
        self.detectors = default_detectors(**cfg.settings)  # type: ignore[arg-type]
        self.exporter.detectors([detector_kind(d) for d in self.detectors])
        self.live = LiveWindow(cfg.evidence_s, cfg.lookback_s, cfg.max_records)
        self.live.log_read = cfg.collect.log is not None
        self.runner.on_stored = self.live.add
        self.known: dict[tuple[str, str, str | None, str | None], Finding] = {}
        self.passes_seen: dict[tuple[str, str, str | None, str | None], int] = {}
        """Passes in which the detectors saw each known finding (``still_held`` asks)."""
        self.passes = 0
        self.coverage: Coverage | None = None
        """The signals of the last pass's window and the kinds it was blind to."""
        self.work: list[ModelWork] = []
        """Work in flight per model and instance at the last pass."""
        self.view: WatchView | None = None
        """The last pass, for the API."""
        self._stop = threading.Event()
        if cfg.api:
            from observability.api import ApiApp

            self.runner.api = ApiApp(lambda: [self])

    @property
    def name(self) -> str:
        return self.cfg.name

    def stop(self) -> None:
        self._stop.set()
        self.runner.stop()

    def detect_once(self, now_ns: int | None = None) -> list[Finding]:
        """One detection pass; returns the findings that are new since the last pass."""
        now_ns = now_ns if now_ns is not None else time.time_ns()
        with Store(self.cfg.collect.store, readonly=True) as reader:
            now_ns = self._horizon_ns(reader, now_ns)
            if not self.live.primed:
                self.live.prime(reader, now_ns)
                self.known.update((f.key, f) for f in reader.findings(active_only=True))
        window = self.live.window(now_ns)
        failed: list[DetectorFailure] = []
        seen = run_detectors(self.detectors, window, failed)
        self.live.learn(window)
        for failure in failed:
            self.exporter.detector_failed(failure.kind)
        self.coverage, self.work = coverage(window), in_flight(window)
        findings = self._still_active(seen, now_ns, self.work)
        self.exporter.update(findings, window, hung=seen, work=self.work, signals=self.coverage)
        self.view = WatchView(now_ns, tuple(findings), tuple(self.work), window)
        with Store(self.cfg.collect.store) as writer:
            writer.save_findings(findings)
        new = [f for f in seen if f.key not in self.known]
        for f in seen:
            self.known[f.key] = self.known[f.key].merged(f) if f.key in self.known else f
            self.passes_seen[f.key] = self.passes_seen.get(f.key, 0) + 1
        self.passes_seen = {k: n for k, n in self.passes_seen.items() if k in self.known}
        self.passes += 1
        return new

    def _still_active(
        self, seen: list[Finding], now_ns: int, work: list[ModelWork]
    ) -> list[Finding]:
        """This pass's findings, and the known ones whose evidence has left the window but
        were seen within ``lookback_s``: those aged out, the detectors did not see them
        resolve. One first seen inside the window and not seen now is resolved, unless what
        holds it still runs (:func:`still_held`): then it counts as seen now."""
        horizon = now_ns - int(self.cfg.evidence_s * 1e9)
        oldest = now_ns - int(self.cfg.lookback_s * 1e9)
        current = {f.key for f in seen}
        held = [
            replace(f, last_seen_ns=now_ns)
            for key, f in self.known.items()
            if key not in current
            and self.passes_seen.get(key, 0) >= HELD_AFTER_PASSES
            and still_held(f, work, now_ns)
        ]
        current |= {f.key for f in held}
        aged = [
            f
            for key, f in self.known.items()
            if key not in current and f.first_seen_ns < horizon and f.last_seen_ns >= oldest
        ]
        kept = {key: f for key, f in self.known.items() if key in current}
        self.known = kept | {f.key: f for f in [*aged, *held]}
        return [*seen, *held, *aged]

    def _horizon_ns(self, reader: Store, now_ns: int) -> int:
        """The instant detectors judge "still running" against.

        While the store lags (full disk, a restart catching up on the log) a request whose
        end is still unread would look hung: judge at the newest stored log line instead of
        the wall clock, so a collector's own trouble never becomes a finding about Triton.
        """
        if not self.runner.behind():
            return now_ns
        latest = reader.latest_log_ns()
        return now_ns if latest is None else min(now_ns, latest)

    def run(
        self,
        duration_s: float | None = None,
        on_new: Callable[[Finding], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_pass: Callable[[Watcher], None] | None = None,
    ) -> None:
        """Until ``duration_s`` or :meth:`stop`; ``on_pass`` sees the watcher after each
        detection pass (its ``coverage`` and ``work``)."""
        self.runner.start_servers()
        collector = threading.Thread(
            target=self.runner.run, kwargs={"duration_s": duration_s}, name="collect", daemon=True
        )
        collector.start()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        try:
            while (
                not self._stop.wait(until_next_pass(self.cfg.detect_interval_s, deadline))
                and collector.is_alive()
            ):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                try:
                    for finding in self.detect_once():
                        if on_new is not None:
                            on_new(finding)
                    if on_pass is not None:
                        on_pass(self)
                except StoreError as err:
                    if on_error is not None:
                        on_error(str(err))
        finally:
            self.runner.stop()
            collector.join(timeout=30)
