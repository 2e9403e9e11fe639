"""The Fleet page's data and rendering against a stand-in Prometheus and watch on loopback.

The live proof (a real Prometheus, a real watch, three lab Tritons) is tests/fleet; this file
pins the page's own rules in a second: aggregation per pod, worst first; the pod -> watch URL
forms; bounded reads; errors shown plainly when Prometheus or a watch cannot be read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from dashboards.app.data import fleet as fl
from observability.lab.ports import free_port
from tests.app.helpers import run_page, texts


def _series(pod: str, kind: str, severity: str, value: str = "1") -> dict:
    labels = {"namespace": "ml", "pod": pod, "kind": kind, "model": "router", "severity": severity}
    return {"metric": labels, "value": [0, value]}


PROM = {
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [
            _series("triton-2", "cold_start", "info"),
            _series("triton-1", "hung_request", "critical", "2"),
            _series("triton-1", "bls_call_hung", "critical"),
        ],
    },
}
WATCH = {
    "/api/v1/targets": {"targets": [{"target": "ml/triton-1", "namespace": "ml",
                                     "pod": "triton-1"}], "total": 1, "truncated": False},
    "/api/v1/findings": {"findings": [{"kind": "hung_request", "severity": "critical",
                                       "model": "router", "request_id": "<b>r-1</b>",
                                       "last_seen": "t", "summary": "hung", "advice": "look"}],
                         "total": 1, "truncated": False},
    "/api/v1/requests/<b>r-1</b>": {"records": [{"at": "t", "event": "prepared",
                                                 "model": "router", "offset": 1}]},
    "/api/v1/health": {"models": [{"model": "router", "in_flight": 1, "busy_instances": 1,
                                   "queued": 0, "pending": 0.0, "oldest_s": 9.0,
                                   "last_seen": "t"}]},
}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass

    def do_GET(self) -> None:
        from urllib.parse import unquote

        parts = urlsplit(self.path)
        path = unquote(parts.path)
        if path == "/api/v1/query":
            assert parse_qs(parts.query)["query"] == [fl.FINDINGS_QUERY]
            body, status = PROM, 200
        elif path == "/huge/api/v1/query":
            body, status = {"pad": "x" * (fl.MAX_BYTES + 10)}, 200
        elif path in WATCH:
            body, status = WATCH[path], 200
        else:
            body, status = {"error": f"no such path {path}", "status": 404}, 404
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_pods_with_findings_worst_first(server: str) -> None:
    got = fl.fleet_findings(server)
    assert got.ok, got.error
    first, second = got.data
    assert (first.pod, first.findings, first.critical) == ("triton-1", 3, 3)
    assert first.kinds == ("bls_call_hung", "hung_request")
    assert (second.pod, second.critical, second.warning) == ("triton-2", 0, 0)


def test_errors_are_text_not_exceptions(server: str) -> None:
    dead = fl.fleet_findings(_dead_url(), timeout_s=2)
    assert not dead.ok and "cannot reach" in dead.error
    huge = fl.fleet_findings(server + "/huge")
    assert not huge.ok and "more than" in huge.error
    missing = fl.watch_get(server, "nothing")
    assert not missing.ok and "HTTP 404" in missing.error and "no such path" in missing.error
    assert not fl.fleet_findings("file:///etc/passwd").ok


def test_watch_url_forms() -> None:
    assert fl.watch_url_for("ml", "triton-0", "http://w:9464/") == "http://w:9464"
    template = "http://{pod}.triton.{namespace}.svc:9464"
    assert fl.watch_url_for("ml", "triton-0", template) == "http://triton-0.triton.ml.svc:9464"
    mapping = "ml/triton-0=http://a:1, triton-1=http://b:2"
    assert fl.watch_url_for("ml", "triton-0", mapping) == "http://a:1"
    assert fl.watch_url_for("ml", "triton-1", mapping) == "http://b:2"
    assert fl.watch_url_for("ml", "triton-2", mapping) is None
    assert fl.watch_url_for("ml", "x", " ") is None
    # A label cannot steer the template elsewhere.
    assert fl.watch_url_for("ml", "a@evil/x", template) == "http://aevilx.triton.ml.svc:9464"


def test_the_page_lists_pods_and_opens_one(monkeypatch, server: str) -> None:
    monkeypatch.setenv("TRITON_OBS_TRIAGE_PROMETHEUS", server)
    monkeypatch.setenv("TRITON_OBS_TRIAGE_WATCH", server)
    at = run_page(monkeypatch, None, "fleet")
    pods, findings, timeline, health = (d.value for d in at.dataframe)
    assert list(pods["pod"]) == ["triton-1", "triton-2"]
    assert list(findings["request"]) == ["<b>r-1</b>"]  # as text, never markup
    assert list(timeline["event"]) == ["prepared"]
    assert list(health["model"]) == ["router"]
    assert not at.error


def test_the_page_says_plainly_what_it_cannot_read(monkeypatch, server: str) -> None:
    monkeypatch.setenv("TRITON_OBS_TRIAGE_PROMETHEUS", _dead_url())
    at = run_page(monkeypatch, None, "fleet")
    assert "Prometheus cannot be read" in texts(at) and "cannot reach" in texts(at)
    monkeypatch.setenv("TRITON_OBS_TRIAGE_PROMETHEUS", server)
    monkeypatch.setenv("TRITON_OBS_TRIAGE_WATCH", _dead_url())
    at = run_page(monkeypatch, None, "fleet")
    assert "The pod's watch cannot be read" in texts(at)
    assert len(at.dataframe) == 1  # the fleet's pods still listed
