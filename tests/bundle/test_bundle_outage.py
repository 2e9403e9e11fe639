"""A server that goes away during a capture: the bundle keeps the failed scrapes
(``scrapes.jsonl``) and ``analyze`` says Triton went down.

Before, a capture kept its failed scrapes only in memory, so a bundle of a Triton that crashed
mid-capture held a few snapshots and then nothing, and read as a healthy server that was no
longer asked (tests/fixtures/foreign tts_queue_full). The server here is a real HTTP server
on a loopback socket answering with a /metrics page recorded from Triton 2.51
(tests/fixtures/metrics/PROVENANCE.md) until it is shut down.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from observability.analyze import analyze_bundle
from observability.bundle import CaptureConfig, capture, open_bundle, write_archive
from observability.bundle.ingest import failed_scrapes
from observability.findings import Severity

PAGE = (
    Path(__file__).resolve().parents[1] / "fixtures/metrics/triton_2.51_histogram_latencies.prom"
).read_bytes()


class _Triton(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE if self.path == "/metrics" else b'{"model_stats": []}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_gone_mid_capture_is_kept_in_the_bundle_and_found_down(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Triton)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def go_away() -> None:
        server.shutdown()
        server.server_close()

    timer = threading.Timer(0.8, go_away)
    timer.start()
    try:
        result = capture(
            CaptureConfig(
                out=tmp_path / "b",
                url=f"http://127.0.0.1:{port}",
                metrics_url=f"http://127.0.0.1:{port}/metrics",
                duration_s=2.5,
                interval_s=0.1,
            )
        )
    finally:
        timer.cancel()
        go_away()
    assert result.metrics >= 3, "it answered before it went away"
    assert {target for _ms, target, _err in result.failed_scrapes} == {"metrics", "stats"}
    bundle = open_bundle(tmp_path / "b")
    assert bundle.scrapes is not None
    archive = write_archive(tmp_path / "b", tmp_path / "b.tar.gz")
    for source in (tmp_path / "b", archive):  # as captured, and as it travels
        down = [f for f in analyze_bundle(source).findings if f.kind == "target_down"]
        assert [f.severity for f in down] == [Severity.CRITICAL], (source, down)
        assert "unreachable" in down[0].summary


def test_a_bad_line_of_failed_scrapes_costs_that_line() -> None:
    text = "\n".join(
        [
            json.dumps({"unix_ms": 1795666314740, "target": "metrics", "error": "refused"}),
            "{not json",
            json.dumps({"unix_ms": 1795666314741, "target": "elsewhere", "error": "x"}),
            json.dumps({"unix_ms": 1795666314742, "target": "stats"}),
        ]
    )
    statuses, problems = failed_scrapes(text)
    assert [(s.target, s.up, s.error) for s in statuses] == [
        ("metrics", False, "refused"),
        ("stats", False, ""),
    ]
    assert len(problems) == 2
