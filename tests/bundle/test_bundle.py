"""Bundles: captured from the real lab, ingested twice (idempotent), and broken ones read
with notes instead of tracebacks."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from observability.bundle import BundleError, CaptureConfig, capture, open_bundle
from observability.bundle.ingest import ingest
from observability.cli import app
from observability.lab import TritonLab
from observability.lab.ports import free_port
from observability.load import Status, TritonClient
from observability.load.workload import inputs_for
from observability.store import Store

runner = CliRunner()


@pytest.mark.lab
def test_capture_then_ingest_twice(triton_lab: TritonLab, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    outcomes = []

    def traffic() -> None:
        client = TritonClient(triton_lab.grpc_url, 10)
        try:
            for i in range(60):
                outcomes.append(
                    client.infer("router", inputs_for("router", random.Random(i)), f"bnd-{i}")
                )
        finally:
            client.close()

    # 60 sequential requests take ~2 s on a quiet machine; the capture's 8 s leave room for a
    # loaded one (4 s missed the last few under a load average of 5).
    sender = threading.Timer(0.5, traffic)
    sender.start()
    result = capture(
        CaptureConfig(
            out=out, url=triton_lab.http_url, metrics_url=triton_lab.metrics_url,
            log=triton_lab.log_path, trace=triton_lab.trace_path, duration_s=8, interval_s=0.5,
        )
    )  # fmt: skip
    sender.join(timeout=60)
    assert all(o.status is Status.OK for o in outcomes) and len(outcomes) == 60
    assert result.metrics >= 8 and result.stats >= 8 and not result.failures
    meta = json.loads((out / "meta.json").read_text())
    assert meta["format"] == 1 and meta["triton_version"].startswith("2.")
    assert meta["clock"]["epoch_ns_minus_monotonic_ns"] > 0

    store_path = tmp_path / "store.db"
    with Store(store_path) as store:
        first = ingest(out, store)
        again = ingest(out, store)
        assert first.inserted["log"] > 0 and first.inserted["metrics"] > 0
        assert first.inserted["stats"] > 0
        assert sum(again.inserted.values()) == 0
        assert again.duplicates == sum(first.inserted.values())
        released = {
            r.request_id
            for r in store.log_records(kinds=["RequestStateChange"])
            if r.to_state == "RELEASED" and r.request_id.startswith("bnd-")
        }
        # Every client request and its BLS children, with their state transitions.
        assert {f"bnd-{i}" for i in range(60)} <= released
        assert {f"bnd-{i}.detector" for i in range(60)} <= released
        # Timestamps come from the bundle, not the ingest's clock.
        (t0, t1) = store.time_range()
        assert t1 - t0 < 60e9


def test_capture_against_nothing_records_failures(tmp_path: Path) -> None:
    result = capture(
        CaptureConfig(out=tmp_path / "b", url="http://127.0.0.1:9",
                      metrics_url="http://127.0.0.1:9/metrics", duration_s=0.3, interval_s=0.1)
    )  # fmt: skip
    assert result.metrics == 0 and result.failures
    assert open_bundle(tmp_path / "b").meta.format == 1


def _bundle(root: Path, meta: object = None) -> Path:
    root.mkdir(parents=True)
    (root / "metrics").mkdir()
    (root / "stats").mkdir()
    if meta is not False:
        (root / "meta.json").write_text(
            json.dumps(
                meta or {"format": 1, "bundle_id": "b1", "started_at": "2026-11-22T03:00:00+00:00"}
            )
        )
    return root


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (False, "has no meta.json"),
        ("not json", "not valid JSON"),
        ([1, 2], "must hold a JSON object"),
        ({"format": 2}, "format 2 is not supported"),
    ],
)
def test_not_a_bundle_is_a_clear_error(tmp_path: Path, meta: object, message: str) -> None:
    root = tmp_path / "b"
    root.mkdir()
    if meta is not False:
        (root / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    with pytest.raises(BundleError, match=message):
        open_bundle(root)
    result = runner.invoke(app, ["ingest", str(root), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_broken_parts_are_skipped_with_notes(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    (root / "metrics" / "1700000000000.prom").write_text(
        '# TYPE nv_inference_count counter\nnv_inference_count{model="a",version="1"} 3\n'
        "garbage line {{{\n"
    )
    (root / "metrics" / "notes.txt").write_text("stray")
    (root / "stats" / "1700000000000.json").write_text("{not json")
    (root / "trace.json").write_text(
        '[{"id":1,"model_name":"a","model_version":1,"request_id":"x"},'
        '{"id":1,"timestamps":[{"name":"REQUEST_START","ns":5}]},{"id":2,'
    )
    (root / "triton.log").write_bytes(
        b"\x00\x01binary junk\n"
        b'I1122 03:20:14.655289 2106 infer_request.cc:132] "[request id: r1] Setting state from '
        b'INITIALIZED to PENDING"\n' + b"x" * 300_000 + b"\n"
        b'I1122 03:20:14.655368 2106 infer_request.cc:132] "[request id: r1] Setting state fr'
    )
    with Store(tmp_path / "s.db") as store:
        report = ingest(root, store)
        states = list(store.log_records(kinds=["RequestStateChange"]))
        samples = list(store.metric_samples("nv_inference_count"))
        spans = list(store.trace_spans())
    notes = "\n".join(report.notes)
    assert "notes.txt" in notes
    assert "stats/1700000000000.json" in notes
    assert "truncated" in notes
    assert "garbage line" in notes
    assert [s.to_state for s in states] == ["PENDING"]
    assert len(samples) == 1 and samples[0][2].value == 3
    assert [s.request_id for s in spans] == ["x"]


def test_capture_keeps_otlp_requests_and_ingest_reads_them(tmp_path: Path) -> None:
    """Spans exported by the real OpenTelemetry SDK during the window end up in the store."""

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    port = free_port()
    out = tmp_path / "bundle"

    def export() -> None:
        provider = TracerProvider(resource=Resource.create({"service.name": "router"}))
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=5)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("t").start_as_current_span("bls router->detector") as span:
            span.set_attribute("triton.child.model", "detector")
        provider.shutdown()

    timer = threading.Timer(0.3, export)
    timer.start()
    result = capture(CaptureConfig(out=out, otlp_port=port, duration_s=1.5, interval_s=0.5))
    timer.join(timeout=20)
    assert result.otlp_url.endswith(str(port))
    assert list((out / "otlp").glob("*.json"))
    with Store(tmp_path / "s.db") as store:
        report = ingest(out, store)
        spans = list(store.otlp_spans())
    assert report.inserted.get("otlp") == 1
    assert spans[0].name == "bls router->detector" and spans[0].service == "router"
    assert spans[0].attribute("triton.child.model") == "detector"


def test_analyze_a_broken_bundle_gives_partial_findings_and_notes(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    (root / "stats" / "1700000000000.json").write_text("{not json")
    (root / "trace.json").write_text('[{"id":1,"model_name":"a"')
    (root / "triton.log").write_bytes(
        b"\x00\xffjunk\n"
        b'E1122 03:39:47.140807 12161 model_repository_manager.cc:1460] "Poll failed for model '
        b"directory 'fanout_ensemble': output 'RIGHT' for ensemble 'fanout_ensemble' is not "
        b"written: at least one of its depending tensors, 'OUTPUT', is not connected\"\n"
        b"I1122 03:39:47.1408"
    )
    result = runner.invoke(app, ["analyze", str(root), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    start = result.stdout.index("[")
    findings = json.loads(result.stdout[start:])
    assert [f["kind"] for f in findings] == ["ensemble_fanout"]
    assert "stats/1700000000000.json" in result.output  # the note, on stderr


def test_analyze_json_prints_only_the_array(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    result = subprocess.run(
        [sys.executable, "-m", "observability.cli", "analyze", str(root), "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_analyze_of_no_bundle_is_a_clear_error(tmp_path: Path) -> None:
    """A folder without meta.json is read as loose artifacts (bundle/loose.py): with none of
    ours in it, that is the error."""
    (tmp_path / "notes.bin").write_bytes(b"\x00\x01")
    result = runner.invoke(app, ["analyze", str(tmp_path)])
    assert result.exit_code == 2 and "holds no Triton log" in result.output
    result = runner.invoke(app, ["ingest", str(tmp_path), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2 and "has no meta.json" in result.output
