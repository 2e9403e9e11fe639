"""One real run for the security tests: the demo pipeline on a real Triton, every signal
collected by ``triton-obs collect`` (a real subprocess), inputs that carry a known marker.

Why one run shared by several tests: a lab start and stop costs ~20 s on two cores, and the
payload and label checks ask the same question of the same traffic. The BLS exporter posts
to a recording proxy in front of the collector's OTLP receiver, so the spans are checked as
they crossed the wire (protobuf bytes), not only as the receiver decoded them.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import string
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from observability.lab import TritonLab, demo_repository
from observability.lab.processes import stop_group

DEMO_MODELS = ("router", "preprocess", "classifier", "detector", "pipeline", "generate", "decoder")
ALPHABET = string.ascii_uppercase + string.digits
"""Marker characters: as float32 high bytes (0x30-0x5A) they are finite, moderate numbers, so
the demo's arithmetic on them neither overflows nor fails."""


@dataclass
class Recorded:
    bodies: list[bytes] = field(default_factory=list)
    target: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _proxy(recorded: Recorded) -> ThreadingHTTPServer:
    """OTLP/HTTP in on 127.0.0.1, every body kept, then forwarded to ``recorded.target``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with recorded.lock:
                recorded.bodies.append(body)
                target = recorded.target
            status, answer = 503, b""
            if target:
                forward = urllib.request.Request(
                    target + self.path, data=body, method="POST",
                    headers={k: v for k, v in self.headers.items()
                             if k.lower() in ("content-type", "content-encoding")},
                )  # fmt: skip
                try:
                    with urllib.request.urlopen(forward, timeout=10) as resp:
                        status, answer = resp.status, resp.read()
                except urllib.error.HTTPError as err:
                    status, answer = err.code, err.read()
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, args=(0.05,), name="otlp-proxy", daemon=True
    ).start()
    return server


def _small_demo(tmp: Path) -> Path:
    """The demo repository with 2 router instances: the lab starts and stops faster."""
    repo = tmp / "demo"
    shutil.copytree(demo_repository(), repo, ignore=shutil.ignore_patterns("__pycache__"))
    config = repo / "router" / "config.pbtxt"
    config.write_text(config.read_text().replace("count: 8", "count: 2"))
    return repo


@dataclass
class SecurityRun:
    marker: bytes
    request_ids: list[str]
    """Every id sent; none contains the marker (ids may be stored, payloads not)."""
    lab: TritonLab
    store: Path
    store_copies: list[Path]
    """The store and its -wal/-shm files, copied while collect was still running."""
    otlp_bodies: list[bytes]
    collect_stdout: str
    collect_stderr: str
    collect_metrics: str
    triton_metrics: str
    echoed: bytes
    """``generate``'s TOKEN_IDS answer: the prompt comes back, so the marker crossed the wire."""
    client_dump: Path
    """What the client sent, as a client would log it (raw bytes and values): the positive
    control that the patterns find each form of the marker."""


def _values(marker: bytes) -> dict[str, np.ndarray]:
    return {
        "FP32": np.frombuffer(marker, dtype="<f4").copy(),
        "INT64": np.frombuffer(marker, dtype="<i8").copy(),
    }


def _infer(protocol: str, url: str, model: str, inputs: dict[str, np.ndarray], rid: str,
           binary: bool = True) -> dict[str, np.ndarray]:  # fmt: skip
    """One inference the way a user's client sends it (tritonclient), outputs as arrays."""
    if protocol == "grpc":
        import tritonclient.grpc as tc
    else:
        import tritonclient.http as tc  # type: ignore[no-redef]
    client = tc.InferenceServerClient(url)
    try:
        items = []
        for name, array in inputs.items():
            dtype = {"float32": "FP32", "int64": "INT64", "int32": "INT32"}[array.dtype.name]
            item = tc.InferInput(name, list(array.shape), dtype)
            if protocol == "grpc":
                item.set_data_from_numpy(array)
            else:
                item.set_data_from_numpy(array, binary_data=binary)
            items.append(item)
        result = client.infer(model, items, request_id=rid)
        response = result.get_response(as_json=True) if protocol == "grpc" else None
        names = [o["name"] for o in (response or result.get_response())["outputs"]]
        return {n: result.as_numpy(n) for n in names}
    finally:
        client.close()


def _wait_stable(fetch, timeout_s: float = 30.0, quiet_s: float = 2.0) -> None:
    """Until ``fetch()`` is truthy and unchanged for ``quiet_s``."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        value = fetch()
        if value != last:
            last, since = value, time.monotonic()
        elif value and time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.25)
    raise AssertionError(f"never settled: {last!r}")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


def _sample(page: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", page, re.M)
    return float(found.group(1)) if found else 0.0


@pytest.fixture(scope="session")
def security_run(lab_factory, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecurityRun]:
    root = tmp_path_factory.mktemp("security-run")
    marker = b"TOBSMARK" + "".join(secrets.choice(ALPHABET) for _ in range(24)).encode()
    assert len(marker) == 32
    recorded = Recorded()
    proxy = _proxy(recorded)
    endpoint = f"http://127.0.0.1:{proxy.server_address[1]}/v1/traces"
    lab = lab_factory(
        _small_demo(root),
        name="security",
        model_control="explicit",
        load_models=DEMO_MODELS,
        trace_log_frequency=1,
        env={"TRITON_OBS_ENDPOINT": endpoint, "TRITON_OBS_FLUSH_INTERVAL_S": "0.2"},
    )
    store = root / "store.db"
    out, err = root / "collect.stdout", root / "collect.stderr"
    cli = shutil.which("triton-obs", path=str(Path(sys.executable).parent))
    base = [cli] if cli else [sys.executable, "-m", "observability.cli"]
    args = [
        "collect", "--url", lab.http_url, "--metrics-url", lab.metrics_url,
        "--log", str(lab.log_path), "--trace", str(lab.trace_path), "--otlp-port", "0",
        "--port", "0", "--store", str(store), "--interval", "0.5",
    ]  # fmt: skip
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    with out.open("w") as stdout, err.open("w") as stderr:
        collect = subprocess.Popen(
            [*base, *args], stdout=stdout, stderr=stderr, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 30
        while not re.search(r"OTLP/HTTP +(http://\S+)/v1/traces", out.read_text()):
            assert collect.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.2)
        text = out.read_text()
        recorded.target = re.search(r"OTLP/HTTP +(http://\S+)/v1/traces", text).group(1)
        metrics_url = re.search(r"own metrics +(http://\S+/metrics)", text).group(1)

        values = _values(marker)
        grpc, http = lab.grpc_url, lab.http_url.removeprefix("http://")
        ids: list[str] = []
        echoed = b""
        sends = [
            ("grpc", "router", {"RAW": values["FP32"]}, True),
            ("grpc", "pipeline", {"RAW": values["FP32"]}, True),
            ("grpc", "generate", {"PROMPT_IDS": values["INT64"],
                                  "MAX_TOKENS": np.array([3], dtype=np.int32)}, True),
            ("http", "router", {"RAW": values["FP32"]}, True),
            ("http", "router", {"RAW": values["FP32"]}, False),  # JSON numbers in the body
            ("http", "generate", {"PROMPT_IDS": values["INT64"]}, True),
        ]  # fmt: skip
        for n in range(3):
            for protocol, model, inputs, binary in sends:
                rid = f"sec-{protocol}-{model}-{n}-{secrets.token_hex(3)}"
                ids.append(rid)
                url = grpc if protocol == "grpc" else http
                outputs = _infer(protocol, url, model, inputs, rid, binary)
                if model == "generate":
                    echoed += outputs["TOKEN_IDS"].tobytes()
        assert not any(marker.decode() in rid for rid in ids)

        # Everything has arrived: spans (flushed every 0.2 s), the log's last lines, and the
        # BLS metrics Triton publishes once a second.
        _wait_stable(lambda: len(recorded.bodies))
        _wait_stable(lambda: _sample(_get(metrics_url), "triton_obs_otlp_spans_received_total"))
        # Triton keeps logging (each stats scrape is a line): wait for the lines of the traffic.
        lines = lab.log_path.read_bytes().count(b"\n")
        _wait_stable(
            lambda: _sample(_get(metrics_url), "triton_obs_log_lines_read_total") >= lines,
            quiet_s=0,
        )
        time.sleep(1.5)
        triton_metrics = _get(lab.metrics_url)
        collect_metrics = _get(metrics_url)
        copies = []
        for suffix in ("", "-wal", "-shm"):
            source = store.with_name(store.name + suffix)
            if source.exists():
                copies.append(shutil.copy(source, root / f"copy-{store.name}{suffix}"))
    finally:
        stop_group(collect, 30)
        proxy.shutdown()
        proxy.server_close()
    assert collect.returncode == 0, err.read_text()

    dump = root / "client-request.log"
    with dump.open("wb") as fh:
        for kind, array in _values(marker).items():
            fh.write(f"{kind} bytes: ".encode() + array.tobytes() + b"\n")
            # Each value as numpy prints it, as well as the array: an array's str takes one
            # layout for all its values (scientific when they span a wide range), so with
            # some markers no value read as its own str and the control failed (CI,
            # 2026-11-26).
            scalars = " ".join(str(v) for v in array.ravel())
            fh.write(f"{kind} values: {array.tolist()} {array} {scalars}\n".encode())
    yield SecurityRun(
        marker=marker,
        request_ids=ids,
        lab=lab,
        store=store,
        store_copies=[Path(c) for c in copies],
        otlp_bodies=list(recorded.bodies),
        collect_stdout=out.read_text(),
        collect_stderr=err.read_text(),
        collect_metrics=collect_metrics,
        triton_metrics=triton_metrics,
        echoed=echoed,
        client_dump=dump,
    )
