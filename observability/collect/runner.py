"""``triton-obs collect``: every collector live, one loop, one store writer.

One thread owns the store (SQLite wants one writer); the OTLP receiver has its own HTTP
threads and hands spans over through its bounded queue. A full disk makes writes fail: the
runner says so, keeps running, and retries the same batches when space returns (bounded:
the oldest are dropped and counted beyond ``max_pending``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from collectors.logs.collector import LogCollector
from collectors.metrics.collector import MetricsCollector
from collectors.stats.collector import StatsCollector
from collectors.traces.collector import TraceFileCollector
from observability import events as ev
from observability.collect.selfmetrics import SelfMetrics, serve
from observability.store import Store, StoreError, StoreFullError

__all__ = ["CollectConfig", "CollectRunner"]

log = logging.getLogger(__name__)


@dataclass
class CollectConfig:
    store: Path
    url: str | None = None
    metrics_url: str | None = None
    log: Path | None = None
    trace: Path | None = None
    otlp_port: int | None = None
    """Start an OTLP/HTTP receiver on 127.0.0.1:PORT (0 picks a free port)."""
    metrics_port: int | None = None
    """Serve our own /metrics on 127.0.0.1:PORT (0 picks a free port)."""
    host: str = "127.0.0.1"
    """Where both servers listen; anything but loopback is logged as a warning."""
    interval_s: float = 1.0
    log_interval_s: float = 0.25
    checkpoint: Path | None = None
    """Where the log tailer keeps its position; default: beside the store."""
    retention_max_age_s: float | None = 7 * 24 * 3600
    retention_max_bytes: int | None = 2 * 1024**3
    max_pending: int = 200
    log_utc_offset_s: int = 0


@dataclass
class _Pending:
    part: str
    source: str
    events: list[object]
    commit: Callable[[], None] | None = None


@dataclass
class RunnerState:
    cycles: int = 0
    stored: dict[str, int] = field(default_factory=dict)
    store_full: bool = False
    dropped_batches: int = 0
    last_error: str = ""


class CollectRunner:
    def __init__(self, cfg: CollectConfig, metrics: SelfMetrics | None = None) -> None:
        self.cfg = cfg
        self.metrics = metrics or SelfMetrics()
        self.state = RunnerState()
        self.store = Store(cfg.store)
        self.metrics_port: int | None = None
        self.otlp_url: str | None = None
        self._pending: deque[_Pending] = deque()
        self._stop = threading.Event()
        self._log: LogCollector | None = None
        self._scrapers: list[MetricsCollector | StatsCollector] = []
        self._traces: TraceFileCollector | None = None
        self._otlp = None
        self._lines_seen = 0
        self._skipped_seen: dict[str, int] = {}
        self.on_stored: Callable[[str, list[object]], None] | None = None
        """Told of each batch once it is in the store (``watch`` feeds its live window)."""
        self._subscriber_failed = False
        if cfg.metrics_url:
            self._scrapers.append(MetricsCollector(cfg.metrics_url))
        if cfg.url:
            self._scrapers.append(StatsCollector(cfg.url))
        if cfg.log:
            checkpoint = cfg.checkpoint or cfg.store.with_name(cfg.store.name + ".tail.json")
            self._log = LogCollector(cfg.log, checkpoint, cfg.log_utc_offset_s)
        if cfg.trace:
            self._traces = TraceFileCollector(cfg.trace)

    # -- lifecycle ---------------------------------------------------------------------
    def start_servers(self) -> None:
        """Idempotent: ``run()`` calls it too."""
        if self.cfg.metrics_port is not None and self.metrics_port is None:
            self.metrics_port = serve(self.metrics, self.cfg.metrics_port, self.cfg.host)
        if self.cfg.otlp_port is not None and self._otlp is None:
            from collectors.otlp import OtlpReceiver

            self._otlp = OtlpReceiver(self.cfg.host, self.cfg.otlp_port).start()
            self.otlp_url = self._otlp.url

    def stop(self) -> None:
        self._stop.set()

    def behind(self, lag_bytes: int = 1 << 20) -> bool:
        """Whether the store lags what the sources already said: the disk is full, batches
        wait, or the log has more than ``lag_bytes`` unread (a restart catching up)."""
        if self.state.store_full or len(self._pending) > self.cfg.max_pending // 4:
            return True
        return self._log is not None and self._log.lag_bytes() > lag_bytes

    def close(self) -> None:
        if self._otlp is not None:
            self._otlp.stop()
        if self._log is not None:
            self._log.close()
        self.store.close()

    def run(
        self, duration_s: float | None = None, on_cycle: Callable[[], None] | None = None
    ) -> None:
        """Collect until ``stop()`` or ``duration_s``; each signal on its own interval."""
        self.start_servers()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        next_scrape = next_log = next_housekeeping = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if now >= next_scrape:
                    self._step(self._scrape)
                    next_scrape = now + self.cfg.interval_s
                if now >= next_log:
                    self._step(self._read_files)
                    next_log = now + self.cfg.log_interval_s
                self._step(self._flush)
                if now >= next_housekeeping:
                    self._step(self._housekeeping)
                    next_housekeeping = now + 30
                self.state.cycles += 1
                self.metrics.last_cycle.set_to_current_time()
                if on_cycle is not None:
                    on_cycle()
                self._stop.wait(min(self.cfg.log_interval_s, self.cfg.interval_s))
            self._read_files()
            self._flush()
        finally:
            self.close()

    # -- one cycle ---------------------------------------------------------------------
    def _step(self, step: Callable[[], None]) -> None:
        """One part of a cycle. An error nobody planned for is logged (once per message) and
        the loop goes on: the soak's hour found retention meeting a full disk, and the
        collector thread died of it while ``watch`` kept printing old findings."""
        try:
            step()
        except Exception as err:
            if self.state.last_error != f"{step.__name__}: {err}":
                log.exception("collector step %s failed; continuing", step.__name__)
            self.state.last_error = f"{step.__name__}: {err}"
            self.metrics.store_errors.labels("error").inc()

    def _queue(self, part: str, events: list[object], source: str = "", commit=None) -> None:
        if len(self._pending) >= self.cfg.max_pending:
            self._pending.popleft()
            self.state.dropped_batches += 1
            self.metrics.store_errors.labels("dropped_batch").inc()
        self._pending.append(_Pending(part, source, events, commit))

    def _scrape(self) -> None:
        for scraper in self._scrapers:
            events = scraper.collect()
            signal = "metrics" if isinstance(scraper, MetricsCollector) else "stats"
            for e in events:
                if isinstance(e, ev.ScrapeStatus):
                    self.metrics.target_up.labels(signal).set(1 if e.up else 0)
                    if not e.up:
                        self.metrics.scrape_failures.labels(signal).inc()
            if events:
                self._queue(signal, list(events))

    def _read_files(self) -> None:
        # Backpressure: while the store cannot keep up (or is full), files wait on disk
        # instead of piling up in memory; the tail lag shows it.
        if self.state.store_full or len(self._pending) > self.cfg.max_pending // 2:
            if self._log is not None:
                self.metrics.tail_lag_bytes.set(self._log.lag_bytes())
            return
        if self._log is not None:
            for source, events in self._log.collect():
                self._queue("log", list(events), source)
            self._queue("log", [], "", self._log.commit)
            self.metrics.tail_lag_bytes.set(self._log.lag_bytes())
            self._count_log_stats()
        if self._traces is not None:
            spans = self._traces.collect()
            if spans:
                self._queue("traces", list(spans), f"{self.cfg.trace}")
        if self._otlp is not None:
            spans = self._otlp.collect()
            if spans:
                self.metrics.otlp_spans.inc(len(spans))
                self._queue("otlp", list(spans))

    def _count_log_stats(self) -> None:
        assert self._log is not None
        stats = self._log.stats
        if stats.lines > self._lines_seen:
            self.metrics.log_lines_read.inc(stats.lines - self._lines_seen)
        self._lines_seen = stats.lines
        for reason, count in stats.skipped.items():
            seen = self._skipped_seen.get(reason, 0)
            if reason != "info" and count > seen:
                self.metrics.log_lines_skipped.labels(reason).inc(count - seen)
        self._skipped_seen = dict(stats.skipped)

    def _flush(self) -> None:
        while self._pending:
            batch = self._pending[0]
            try:
                if batch.events:
                    result = self.store.write(batch.events, source=batch.source)
                    self.state.stored[batch.part] = (
                        self.state.stored.get(batch.part, 0) + result.inserted
                    )
                    self.metrics.events_stored.labels(batch.part).inc(result.inserted)
                    if result.rejected:
                        self.metrics.store_errors.labels("rejected").inc(result.rejected)
            except StoreFullError as err:
                if not self.state.store_full:
                    log.error("store is full, holding batches until space returns: %s", err)
                self.state.store_full = True
                self.state.last_error = str(err)
                self.metrics.store_errors.labels("full").inc()
                return
            except StoreError as err:
                if self.state.last_error != str(err):
                    log.error("store write failed, retrying: %s", err)
                self.state.last_error = str(err)
                self.metrics.store_errors.labels("error").inc()
                return
            if self.state.store_full:
                log.warning("store writable again")
                self.state.store_full = False
            self._pending.popleft()
            if batch.commit is not None:
                batch.commit()
            if self.on_stored is not None and batch.events:
                try:
                    self.on_stored(batch.source, batch.events)
                except Exception:  # a subscriber's bug must never stop collection
                    if not self._subscriber_failed:
                        log.exception("on_stored subscriber failed (logged once)")
                    self._subscriber_failed = True

    def _housekeeping(self) -> None:
        try:
            self.store.apply_retention(
                max_age_s=self.cfg.retention_max_age_s, max_bytes=self.cfg.retention_max_bytes
            )
        except StoreError as err:
            if self.state.last_error != str(err):
                log.error("store retention failed, will retry: %s", err)
            self.state.last_error = str(err)
        self.metrics.store_bytes.set(self.store.size_bytes())
