"""Poll ``/v2/models/stats`` with a timeout; a server that is gone is a down event, not an error.

Why urllib and not tritonclient: the answer is plain JSON and ``tritonclient`` is an
optional dependency (the ``lab`` extra); the collector must run wherever the store does.
Every ``collect()`` returns one ``ScrapeStatus`` first, then the stats it could parse.
A body that is not stats at all makes the scrape down (with the parse error); single bad
model entries are skipped and counted while the rest are kept.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from collectors.base import Batch, Collector, Health
from collectors.stats.parser import StatsParseError, parse_model_stats_lenient
from observability.events import ModelStats, ScrapeStatus

__all__ = ["StatsCollector", "StatsScrape", "stats_url"]


def stats_url(url: str) -> str:
    """``http://h:p`` (the server) or a full ``.../v2/models/stats`` URL, to the stats URL."""
    url = url.rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url if url.endswith("/stats") else url + "/v2/models/stats"


@dataclass(frozen=True, slots=True)
class StatsScrape:
    status: ScrapeStatus
    stats: tuple[ModelStats, ...]
    body: bytes
    """The answer exactly as received (for bundles: ``stats/<unix_ms>.json``); empty when down."""
    problems: tuple[str, ...] = ()


class StatsCollector(Collector):
    """``collect()`` → one batch: the scrape's status, then one ``ModelStats`` per version."""

    signal = "stats"

    def __init__(
        self,
        url: str,
        timeout_s: float = 5.0,
        clock: Callable[[], int] = time.time_ns,
        max_body_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.url = stats_url(url)
        self.target = f"stats {self.url}"
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes
        self._clock = clock
        self.skipped_entries = 0
        self.answers = 0
        self._last: ScrapeStatus | None = None

    def health(self) -> Health:
        last = self._last
        up = last is None or last.up
        error = "" if last is None else last.error
        skipped = {"entry": self.skipped_entries} if self.skipped_entries else {}
        return Health(up, error, self.answers, skipped)

    def scrape(self) -> StatsScrape:
        at_ns = self._clock()
        started = time.monotonic()

        def down(error: str, body: bytes = b"") -> StatsScrape:
            status = ScrapeStatus(at_ns, self.target, False, time.monotonic() - started, error)
            return StatsScrape(status, (), body)

        try:
            request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                body = resp.read(self.max_body_bytes + 1)
        except urllib.error.HTTPError as err:
            return down(f"HTTP {err.code} {err.reason}")
        except (OSError, ValueError) as err:  # URLError, timeouts, resets, bad URLs
            reason = getattr(err, "reason", None) or err
            return down(f"{type(err).__name__}: {reason}")
        if len(body) > self.max_body_bytes:
            return down(f"answer larger than {self.max_body_bytes} bytes")
        try:
            parsed = parse_model_stats_lenient(body, at_ns)
        except StatsParseError as err:
            return down(f"parse: {err}", body)
        self.skipped_entries += len(parsed.problems)
        self.answers += 1
        status = ScrapeStatus(at_ns, self.target, True, time.monotonic() - started)
        return StatsScrape(status, parsed.stats, body, parsed.problems)

    def collect(self) -> list[Batch]:
        result = self.scrape()
        self._last = result.status
        events: list[ScrapeStatus | ModelStats] = [result.status, *result.stats]
        return [Batch("", events)]
