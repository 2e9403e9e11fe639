"""The polling collector: up with stats, down with the reason — never an exception."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from collectors.stats import StatsCollector, stats_url
from observability.events import ModelStats, ScrapeStatus

FIX = Path(__file__).parents[2] / "fixtures" / "stats"
BODY = (FIX / "triton_2.51_stats_after.json").read_bytes()


class _Fake(BaseHTTPRequestHandler):
    mode = "ok"

    def do_GET(self) -> None:
        if self.mode == "slow":
            time.sleep(1.0)
        status, body = {"ok": (200, BODY), "500": (500, b"oops"), "html": (200, b"<html>")}.get(
            self.mode, (200, BODY)
        )
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the slow case: the client gave up
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    _Fake.mode = "ok"
    server.shutdown()
    server.server_close()


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_stats_url_forms() -> None:
    assert stats_url("127.0.0.1:8000") == "http://127.0.0.1:8000/v2/models/stats"
    assert stats_url("http://h:1/") == "http://h:1/v2/models/stats"
    assert stats_url("http://h:1/v2/models/m/stats") == "http://h:1/v2/models/m/stats"


def test_up_returns_status_then_stats(fake: ThreadingHTTPServer) -> None:
    collector = StatsCollector(_url(fake), timeout_s=5, clock=lambda: 42)
    ((source, events),) = collector.collect()
    assert source == ""  # each record names its own target
    status = events[0]
    assert isinstance(status, ScrapeStatus) and status.up and status.at_ns == 42
    assert status.target == f"stats {_url(fake)}/v2/models/stats"
    assert len(events) == 8 and all(isinstance(e, ModelStats) and e.at_ns == 42 for e in events[1:])
    assert collector.scrape().body == BODY
    health = collector.health()
    assert health.up and health.read == 2 and not health.skipped


@pytest.mark.parametrize(
    ("mode", "error"), [("500", "HTTP 500"), ("html", "parse: not JSON"), ("slow", "timed out")]
)
def test_bad_answers_are_down(fake: ThreadingHTTPServer, mode: str, error: str) -> None:
    _Fake.mode = mode
    collector = StatsCollector(_url(fake), timeout_s=0.3)
    (status,) = collector.collect()[0].events
    assert isinstance(status, ScrapeStatus) and not status.up and error in status.error
    health = collector.health()
    assert not health.up and health.last_error == status.error and health.read == 0


def test_server_gone_is_a_down_status() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    url = _url(server)
    server.server_close()
    (status,) = StatsCollector(url, timeout_s=1).collect()[0].events
    assert isinstance(status, ScrapeStatus) and not status.up
    assert "refused" in status.error.lower()


@pytest.mark.lab
def test_against_the_lab_triton(triton_lab) -> None:  # type: ignore[no-untyped-def]
    events = StatsCollector(triton_lab.http_url, timeout_s=10).collect()[0].events
    assert isinstance(events[0], ScrapeStatus) and events[0].up, events[0]
    assert {e.model for e in events[1:] if isinstance(e, ModelStats)} >= {"router", "detector"}
