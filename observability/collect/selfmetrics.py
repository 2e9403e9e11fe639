"""The collector's own /metrics: is it keeping up, is anything being lost?

Served by prometheus_client on 127.0.0.1 only unless told otherwise; labels are bounded
(signal kinds and reasons, never request ids or file names).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Info,
    ProcessCollector,
    make_wsgi_app,
    start_http_server,
)
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector as PromCollector

from collectors.base import Batch, Health
from observability.events import ScrapeStatus
from observability.netaddr import is_loopback

__all__ = ["SelfMetrics", "WsgiApp", "serve", "serve_http"]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

log = logging.getLogger(__name__)

SHUTDOWN_POLL_S = 0.05
"""How often the serving thread looks for ``shutdown()``: socketserver's default (0.5 s)
made every stop wait half a second."""


class SelfMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        # What every Prometheus exporter serves: the process (CPU, memory, open files) and
        # the build, so a dashboard can tell which version of watch produced the findings.
        ProcessCollector(registry=r)
        Info("triton_obs_build", "The triton-observability version running", registry=r).info(
            {"version": _version()}
        )
        self.log_lines_read = Counter(
            "triton_obs_log_lines_read", "Verbose-log lines read by the collector", registry=r
        )
        self.log_lines_skipped = Counter(
            "triton_obs_log_lines_skipped",
            "Log lines skipped, by reason (uninteresting info lines are not counted)",
            ["reason"],
            registry=r,
        )
        self.scrape_failures = Counter(
            "triton_obs_scrape_failures", "Failed scrapes, by signal", ["signal"], registry=r
        )
        self.target_up = Gauge(
            "triton_obs_target_up", "1 when the last scrape of the signal worked", ["signal"],
            registry=r,
        )  # fmt: skip
        self.events_stored = Counter(
            "triton_obs_events_stored", "Records written to the store, by table", ["part"],
            registry=r,
        )  # fmt: skip
        self.store_errors = Counter(
            "triton_obs_store_errors", "Failed store writes, by reason", ["reason"], registry=r
        )
        self.tail_lag_bytes = Gauge(
            "triton_obs_tail_lag_bytes", "Log bytes written but not yet read", registry=r
        )
        self.store_bytes = Gauge("triton_obs_store_bytes", "Size of the store file", registry=r)
        self.last_cycle = Gauge(
            "triton_obs_collector_last_cycle_timestamp_seconds",
            "When the collector last finished a cycle (for a lagging-collector alert)",
            registry=r,
        )
        self.otlp_spans = Counter(
            "triton_obs_otlp_spans_received", "Spans received on the OTLP endpoint", registry=r
        )
        self._lines_seen = 0
        self._skipped_seen: dict[str, int] = {}

    def observe(self, signal: str, batches: Sequence[Batch], health: Health) -> None:
        """What one collector just handed out, and its health, as these metrics.

        Every scrape status sets its signal's ``target_up``; the log's health feeds the
        lines and lag series and the OTLP receiver's batches the span counter (the names
        dashboards and alerts already use). Counters follow a collector's totals by delta.
        """
        for _source, events in batches:
            for event in events:
                if isinstance(event, ScrapeStatus):
                    self.target_up.labels(signal).set(1 if event.up else 0)
                    if not event.up:
                        self.scrape_failures.labels(signal).inc()
        if signal == "otlp":
            self.otlp_spans.inc(sum(len(events) for _source, events in batches))
        elif signal == "log":
            self._observe_log(health)

    def _observe_log(self, health: Health) -> None:
        if health.read > self._lines_seen:
            self.log_lines_read.inc(health.read - self._lines_seen)
        self._lines_seen = health.read
        for reason, count in health.skipped.items():
            seen = self._skipped_seen.get(reason, 0)
            if reason != "info" and count > seen:
                self.log_lines_skipped.labels(reason).inc(count - seen)
        self._skipped_seen = dict(health.skipped)
        self.tail_lag_bytes.set(health.lag_bytes)


def serve(
    metrics: SelfMetrics | None,
    port: int,
    host: str = "127.0.0.1",
    api: WsgiApp | None = None,
    registry: PromCollector | None = None,
) -> int:
    """Serve the registry (``metrics``'s, or ``registry``); returns the bound port
    (``port=0`` picks a free one). ``api`` answers the paths under ``/api/`` (``watch``'s
    read-only API, ``observability/api.py``); every other path is the /metrics page.

    Anything but loopback is logged as a warning once bound (with the real port): these
    pages name models and file sizes, and nobody should publish them by accident.
    """
    return int(serve_http(metrics, port, host, api, registry).server_address[1])


def serve_http(
    metrics: SelfMetrics | None,
    port: int,
    host: str = "127.0.0.1",
    api: WsgiApp | None = None,
    registry: PromCollector | None = None,
) -> WSGIServer:
    """:func:`serve`, returning the server (its ``shutdown()`` stops it)."""
    reg = registry if registry is not None else metrics.registry if metrics else None
    if reg is None:
        raise ValueError("serve needs metrics or a registry")
    if api is None:
        server, _thread = start_http_server(port, addr=host, registry=reg)
    else:
        server = _serve_with_api(port, host, make_wsgi_app(reg), api)
    if not is_loopback(host):
        bound = server.server_address[1]
        log.warning("serving triton-obs /metrics on %s:%s, beyond loopback", host, bound)
    return server


def _serve_with_api(port: int, host: str, metrics_app: WsgiApp, api: WsgiApp) -> WSGIServer:
    """prometheus_client's threading WSGI server, with ``/api/`` routed to ``api``."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if str(environ.get("PATH_INFO", "")).startswith("/api/"):
            return api(environ, start_response)
        return metrics_app(environ, start_response)

    class Server(ThreadingWSGIServer):
        pass

    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    Server.address_family, addr = infos[0][0], str(infos[0][4][0])
    server = make_server(addr, port, app, Server, handler_class=_Quiet)
    threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": SHUTDOWN_POLL_S},
        name="metrics-http",
        daemon=True,
    ).start()
    return server


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing (as prometheus_client's own server)."""


def _version() -> str:
    from observability import __version__

    return str(__version__)
