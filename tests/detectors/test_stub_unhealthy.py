"""stub_unhealthy on a real Triton 2.51: a python stub killed with SIGKILL, then a BLS call."""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as http

from collectors.logs.parser import parse_bytes
from observability.detectors import Window
from observability.detectors.stub_unhealthy import StubUnhealthyDetector, model_of_instance
from observability.findings import Severity
from tests.foreign.parsed import analysis, log_findings

pytestmark = pytest.mark.lab

_CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "INPUT0" data_type: TYPE_INT64 dims: [ -1 ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_INT64 dims: [ -1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""
_PLAIN = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor(
                "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() + 1)])
            for r in requests
        ]
"""
_BLS = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            child = pb_utils.InferenceRequest(
                model_name="plain", requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", x)], request_id=r.request_id() + ".plain")
            resp = child.exec()
            if resp.has_error():
                raise pb_utils.TritonModelException(resp.error().message())
            y = pb_utils.get_output_tensor_by_name(resp, "OUTPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y)]))
        return out
"""


def _repo(root: Path) -> Path:
    for name, code in (("plain", _PLAIN), ("bls", _BLS)):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(_CONFIG.format(name=name))
        (root / name / "1" / "model.py").write_text(code)
    return root


def _infer(url: str, request_id: str) -> str:
    client = http.InferenceServerClient(url.removeprefix("http://"), network_timeout=30)
    inp = http.InferInput("INPUT0", [3], "INT64")
    inp.set_data_from_numpy(np.arange(3, dtype=np.int64))
    try:
        client.infer("bls", [inp], request_id=request_id)
        return "ok"
    except Exception as exc:
        return f"error: {exc}"
    finally:
        client.close()


def _events(log: Path) -> list[object]:
    return parse_bytes(log.read_bytes(), year=datetime.now(timezone.utc).year)


def test_instance_names_map_to_models() -> None:
    assert model_of_instance("router_0_7") == "router"
    assert model_of_instance("my_model_1_12") == "my_model"
    assert model_of_instance("odd") == "odd"


def test_killed_stub_is_found_through_its_bls_parent(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(_repo(tmp_path / "repo"), name="stub", trace=False, exit_timeout_s=5)
    try:
        # Healthy twin: the same BLS requests on the same server before the kill.
        assert [_infer(lab.http_url, f"stub-before-{i}") for i in range(3)] == ["ok"] * 3
        killed_ns = time.time_ns()
        stubs = [
            pid
            for pid, cmd in lab.lab_processes().items()
            if "triton_python_backend_stub" in cmd and " plain_0_0 " in f"{cmd} "
        ]
        assert len(stubs) == 1, lab.lab_processes()
        os.kill(stubs[0], signal.SIGKILL)
        time.sleep(1.0)
        assert _infer(lab.http_url, "stub-after-0").startswith("error")
    finally:
        lab.stop()  # Triton flushes its log at exit: read it whole afterwards
    events = _events(lab.log_path)
    healthy = StubUnhealthyDetector().detect(Window(0, killed_ns, events=events))
    assert [f for f in healthy if f.severity.rank >= Severity.WARNING.rank] == []
    findings = StubUnhealthyDetector().detect(Window(0, time.time_ns(), events=events))
    assert len(findings) == 1, findings
    (finding,) = findings
    assert (finding.kind, finding.model, finding.instance) == (
        "stub_unhealthy",
        "plain",
        "plain_0_0",
    )
    assert finding.request_id == "stub-after-0"
    assert finding.severity is Severity.CRITICAL
    assert "Stub process 'plain_0_0' is not healthy" in finding.evidence[0].detail


def test_one_dead_stub_beside_a_live_one_is_named_by_its_instance() -> None:
    """kws_frontend_stub_restart (tests/fixtures/foreign, Round 15): one of two kws_frontend
    stubs killed; Triton 2.51 does not restart it, each batch sent to it fails after 1.00 s,
    and the other instance keeps serving, so /metrics' successes keep rising."""
    found = [f for f in analysis("kws_frontend_stub_restart").findings if f.severity.rank]
    dead = [f for f in found if f.kind == "stub_unhealthy"]
    assert [(f.model, f.instance) for f in dead] == [("kws_frontend", "kws_frontend_0_0")]
    assert "kws_frontend_0_1 kept serving" in dead[0].summary
    assert not [f for f in found if f.kind == "model_failing"]


def test_a_stub_that_failed_to_start_in_a_failed_load_is_not_a_dead_stub() -> None:
    """kws_classifier_reload_fails: the reloaded copy's initialize raises ('Failed to
    initialize Python stub', no instance named, then 'failed to load'); the old copy serves."""
    found = analysis("kws_classifier_reload_fails").findings
    assert [f for f in found if f.kind == "stub_unhealthy"] == []


@pytest.mark.parametrize(
    "name, model, instance",
    [
        ("rec_stub_killed", "rec_scorer", "rec_scorer_0_0"),
        ("emb_pool_stub_oom", "emb_pool", "emb_pool_0_0"),
        ("kws_frontend_stub_restart", "kws_frontend", "kws_frontend_0_0"),
    ],
)
def test_a_log_alone_shows_a_dead_stub_by_its_one_second_batches(
    name: str, model: str, instance: str
) -> None:
    """Triton writes no line when a stub is killed. On /metrics it is failures with no
    success; a user holding only the log still sees it: from the kill on, each batch of that
    instance waits out the backend's 1.00 s and answers no output, where they took
    milliseconds before. A caller timing out its calls to a hung model after one second
    (asr_encoder_hang_bounded's asr_router) and the caller of a dead stub (kws_gateway) look
    the same and are not reported."""
    found = [f for f in log_findings(name) if f.severity.rank]
    dead = [(f.kind, f.model, f.instance) for f in found if f.kind == "stub_unhealthy"]
    assert dead == [("stub_unhealthy", model, instance)], found
    assert "each took 1.00 s" in found[0].summary and "before" in found[0].summary
    assert {f.kind for f in found} == {"stub_unhealthy"}, [f.summary for f in found]


def test_a_log_alone_reads_no_dead_stub_into_a_call_timeout_on_a_hang() -> None:
    found = log_findings("asr_encoder_hang_bounded")
    assert [f.model for f in found if f.kind == "stub_unhealthy"] == []
    assert ("hung_request", "asr_encoder") in {(f.kind, f.model) for f in found}
