"""``triton-obs collect``: every collector live, one loop, one store writer.

The sources are :data:`~observability.collect.sources.SOURCES`, each a
:class:`~collectors.base.Collector` built from the configuration; the runner knows none of
them by name. One thread owns the store (SQLite wants one writer); the OTLP receiver has its
own HTTP threads and hands spans over through its bounded queue. A full disk makes writes
fail: the runner says so, keeps running, and retries the same batches when space returns
(bounded: the oldest are dropped and counted beyond ``max_pending``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from collectors.base import Batch, Collector
from observability.collect.config import CollectConfig
from observability.collect.selfmetrics import SelfMetrics, WsgiApp, serve
from observability.collect.sources import SOURCES, Source
from observability.store import Store, StoreError, StoreFullError

__all__ = ["CollectConfig", "CollectRunner"]  # CollectConfig: re-exported from .config

log = logging.getLogger(__name__)


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
        self.collectors: dict[str, Collector] = {}
        """The configured sources' collectors, by signal, in :data:`SOURCES` order."""
        self._sources: list[tuple[Source, Collector]] = []
        self._started = False
        self.on_stored: Callable[[str, list[object]], None] | None = None
        """Told of each batch once it is in the store (``watch`` feeds its live window)."""
        self._subscriber_failed = False
        self.api: WsgiApp | None = None
        """Served under ``/api/`` beside /metrics (``watch``'s read-only API)."""
        try:
            for src in SOURCES:
                collector = src.build(cfg)
                if collector is not None:
                    self.collectors[src.signal] = collector
                    self._sources.append((src, collector))
        except BaseException:
            self._close_collectors()
            self.store.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------
    def start_servers(self) -> None:
        """Idempotent: ``run()`` calls it too."""
        if self.cfg.metrics_port is not None and self.metrics_port is None:
            self.metrics_port = serve(
                self.metrics, self.cfg.metrics_port, self.cfg.host, api=self.api
            )
        if not self._started:
            for collector in self.collectors.values():
                collector.start()
            self._started = True
        receiver = self.collectors.get("otlp")
        self.otlp_url = getattr(receiver, "url", None)

    def stop(self) -> None:
        self._stop.set()

    def behind(self, lag_bytes: int = 1 << 20) -> bool:
        """Whether the store lags what the sources already said: the disk is full, batches
        wait, or the log has more than ``lag_bytes`` unread (a restart catching up)."""
        if self.state.store_full or len(self._pending) > self.cfg.max_pending // 4:
            return True
        return any(c.health().lag_bytes > lag_bytes for c in self.collectors.values())

    def close(self) -> None:
        self._close_collectors()
        try:
            self.store.compact()  # what waits in staged, as blocks (ten times smaller)
        except StoreError as err:
            log.warning("the store keeps staged records uncompacted: %s", err)
        self.store.close()

    def _close_collectors(self) -> None:
        for collector in self.collectors.values():
            try:
                collector.close()
            except Exception:  # one collector's failure must not leave the others open
                log.exception("closing the %s collector failed", collector.signal)

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

    def _queue(
        self,
        part: str,
        events: list[object],
        source: str = "",
        commit: Callable[[], None] | None = None,
    ) -> None:
        if len(self._pending) >= self.cfg.max_pending:
            self._pending.popleft()
            self.state.dropped_batches += 1
            self.metrics.store_errors.labels("dropped_batch").inc()
        self._pending.append(_Pending(part, source, events, commit))

    def _scrape(self) -> None:
        for src, collector in self._sources:
            if src.scraped:
                self._collect(src.signal, collector)

    def _read_files(self) -> None:
        # Backpressure: while the store cannot keep up (or is full), files wait on disk
        # instead of piling up in memory; the tail lag shows it.
        lagging = self.state.store_full or len(self._pending) > self.cfg.max_pending // 2
        for src, collector in self._sources:
            if src.scraped:
                continue
            if lagging:
                self.metrics.observe(src.signal, [], collector.health())
            else:
                self._collect(src.signal, collector)

    def _collect(self, signal: str, collector: Collector) -> None:
        """One collector's news into the pending queue; its ``commit`` rides on the last
        batch, so it runs only once everything before it is stored."""
        batches: list[Batch] = collector.collect()
        self.metrics.observe(signal, batches, collector.health())
        for n, (source, events) in enumerate(batches, start=1):
            last = n == len(batches)
            self._queue(signal, list(events), source, collector.commit if last else None)

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
