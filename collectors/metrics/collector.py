"""Scrape a /metrics endpoint: a page of samples when up, a down status when not.

A failed scrape is an event, never an exception: the target's up/down history is evidence
(``target_down``). After failures, attempts back off exponentially so a dead server is not
hammered, and the first success resets the pace.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable

from collectors.base import Batch, Collector, Health
from collectors.metrics.parser import parse_metrics_lenient
from observability.events import MetricsScrape, ScrapeStatus

__all__ = ["MetricsCollector"]


class MetricsCollector(Collector):
    """``collect()`` → one batch: the scrape's status, then its page when up."""

    signal = "metrics"

    def __init__(
        self,
        url: str,
        timeout_s: float = 2.0,
        max_backoff_s: float = 30.0,
        clock: Callable[[], int] = time.time_ns,
        max_body_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.url = url
        self.target = f"metrics {url}"
        self.timeout_s = timeout_s
        self.max_backoff_s = max_backoff_s
        self.max_body_bytes = max_body_bytes
        self._clock = clock
        self._failures = 0
        self._next_attempt = 0.0
        self.problems = 0
        """Lines the lenient parser skipped, over the collector's life."""
        self.pages = 0
        self._last: ScrapeStatus | None = None

    def health(self) -> Health:
        last = self._last
        up = last is None or last.up
        error = "" if last is None else last.error
        return Health(up, error, self.pages, {"line": self.problems} if self.problems else {})

    def collect(self) -> list[Batch]:
        events = self.scrape()
        if events:
            self._last = events[0]  # type: ignore[assignment]
        return [Batch("", events)] if events else []

    def scrape(self) -> list[ScrapeStatus | MetricsScrape]:
        """One attempt (none while backing off): its status, then the page when up."""
        now = time.monotonic()
        if now < self._next_attempt:
            return []
        at_ns = self._clock()
        started = time.monotonic()
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout_s) as resp:
                body = resp.read(self.max_body_bytes + 1)
            if len(body) > self.max_body_bytes:
                raise ValueError(f"page larger than {self.max_body_bytes} bytes")
        except (urllib.error.URLError, OSError, ValueError) as err:
            self._failures += 1
            delay = min(self.max_backoff_s, 0.5 * 2 ** min(self._failures, 10))
            self._next_attempt = time.monotonic() + delay
            took = time.monotonic() - started
            return [ScrapeStatus(at_ns, self.target, False, took, str(err)[:300])]
        self._failures = 0
        self._next_attempt = 0.0
        page = parse_metrics_lenient(body.decode("utf-8", errors="replace"))
        self.problems += len(page.problems)
        self.pages += 1
        samples = tuple(s for fam in page.families for s in fam.samples)
        took = time.monotonic() - started
        return [
            ScrapeStatus(at_ns, self.target, True, took),
            MetricsScrape(at_ns, self.target, samples),
        ]
