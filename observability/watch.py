"""``triton-obs watch``: collectors and detectors live; each new finding printed as it appears.

The collector thread owns the store's writer; detection runs on its own read-only connection
every ``detect_interval_s`` over the last ``lookback_s``, saves the findings (resolved ones are
marked inactive) and refreshes the exporter's gauges.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from observability.collect import CollectConfig, CollectRunner
from observability.detectors import Window, run_detectors
from observability.detectors.registry import default_detectors
from observability.exporters.prometheus import FindingsExporter
from observability.findings import Finding
from observability.store import Store, StoreError

__all__ = ["WatchConfig", "Watcher"]


@dataclass
class WatchConfig:
    collect: CollectConfig
    detect_interval_s: float = 2.0
    lookback_s: float = 600.0
    settings: dict[str, object] = field(default_factory=dict)
    """Detector settings by field name, e.g. ``{"deadline_s": 5}``."""


class Watcher:
    def __init__(self, cfg: WatchConfig) -> None:
        self.cfg = cfg
        self.runner = CollectRunner(cfg.collect)
        self.exporter = FindingsExporter(self.runner.metrics.registry)
        self.detectors = default_detectors(**cfg.settings)
        self.known: dict[tuple[str, str, str | None, str | None], Finding] = {}
        self.passes = 0
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()
        self.runner.stop()

    def detect_once(self, now_ns: int | None = None) -> list[Finding]:
        """One detection pass; returns the findings that are new since the last pass."""
        now_ns = now_ns if now_ns is not None else time.time_ns()
        with Store(self.cfg.collect.store, readonly=True) as reader:
            now_ns = self._horizon_ns(reader, now_ns)
            window = Window(
                since_ns=now_ns - int(self.cfg.lookback_s * 1e9), until_ns=now_ns, store=reader
            )
            findings = run_detectors(self.detectors, window)
            self.exporter.update(findings, window)
        with Store(self.cfg.collect.store) as writer:
            writer.save_findings(findings)
        new = [f for f in findings if f.key not in self.known]
        self.known = {
            f.key: self.known[f.key].merged(f) if f.key in self.known else f for f in findings
        }
        self.passes += 1
        return new

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
    ) -> None:
        self.runner.start_servers()
        collector = threading.Thread(
            target=self.runner.run, kwargs={"duration_s": duration_s}, name="collect", daemon=True
        )
        collector.start()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        try:
            while not self._stop.wait(self.cfg.detect_interval_s) and collector.is_alive():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                try:
                    for finding in self.detect_once():
                        if on_new is not None:
                            on_new(finding)
                except StoreError as err:
                    if on_error is not None:
                        on_error(str(err))
        finally:
            self.runner.stop()
            collector.join(timeout=30)
