"""One ``triton-obs watch --targets`` for a real lab Triton and a second, log-only target in CRI
format: a hang injected into the lab Triton is its finding (on stdout, /metrics and the API),
carrying its labels and not the other target's."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from observability.lab import TritonLab
from observability.load import Status, TritonClient
from observability.load.workload import inputs_for
from tests.test_watch_fleet import append, get, request

pytestmark = pytest.mark.lab


def test_one_watch_two_targets_the_hang_is_the_lab_pods_only(
    triton_lab: TritonLab, tmp_path: Path
) -> None:
    quiet = tmp_path / "quiet" / "0.log"
    quiet.parent.mkdir()
    append(quiet, request("quiet-1", "router", time.time(), released=True))
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n"
        f"  - {{name: lab, namespace: ml, pod: triton-lab, url: '{triton_lab.http_url}',\n"
        f"     metrics_url: '{triton_lab.metrics_url}', log: '{triton_lab.log_path}'}}\n"
        f"  - {{name: quiet, namespace: ml, pod: triton-quiet, log: '{quiet.parent}/*.log',\n"
        "     log_format: cri}\n"
    )
    cmd = [
        sys.executable, "-c", "from observability.cli import main; main()", "watch",
        "--targets", str(targets), "--store", str(tmp_path / "stores"), "--port", "0",
        "--deadline", "3", "--duration", "150", "--format", "jsonl",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    findings: list[dict[str, object]] = []
    reader = threading.Thread(
        target=lambda: findings.extend(json.loads(line) for line in proc.stdout or ()),
        daemon=True,
    )
    reader.start()
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline() if proc.stderr else ""
            m = re.search(r"127\.0\.0\.1:(\d+)/metrics", line)
            port = int(m.group(1)) if m else None
            assert line or proc.poll() is None, "watch ended before serving"
        assert port is not None
        threading.Thread(target=lambda: proc.stderr and proc.stderr.read(), daemon=True).start()
        time.sleep(2)  # the collector catches up with the shared lab's log first
        client = TritonClient(triton_lab.grpc_url, 2)
        outcome = client.infer(
            "router", inputs_for("router", random.Random(2)), "fleet-hang", "hang",
            {"fault": "hang", "hang_s": "25"},
        )  # fmt: skip
        client.close()
        assert outcome.status is Status.TIMEOUT
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if any(f.get("request_id") == "fleet-hang" for f in findings):
                break
            time.sleep(0.2)
        hang = [f for f in findings if f.get("request_id") == "fleet-hang"]
        assert hang, findings
        assert {(f["target"], f["namespace"], f["pod"]) for f in hang} == {
            ("lab", "ml", "triton-lab")
        }
        assert not [f for f in findings if f["target"] == "quiet"]

        status, body = get(port, "/api/v1/findings?target=lab")
        assert status == 200
        ids = {f["request_id"] for f in body["findings"]}  # type: ignore[attr-defined]
        assert "fleet-hang" in ids
        status, body = get(port, "/api/v1/findings?target=quiet")
        assert status == 200 and body["findings"] == []
        status, body = get(port, "/api/v1/requests/fleet-hang?target=lab")
        assert status == 200, body
        assert body["pod"] == "triton-lab" and body["records"]
        assert get(port, "/api/v1/requests/fleet-hang?target=quiet")[0] == 404
        status, body = get(port, "/api/v1/health?target=lab")
        assert status == 200 and any(m["model"] == "router" for m in body["models"])  # type: ignore[attr-defined]
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        text = page.decode()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    hung = re.findall(r"^triton_obs_hung_requests\{([^}]*)\} ([0-9.]+)$", text, re.M)
    assert any('pod="triton-lab"' in labels and float(v) >= 1 for labels, v in hung), hung
    assert not any('pod="triton-quiet"' in labels and float(v) > 0 for labels, v in hung)
    assert re.search(r'triton_obs_findings\{[^}]*kind="hung_request"[^}]*pod="triton-lab"', text)
    assert re.search(r'triton_obs_target_up\{[^}]*pod="triton-lab"[^}]*\} 1', text)
    assert "fleet-hang" not in text  # request ids never become labels
    assert proc.returncode == 0
