"""``watch`` for many targets, on real files and sockets, without Triton: pod logs in CRI format
found as pods come and go, followed through the kubelet's rotation and a container restart; a
hang in one pod is that pod's finding, on /metrics and through the API, and not the other's."""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from observability.collect import CollectConfig
from observability.fleet import (
    FleetConfig,
    FleetWatcher,
    Target,
    TargetError,
    discover_pods,
    load_targets,
    pod_log_pattern,
)
from observability.store import Store
from observability.watch import WatchConfig

UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def _glog(at: float, text: str) -> str:
    stamp = datetime.fromtimestamp(at, tz=timezone.utc)
    return f"I{stamp:%m%d %H:%M:%S}.{stamp.microsecond:06d} 1 {text}"


def cri(line: str, at: float | None = None) -> bytes:
    stamp = datetime.fromtimestamp(at or time.time(), tz=timezone.utc)
    return f"{stamp:%Y-%m-%dT%H:%M:%S}.{stamp.microsecond:06d}000Z stderr F {line}\n".encode()


def request(rid: str, model: str, at: float, released: bool) -> bytes:
    """One request's verbose-log lines, CRI-framed: admitted and executing at ``at``, and
    released a moment later when ``released``."""
    state = 'infer_request.cc:132] "[request id: {}] Setting state from {} to {}"'
    lines = [
        _glog(at, f'infer_request.cc:905] "[request id: {rid}] prepared: [0x1] request id: '
              f"{rid}, model: {model}, requested version: -1, actual version: 1, flags: 0x0, "
              'correlation id: 0, batch size: 1, priority: 0, timeout (us): 0\\n"'),
        _glog(at, state.format(rid, "INITIALIZED", "PENDING")),
        _glog(at, state.format(rid, "PENDING", "EXECUTING")),
        _glog(at, f'python_be.cc:1273] "model {model}, instance {model}_0_0, executing 1 '
              'requests"'),
    ]  # fmt: skip
    if released:
        lines += [
            _glog(at + 0.01, 'python_be.cc:2138] "TRITONBACKEND_ModelInstanceExecute: model '
                  f'instance name {model}_0_0 released 1 requests"'),
            _glog(at + 0.01, state.format(rid, "EXECUTING", "RELEASED")),
        ]  # fmt: skip
    return b"".join(cri(line, at) for line in lines)


def pod_dir(root: Path, ns: str, pod: str, container: str = "triton") -> Path:
    folder = root / f"{ns}_{pod}_{UID}" / container
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def base_config(tmp_path: Path, deadline_s: float = 1.0) -> WatchConfig:
    return WatchConfig(
        collect=CollectConfig(store=tmp_path / "unused.db", interval_s=0.2, log_interval_s=0.05),
        detect_interval_s=0.2,
        evidence_s=60,
        lookback_s=60,
        settings={"deadline_s": deadline_s},
        max_records=10_000,
    )


FAST = {"detect_interval_s": 0.2, "rescan_s": 0.2}
"""Passes and pod-folder scans five times as often as the defaults: what the tests wait on."""


@pytest.fixture
def running() -> Iterator[list[tuple[FleetWatcher, threading.Thread]]]:
    started: list[tuple[FleetWatcher, threading.Thread]] = []
    yield started
    for fleet, thread in started:
        fleet.stop()
        thread.join(timeout=30)
        assert not thread.is_alive()


def start(fleet: FleetWatcher, started: list[tuple[FleetWatcher, threading.Thread]]) -> int:
    port = fleet.start()
    thread = threading.Thread(target=fleet.run, kwargs={"duration_s": 60}, daemon=True)
    thread.start()
    started.append((fleet, thread))
    return port


def wait_for(check: object, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout_s} s")


def get(port: int, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def stored_ids(store: Path) -> set[str]:
    with Store(store, readonly=True) as s:
        return {getattr(r, "request_id", "") for r in s.log_records()} - {""}


def test_pod_logs_follow_rotation_restart_and_pods_that_come_and_go(
    tmp_path: Path, running: list[tuple[FleetWatcher, threading.Thread]]
) -> None:
    pods = tmp_path / "pods"
    a = pod_dir(pods, "ml", "triton-a")
    append(a / "0.log", request("a-1", "m", time.time(), released=True))
    cfg = FleetConfig(
        store_dir=tmp_path / "stores",
        base=base_config(tmp_path),
        pod_logs=pod_log_pattern(str(pods)),
        port=0,
        **FAST,
    )
    fleet = FleetWatcher(cfg)
    assert [w.name for w in fleet.watchers()] == ["ml/triton-a"]
    start(fleet, running)
    store_a = tmp_path / "stores" / "ml_triton-a.db"
    wait_for(lambda: "a-1" in stored_ids(store_a))

    # The kubelet's rotation: 0.log renamed beside itself, a new 0.log; lines written to the
    # old one just before the rename are read too.
    append(a / "0.log", request("a-2", "m", time.time(), released=True))
    os.rename(a / "0.log", a / "0.log.20261125-172226")
    append(a / "0.log", request("a-3", "m", time.time(), released=True))
    # A container restart: 1.log, the old 0.log kept.
    append(a / "1.log", request("a-4", "m", time.time(), released=True))
    wait_for(lambda: {"a-1", "a-2", "a-3", "a-4"} <= stored_ids(store_a))

    # A pod that appears is watched; one whose folder goes is let go, and its series too.
    b = pod_dir(pods, "ml", "triton-b")
    append(b / "0.log", request("b-1", "m", time.time(), released=True))
    wait_for(lambda: len(fleet.watchers()) == 2)
    wait_for(lambda: "b-1" in stored_ids(tmp_path / "stores" / "ml_triton-b.db"))
    watcher_b = next(w for w in fleet.watchers() if w.name == "ml/triton-b")
    assert watcher_b.cfg.labels == {"namespace": "ml", "pod": "triton-b"}
    for path in sorted(b.parent.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    b.parent.rmdir()
    wait_for(lambda: [w.name for w in fleet.watchers()] == ["ml/triton-a"])
    assert stored_ids(store_a) == {"a-1", "a-2", "a-3", "a-4"}  # each once, none of b's


def test_a_hang_in_one_pod_is_that_pods_finding_on_metrics_and_api(
    tmp_path: Path, running: list[tuple[FleetWatcher, threading.Thread]]
) -> None:
    pods = tmp_path / "pods"
    hung, calm = pod_dir(pods, "ml", "triton-a"), pod_dir(pods, "ml", "triton-b")
    now = time.time()
    append(hung / "0.log", request("ok-a", "router", now - 4, released=True))
    append(hung / "0.log", request("stuck-1", "router", now - 3, released=False))
    append(calm / "0.log", request("ok-b", "router", now - 3, released=True))
    fleet = FleetWatcher(
        FleetConfig(
            store_dir=tmp_path / "stores", base=base_config(tmp_path),
            pod_logs=str(pods / "*_triton-*_*" / "triton" / "*.log"), port=0, **FAST,
        )
    )  # fmt: skip
    port = start(fleet, running)

    def found() -> bool:
        status, body = get(port, "/api/v1/findings?kind=hung_request")
        return status == 200 and bool(body["findings"])

    wait_for(found)
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    series = [
        line for line in page.splitlines() if line.startswith("triton_obs_findings{")
    ]  # fmt: skip
    assert any('kind="hung_request"' in s and 'pod="triton-a"' in s for s in series), series
    assert not any('pod="triton-b"' in s and 'kind="hung_request"' in s for s in series)
    assert re.search(r'triton_obs_hung_requests\{[^}]*pod="triton-a"[^}]*\} [1-9]', page)
    assert re.search(r'triton_obs_log_lines_read_total\{[^}]*pod="triton-b"', page)
    assert len(re.findall(r"^process_cpu_seconds_total ", page, re.M)) == 1  # once, no labels
    assert "stuck-1" not in page  # request ids never become labels

    status, body = get(port, "/api/v1/targets")
    assert status == 200 and body["total"] == 2
    by_name = {t["target"]: t for t in body["targets"]}  # type: ignore[attr-defined]
    assert by_name["ml/triton-a"]["pod"] == "triton-a"
    assert by_name["ml/triton-a"]["findings_active"] >= 1

    status, body = get(port, "/api/v1/findings?kind=hung_request")
    assert {(f["pod"], f["namespace"], f["target"]) for f in body["findings"]} == {  # type: ignore[attr-defined]
        ("triton-a", "ml", "ml/triton-a")
    }
    status, body = get(port, "/api/v1/findings?target=ml/triton-b&kind=hung_request")
    assert status == 200 and body["findings"] == []

    status, body = get(port, "/api/v1/requests/stuck-1?target=ml/triton-a")
    assert status == 200, body
    states = [r["to_state"] for r in body["records"]]  # type: ignore[attr-defined]
    assert states[:3] == [None, "PENDING", "EXECUTING"] and body["model"] == "router"
    assert body["findings"] and body["pod"] == "triton-a"
    assert get(port, "/api/v1/requests/stuck-1?target=ml/triton-b")[0] == 404
    assert get(port, "/api/v1/requests/stuck-1")[0] == 400  # two targets: name one
    assert get(port, "/api/v1/requests/stuck-1?target=ml/triton-a&limit=1")[1]["truncated"]

    status, body = get(port, "/api/v1/health?target=ml/triton-a")
    assert status == 200
    router = next(m for m in body["models"] if m["model"] == "router")  # type: ignore[attr-defined]
    assert router["in_flight"] == 1 and router["last_seen"]

    assert get(port, "/api/v1/findings?limit=0")[0] == 400
    assert get(port, "/api/v1/findings?limit=100000")[0] == 400
    assert get(port, "/api/v1/findings?target=nope")[0] == 404
    assert get(port, "/api/v1/nothing")[0] == 404
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/targets", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 405


def test_targets_files_toml_and_yaml(tmp_path: Path) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text(
        '[[targets]]\nname = "a"\nurl = "http://127.0.0.1:8000"\n'
        'metrics_url = "http://127.0.0.1:8002/metrics"\nlog = "/var/log/a.log"\n'
        'namespace = "ml"\npod = "triton-a"\n'
        '[[targets]]\nname = "b"\nlog = "/logs/b/*.log"\nlog_format = "cri"\n'
    )
    a, b = load_targets(toml)
    assert a.labels == {"namespace": "ml", "pod": "triton-a"} and b.labels == {}
    assert b.log == "/logs/b/*.log" and b.store_name == "b.db"
    yaml = tmp_path / "t.yaml"
    yaml.write_text("targets:\n  - name: a\n    log: /x.log\n  - pod: p\n    url: http://h:1\n")
    assert [t.name for t in load_targets(yaml)] == ["a", "p"]
    for text, problem in [
        ("targets: []\n", "no 'targets'"),
        ("targets:\n  - name: a\n", "give url"),
        ("targets:\n  - name: a\n    log: x\n    color: red\n", "unknown keys"),
        ("targets:\n  - {name: a, log: x}\n  - {name: a, log: y}\n", "unique"),
        ("targets:\n  - {name: 'a b', log: x}\n", "a name of"),
    ]:
        yaml.write_text(text)
        with pytest.raises(TargetError, match=problem):
            load_targets(yaml)


def test_discover_pods_reads_namespace_and_pod_from_the_path(tmp_path: Path) -> None:
    pod_dir(tmp_path, "ml", "triton-0", "triton").joinpath("0.log").write_bytes(b"")
    pod_dir(tmp_path, "ml", "triton-0", "sidecar").joinpath("0.log").write_bytes(b"")
    (tmp_path / "not-a-pod" / "c").mkdir(parents=True)
    (tmp_path / "not-a-pod" / "c" / "0.log").write_bytes(b"")
    found = discover_pods(str(tmp_path / "*" / "triton" / "*.log"))
    assert list(found) == ["ml/triton-0"]
    target = found["ml/triton-0"]
    assert target.labels == {"namespace": "ml", "pod": "triton-0"}
    assert target.log is not None and target.log.endswith(f"ml_triton-0_{UID}/triton/*.log")
    assert target.log_format == "cri" and target.store_name == "ml_triton-0.db"


def test_one_target_watch_serves_the_api_beside_its_unchanged_metrics(tmp_path: Path) -> None:
    from observability.watch import Watcher

    log = tmp_path / "triton.log"
    append(log, request("stuck-9", "router", time.time() - 3, released=False))
    cfg = base_config(tmp_path)
    cfg.collect = CollectConfig(
        store=tmp_path / "s.db", log=log, metrics_port=0, interval_s=0.2, log_interval_s=0.05
    )
    watcher = Watcher(cfg)
    watcher.runner.start_servers()
    port = watcher.runner.metrics_port
    assert port is not None
    thread = threading.Thread(target=watcher.run, kwargs={"duration_s": 30}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: get(port, "/api/v1/findings")[1].get("findings"))
        status, body = get(port, "/api/v1/targets")
        assert status == 200
        assert body["targets"] == [
            {"target": "triton", "namespace": None, "pod": None, "findings_active": 1,
             "last_pass": body["targets"][0]["last_pass"]}  # type: ignore[index]
        ]  # fmt: skip
        status, body = get(port, "/api/v1/requests/stuck-9")  # one target: no ?target= needed
        assert status == 200 and body["target"] == "triton"
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    finally:
        watcher.stop()
        thread.join(timeout=30)
    assert b'triton_obs_hung_requests{model="router"} 1.0' in page  # no target labels


def test_a_targets_file_entry_wins_over_the_pod_found_under_its_name(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pod_dir(pods, "ml", "triton-a").joinpath("0.log").write_bytes(b"")
    pod_dir(pods, "ml", "triton-b").joinpath("0.log").write_bytes(b"")
    listed = Target(
        name="ml/triton-a", url="http://127.0.0.1:9", log=str(pods / "*_triton-a_*/triton/*.log"),
        log_format="cri", namespace="ml", pod="triton-a",
    )  # fmt: skip
    fleet = FleetWatcher(
        FleetConfig(
            store_dir=tmp_path / "stores", base=base_config(tmp_path), targets=[listed],
            pod_logs=pod_log_pattern(str(pods)), port=0,
        )
    )  # fmt: skip
    try:
        assert sorted(w.name for w in fleet.watchers()) == ["ml/triton-a", "ml/triton-b"]
        assert fleet.rescan() == ([], [])
        a = next(w for w in fleet.watchers() if w.name == "ml/triton-a")
        assert a.cfg.collect.url == "http://127.0.0.1:9"
    finally:
        for w in fleet.watchers():
            fleet.remove(w.name)
