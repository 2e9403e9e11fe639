"""The receiver over real HTTP sockets: the real OTel SDK exporter, Triton's JSON, bad bodies."""

from __future__ import annotations

import gzip
import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.otlp import OtlpReceiver
from tests.hypothesis_profiles import examples

FIX = Path(__file__).parents[2] / "fixtures" / "otlp" / "triton_2.51_otel"
TRITON_POST = (FIX / "post_01.json").read_bytes()


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[OtlpReceiver]:
    with OtlpReceiver(max_body_bytes=64 * 1024, keep_dir=tmp_path / "otlp") as rx:
        yield rx


def post(
    rx: OtlpReceiver,
    body: bytes,
    path: str = "/v1/traces",
    ctype: str = "application/json",
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    host, port = rx.address
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": ctype, **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_binds_loopback_by_default() -> None:
    with OtlpReceiver() as rx:
        assert rx.address[0] == "127.0.0.1" and rx.url.startswith("http://127.0.0.1:")


def test_triton_json_post_is_accepted_queued_and_kept(receiver: OtlpReceiver) -> None:
    assert post(receiver, TRITON_POST) == (200, b"{}")
    spans = receiver.drain()
    assert len(spans) == 19 and receiver.drain() == []
    assert receiver.counters.accepted == 1 and receiver.counters.spans == 19
    (kept,) = list(receiver.keep_dir.glob("*.json"))  # type: ignore[union-attr]
    assert kept.stem.isdigit() and json.loads(kept.read_text()) == json.loads(TRITON_POST)


def test_gzip_body(receiver: OtlpReceiver) -> None:
    status, _ = post(
        receiver, gzip.compress(TRITON_POST, mtime=0), headers={"Content-Encoding": "gzip"}
    )
    assert status == 200 and len(receiver.drain()) == 19


def test_real_sdk_exporter_protobuf(receiver: OtlpReceiver) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="test extra")
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": "bls-test"}))
    for compression in (Compression.NoCompression, Compression.Gzip):
        exporter = OTLPSpanExporter(
            endpoint=f"{receiver.url}/v1/traces", timeout=5, compression=compression
        )
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("router") as parent:
        parent.set_attribute("triton.request_id", "r1")
        with tracer.start_as_current_span("detector") as child:
            child.add_event("hang", {"hang_s": 1.5})
            child.set_status(Status(StatusCode.ERROR, "late"))
    provider.shutdown()
    spans = receiver.drain()
    assert len(spans) == 4  # two exporters, two spans each
    child = next(s for s in spans if s.name == "detector")
    parent = next(s for s in spans if s.name == "router")
    assert child.parent_span_id == parent.span_id and child.trace_id == parent.trace_id
    assert (child.status, child.status_message, child.service) == ("ERROR", "late", "bls-test")
    assert child.events[0].name == "hang" and child.events[0].attributes == (("hang_s", "1.5"),)
    assert parent.attribute("triton.request_id") == "r1"
    assert receiver.counters.rejected == 0


BAD = [
    ("/v1/traces", "application/json", b"{not json", "POST", {}, 400),
    ("/v1/traces", "application/json", b"[]", "POST", {}, 400),
    ("/v1/traces", "application/json", b'{"resourceSpans": 1}', "POST", {}, 400),
    ("/v1/traces", "application/x-protobuf", b"\xff\xff\xff", "POST", {}, 400),
    ("/v1/traces", "application/json", b"x" * (64 * 1024 + 1), "POST", {}, 413),
    ("/v1/traces", "application/json", gzip.compress(b" " * 200_000, mtime=0), "POST",
     {"Content-Encoding": "gzip"}, 413),
    ("/v1/traces", "application/json", b"not gzip", "POST", {"Content-Encoding": "gzip"}, 400),
    ("/v1/traces", "application/json", gzip.compress(TRITON_POST, mtime=0)[:-20], "POST",
     {"Content-Encoding": "gzip"}, 400),
    ("/v1/traces", "application/json", b"{}", "POST", {"Content-Encoding": "br"}, 415),
    ("/v1/traces", "text/plain", b"{}", "POST", {}, 415),
    ("/v2/traces", "application/json", b"{}", "POST", {}, 404),
    ("/", "application/json", b"", "GET", {}, 404),
    ("/v1/traces", "application/json", b"", "GET", {}, 405),
    ("/v1/traces", "application/json", b"{}", "PUT", {}, 405),
    ("/v1/logs", "application/json", b"", "DELETE", {}, 405),
]  # fmt: skip


@pytest.mark.parametrize(("path", "ctype", "body", "method", "headers", "status"), BAD)
def test_bad_requests_get_their_status(
    receiver: OtlpReceiver,
    path: str,
    ctype: str,
    body: bytes,
    method: str,
    headers: dict[str, str],
    status: int,
) -> None:
    got, answer = post(receiver, body, path, ctype, method, headers)
    assert got == status
    if method != "HEAD":
        assert json.loads(answer)["code"] == status
    assert receiver.drain() == [] and receiver.counters.rejected == 1
    assert post(receiver, TRITON_POST)[0] == 200  # still serving


def test_metrics_and_logs_are_acknowledged(receiver: OtlpReceiver) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    assert post(receiver, b"{}", "/v1/metrics") == (200, b"{}")
    empty = ExportLogsServiceRequest().SerializeToString()
    assert post(receiver, empty, "/v1/logs", "application/x-protobuf") == (200, b"")
    assert post(receiver, b"\xff", "/v1/logs", "application/x-protobuf")[0] == 400
    assert receiver.counters.metrics_requests == 1 and receiver.counters.logs_requests == 1


def test_full_queue_drops_and_reports_partial_success(tmp_path: Path) -> None:
    seen: list[int] = []

    def boom(spans: list) -> None:  # type: ignore[type-arg]
        seen.append(len(spans))
        raise RuntimeError("callback bug")

    with OtlpReceiver(queue_size=5, on_spans=boom) as rx:
        status, answer = post(rx, TRITON_POST)
        assert status == 200
        partial = json.loads(answer)["partialSuccess"]
        assert partial["rejectedSpans"] == "14"
        assert len(rx.drain()) == 5 and rx.counters.spans_dropped == 14
        assert seen == [19] and rx.counters.callback_errors == 1


def test_non_loopback_binding_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING"), OtlpReceiver(host="0.0.0.0") as rx:
        assert rx.address[0] == "0.0.0.0"
    assert "beyond this host" in caplog.text


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=st.binary(max_size=2048),
    ctype=st.sampled_from(["application/json", "application/x-protobuf", "x/y"]),
    path=st.sampled_from(["/v1/traces", "/v1/logs", "/v1/metrics", "/nope"]),
    gz=st.booleans(),
)
def test_random_bytes_never_crash_the_server(
    receiver: OtlpReceiver, body: bytes, ctype: str, path: str, gz: bool
) -> None:
    headers = {"Content-Encoding": "gzip"} if gz else {}
    status, _ = post(receiver, body, path, ctype, headers=headers)
    assert status in (200, 400, 404, 413, 415)
    receiver.drain()
    assert post(receiver, b"{}")[0] == 200
