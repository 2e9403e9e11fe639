"""deploy/kubernetes without a cluster: rendered == checked in, every object valid against the
Kubernetes schemas (kubernetes-validate, strict) or the Prometheus Operator's CRD schemas
(vendored in ``crds/``), images pinned as compose.yaml pins them, nothing privileged, root or
on the host's network, no RBAC beyond a token-less service account, watch's port closed to all
but Prometheus and the triage app, the PrometheusRules equal to the rule files, the dashboard
ConfigMaps equal to the dashboards' JSON, and the watch and triage arguments accepted by
today's CLI.

``crds/*.json`` are the ``openAPIV3Schema`` of prometheus-operator's
``example/prometheus-operator-crd/monitoring.coreos.com_{podmonitors,prometheusrules}.yaml`` at
v0.77.1 (commit 3271016a84d9b02b119d8f57cc178db6cb3bc706, kube-prometheus-stack 65's operator):
tests never download.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from typer.testing import CliRunner

from dashboards import kubernetes as k8s
from tests import yamlfast

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
CRDS = Path(__file__).with_name("crds")
# The oldest Kubernetes the manifests claim, and the newest the package knows.
KUBERNETES = ["1.29.0", kubernetes_validate.latest_version()]
COMPOSE = yamlfast.load((ROOT / "compose.yaml").read_text())["services"]

Obj = dict[str, Any]


def _load(name: str) -> list[Obj]:
    return [d for d in yamlfast.load_all((DEPLOY / name).read_text()) if d]


FILES = sorted(str(p.relative_to(DEPLOY)) for p in DEPLOY.rglob("*.yaml"))
OBJECTS = [(name, obj) for name in FILES for obj in _load(name) if obj["kind"] != "Kustomization"]
ALL = [obj for _, obj in OBJECTS]


def _id(param: Any) -> str:
    return f"{param[0]}:{param[1]['kind']}/{param[1]['metadata']['name']}"


def _kinds(kind: str) -> list[Obj]:
    return [o for o in ALL if o["kind"] == kind]


def _pod_specs() -> list[tuple[str, Obj]]:
    return [
        (f"{o['kind']}/{o['metadata']['name']}", o["spec"]["template"]["spec"])
        for o in ALL
        if o["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job")
    ]


def _containers() -> list[tuple[str, Obj, Obj]]:
    return [
        (f"{where}/{c['name']}", c, spec)
        for where, spec in _pod_specs()
        for c in spec.get("containers", []) + spec.get("initContainers", [])
    ]


# --- generated, and checked in --------------------------------------------------------------


def test_rendered_equals_checked_in() -> None:
    assert k8s.stale() == [], "run `triton-obs kubernetes render`"


def test_every_rendered_file_is_in_a_kustomization() -> None:
    listed = set()
    for name in FILES:
        if name.endswith("kustomization.yaml"):
            (kustomization,) = _load(name)
            folder = Path(name).parent
            for resource in kustomization["resources"]:
                target = (DEPLOY / folder / resource).resolve()
                assert target.exists(), f"{name}: {resource}"
                if target.is_file():
                    listed.add(str(target.relative_to(DEPLOY)))
    assert listed == {n for n in FILES if not n.endswith("kustomization.yaml")}


def test_cli_check_passes_and_catches_a_stale_file(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(k8s.app, ["render", "--out", str(tmp_path)]).exit_code == 0
    result = runner.invoke(k8s.app, ["render", "--check", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (tmp_path / "base" / "triage.yaml").write_text("# edited\n")
    result = runner.invoke(k8s.app, ["render", "--check", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "base/triage.yaml" in result.output


def test_mounted_in_the_main_cli() -> None:
    from observability.cli import app

    result = CliRunner().invoke(app, ["kubernetes", "render", "--help"])
    assert result.exit_code == 0 and "--check" in result.output


def test_release_label_follows_the_option() -> None:
    files = k8s.render_all(release="prom")
    for name in ("base/podmonitors.yaml", "base/prometheusrules.yaml"):
        for obj in yamlfast.load_all(files[name]):
            if obj:
                assert obj["metadata"]["labels"]["release"] == "prom"


# --- schema-valid ---------------------------------------------------------------------------


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields rejected (the API server prunes them silently: a
    misspelt field would be lost, not refused)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


CRD_SCHEMAS = {
    (crd["group"] + "/" + crd["version"], crd["kind"]): _strict(crd["openAPIV3Schema"])
    for crd in (json.loads(p.read_text()) for p in sorted(CRDS.glob("*.json")))
}


def _validate(obj: Obj, version: str) -> None:
    key = (obj["apiVersion"], obj["kind"])
    if key in CRD_SCHEMAS:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        jsonschema.Draft7Validator(CRD_SCHEMAS[key]).validate(body)
        # metadata is an ObjectMeta: check it as a ConfigMap's.
        kubernetes_validate.validate(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj["metadata"]},
            version,
            strict=True,
        )
    else:
        kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES)
@pytest.mark.parametrize("item", OBJECTS, ids=_id)
def test_schema_valid(item: tuple[str, Obj], version: str) -> None:
    _validate(item[1], version)


def test_kinds_are_known() -> None:
    """Every kind is checked by one of the two schema sources, none skipped."""
    for obj in ALL:
        assert obj["apiVersion"] in (
            "v1",
            "apps/v1",
            "rbac.authorization.k8s.io/v1",
            "networking.k8s.io/v1",
        ) or ((obj["apiVersion"], obj["kind"]) in CRD_SCHEMAS), obj["kind"]


@pytest.mark.parametrize(
    "break_it",
    [
        lambda o: o["spec"]["template"]["spec"]["containers"][0].update(imagee="x:1"),
        lambda o: o["spec"]["template"]["spec"]["containers"][0]["ports"][0].update(
            containerPort="obs-metrics"
        ),
    ],
    ids=["unknown-field", "wrong-type"],
)
def test_the_core_schemas_bite(break_it: Any) -> None:
    broken = copy.deepcopy(_kinds("DaemonSet")[0])
    break_it(broken)
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(broken, KUBERNETES[0])


@pytest.mark.parametrize("kind", ["PodMonitor", "PrometheusRule"])
def test_the_crd_schemas_bite(kind: str) -> None:
    broken = copy.deepcopy(_kinds(kind)[0])
    broken["spec"]["podMetricEndpoints"] = []  # misspelt
    with pytest.raises(jsonschema.ValidationError):
        _validate(broken, KUBERNETES[0])


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl (its kustomize)")
@pytest.mark.parametrize("overlay", ["base", "daemonset", "sidecar"])
def test_kustomize_builds_valid_objects(overlay: str) -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(DEPLOY / overlay)], capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0 and "unknown command" in out.stderr:
        pytest.skip(f"this kubectl has no kustomize: {out.stderr.strip()[:200]}")
    assert out.returncode == 0, out.stderr
    built = [d for d in yamlfast.load_all(out.stdout) if d]
    for obj in built:
        _validate(obj, KUBERNETES[0])
        if overlay != "base":
            assert obj["metadata"]["namespace"] == k8s.NAMESPACE
    for binding in (o for o in built if o["kind"] == "RoleBinding"):
        assert all(s["namespace"] == k8s.NAMESPACE for s in binding["subjects"])


# --- images, privileges, resources ----------------------------------------------------------


def test_images_are_pinned_as_compose_pins_them() -> None:
    pins = {svc["image"] for svc in COMPOSE.values()}
    images = {c["image"] for _, c, _ in _containers()}
    assert images and images <= pins, images - pins
    for image in images:
        tag = image.rsplit(":", 1)[-1] if ":" in image.split("/")[-1] else ""
        assert tag and tag != "latest", image


@pytest.mark.parametrize("where,spec", _pod_specs())
def test_no_host_namespaces_and_no_root(where: str, spec: Obj) -> None:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(key), f"{where}: {key}"
    pod = spec.get("securityContext", {})
    for container in spec["containers"]:
        ctx = {**pod, **container.get("securityContext", {})}
        assert ctx.get("runAsNonRoot") is True, f"{where}/{container['name']}"
        assert ctx.get("runAsUser", 0) != 0, f"{where}/{container['name']}"
    assert pod.get("seccompProfile") == {"type": "RuntimeDefault"}


@pytest.mark.parametrize("where,container,spec", _containers(), ids=lambda p: str(p)[:60])
def test_containers_are_hardened_and_bounded(where: str, container: Obj, spec: Obj) -> None:
    ctx = container["securityContext"]
    assert ctx["privileged"] is False, where
    assert ctx["allowPrivilegeEscalation"] is False, where
    assert ctx["capabilities"] == {"drop": ["ALL"]}, where  # and none added
    assert ctx["readOnlyRootFilesystem"] is True, where
    for part in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][part]), f"{where}: {part}"


@pytest.mark.parametrize("where,spec", _pod_specs())
def test_host_paths_are_the_pod_logs_read_only_and_the_daemonsets_data(
    where: str, spec: Obj
) -> None:
    """The node's pod logs, read-only; and, in the DaemonSet only, its own data folder (the
    stores and tail checkpoints that outlive the pod), mounted nowhere else."""
    host = {v["name"]: v["hostPath"] for v in spec.get("volumes", []) if "hostPath" in v}
    allowed = {"/var/log/pods"} | ({k8s.NODE_DATA} if where.startswith("DaemonSet/") else set())
    assert {h["path"] for h in host.values()} <= allowed, where
    for container in spec["containers"]:
        for mount in container.get("volumeMounts", []):
            if mount["name"] not in host:
                continue
            if host[mount["name"]]["path"] == k8s.NODE_DATA:
                assert mount["mountPath"] == "/data", f"{where}: {mount}"
                assert host[mount["name"]]["type"] == "DirectoryOrCreate"
            else:
                assert mount.get("readOnly") is True, f"{where}: {mount}"


def test_no_rbac_and_no_api_token() -> None:
    """watch finds its node's pods in the kubelet's log folder: it calls no API, so it has a
    service account of its own with no Role bound and no token mounted."""
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        assert not _kinds(kind), kind
    (account,) = _kinds("ServiceAccount")
    assert account["automountServiceAccountToken"] is False
    (daemonset,) = _kinds("DaemonSet")
    assert (
        daemonset["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    )
    for where, spec in _pod_specs():
        assert spec.get("automountServiceAccountToken") is False, where


# --- one source: rules, dashboards, collector, Triton's command -----------------------------


def test_prometheus_rules_equal_the_rule_files() -> None:
    rules = {
        o["metadata"]["annotations"]["triton-observability/source"]: o
        for o in _kinds("PrometheusRule")
    }
    files = sorted((ROOT / "dashboards" / "alerts").glob("*.rules.yml"))
    assert set(rules) == {f"dashboards/alerts/{p.name}" for p in files}
    for path in files:
        source = yamlfast.load(path.read_text())["groups"]
        assert rules[f"dashboards/alerts/{path.name}"]["spec"]["groups"] == source, path.name


def test_dashboard_config_maps_equal_the_dashboards_json() -> None:
    maps = [o for o in _kinds("ConfigMap") if "grafana_dashboard" in o["metadata"]["labels"]]
    boards = sorted((ROOT / "dashboards" / "grafana" / "generated").glob("*.json"))
    assert len(maps) == len(boards)
    by_file = {name: (m, text) for m in maps for name, text in m["data"].items()}
    for path in boards:
        config_map, text = by_file[path.name]
        assert text == path.read_text(encoding="utf-8"), path.name
        assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert len(text.encode()) < 262144, "kubectl apply's last-applied annotation limit"


def test_collector_config_is_composes_with_tempo_in_the_cluster() -> None:
    (config_map,) = [o for o in _kinds("ConfigMap") if o["metadata"]["name"] == "otel-collector"]
    config = yamlfast.load(config_map["data"]["config.yaml"])
    source = yamlfast.load((ROOT / "deploy" / "otel-collector" / "config.yaml").read_text())
    assert config["exporters"]["otlp/tempo"].pop("endpoint") == k8s.TEMPO_OTLP
    source["exporters"]["otlp/tempo"].pop("endpoint")
    assert config == source
    assert set(config["receivers"]["otlp"]["protocols"]) == {"http", "grpc"}


def test_sidecar_tritons_command_is_composes() -> None:
    (triton,) = [c for where, c, _ in _containers() if c["name"] == "tritonserver"]
    demo = "--model-repository=/opt/triton-observability/observability/lab/repos/demo"
    expected = [
        demo if a == "--model-repository=/models" else a for a in COMPOSE["tritonserver"]["command"]
    ]
    assert triton["command"] == expected
    assert triton["resources"]["limits"]["nvidia.com/gpu"] == "1"


# --- monitors find what the workloads expose ------------------------------------------------


def _matches(selector: Obj, labels: dict[str, str]) -> bool:
    ok = all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())
    for expr in selector.get("matchExpressions", []):
        assert expr["operator"] == "In"
        ok = ok and labels.get(expr["key"]) in expr["values"]
    return ok


def test_pod_monitors_scrape_the_jobs_the_rules_select() -> None:
    text = "".join(p.read_text() for p in (ROOT / "dashboards" / "alerts").glob("*.rules.yml"))
    jobs = set(re.findall(r'job="([^"]+)"', text))
    monitors = {m["metadata"]["name"]: m for m in _kinds("PodMonitor")}
    relabelled = set()
    for monitor in monitors.values():
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            (relabel,) = endpoint["relabelings"]
            assert relabel["targetLabel"] == "job"
            relabelled.add(relabel["replacement"])
    assert relabelled == jobs == {"triton", "triton-obs"}
    # Each monitor finds a pod template exposing its port: Triton's metrics, and watch's on
    # both the DaemonSet's pods and the sidecar's Triton pods.
    found: dict[str, set[str]] = {name: set() for name in monitors}
    for obj in ALL:
        if obj["kind"] not in ("Deployment", "DaemonSet"):
            continue
        template = obj["spec"]["template"]
        ports = {p["name"] for c in template["spec"]["containers"] for p in c.get("ports", [])}
        for name, monitor in monitors.items():
            (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
            if _matches(monitor["spec"]["selector"], template["metadata"]["labels"]):
                assert endpoint["port"] in ports, f"{name} -> {obj['metadata']['name']}"
                found[name].add(obj["kind"] + "/" + obj["metadata"]["name"])
    assert found == {
        "triton": {"Deployment/triton"},
        "triton-obs": {"Deployment/triton", "DaemonSet/triton-obs-watch"},
    }


def _env_values(container: Obj) -> dict[str, str]:
    """What the kubelet substitutes for $(VAR) in args: a pod IP for the downward API."""
    values = {}
    for env in container.get("env", []):
        ref = env.get("valueFrom", {})
        if "fieldRef" in ref:
            values[env["name"]] = "10.1.2.3"
        else:
            values[env["name"]] = env["value"]
    return values


def _args(container: Obj) -> list[str]:
    values = _env_values(container)
    return [re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], a) for a in container["args"]]


@pytest.mark.parametrize(
    "name",
    sorted({c["name"] for _, c, _ in _containers() if c["image"] == COMPOSE["triage"]["image"]}),
)
def test_our_containers_args_parse_with_todays_cli(name: str) -> None:
    """The args are flags `triton-obs` has now: parsed by the real command, not run."""
    import typer.main

    from observability.cli import app

    group = typer.main.get_command(app)
    for where, container, _ in _containers():
        if container["name"] != name or "args" not in container:
            continue  # the DaemonSet's data check runs a shell, not triton-obs
        args = _args(container)
        command = group.commands[args[0]]  # type: ignore[attr-defined]
        ctx = command.make_context(args[0], args[1:])
        assert ctx.params, where
        if args[0] != "watch":
            continue
        assert ctx.params["port"] == k8s.WATCH_PORT and ctx.params["host"] == "10.1.2.3"
        if where.startswith("DaemonSet/"):
            # Many Tritons: a folder of stores, the pods found by their logs.
            assert ctx.params["store"] == Path("/data") and ctx.params["pod_logs"]
            assert not (ctx.params["url"] or ctx.params["metrics_url"] or ctx.params["log"])
            # What the documented overlay adds: the targets file from its ConfigMap.
            extra = [f"--targets={k8s.TARGETS_DIR}/targets.yaml"]
            ctx = command.make_context(args[0], args[1:] + extra)
            assert ctx.params["targets"] == Path(k8s.TARGETS_DIR) / "targets.yaml"
        else:
            assert ctx.params["store"] == Path("/data/triton-obs.db")
            assert ctx.params["url"] and ctx.params["metrics_url"] and ctx.params["log"]


def _daemonset_watch() -> Obj:
    (daemonset,) = _kinds("DaemonSet")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    return container


def test_daemonset_follows_the_triton_containers_logs_of_its_node(tmp_path: Path) -> None:
    """--pod-logs is a glob of the kubelet's folder for the containers named as the sidecar
    overlay's Triton container; on a kubelet-like tree it finds the Triton pods by namespace
    and name, and no other container's logs."""
    from observability.fleet import discover_pods, pod_log_pattern

    args = _args(_daemonset_watch())
    (glob,) = [a.split("=", 1)[1] for a in args if a.startswith("--pod-logs=")]
    assert glob.startswith("/var/log/pods/") and pod_log_pattern(glob) == glob
    (triton,) = [c for _, c, _ in _containers() if c["image"] == COMPOSE["tritonserver"]["image"]]
    assert Path(glob).parts[-2] == triton["name"] == k8s.TRITON_CONTAINER
    for pod, container in [("ml_triton-7d9f-x2_1234-abcd", "tritonserver"),
                           ("ml_triton-7d9f-x2_1234-abcd", "watch"),
                           ("web_nginx-1_5678-ef", "nginx")]:  # fmt: skip
        (tmp_path / pod / container).mkdir(parents=True)
        (tmp_path / pod / container / "0.log").write_text("")
    found = discover_pods(str(tmp_path / Path(*Path(glob).parts[4:])))
    assert set(found) == {"ml/triton-7d9f-x2"}
    assert (found["ml/triton-7d9f-x2"].namespace, found["ml/triton-7d9f-x2"].pod) == (
        "ml",
        "triton-7d9f-x2",
    )
    assert found["ml/triton-7d9f-x2"].log_format == "cri"


def test_triton_container_option_changes_the_glob() -> None:
    files = k8s.render_all(triton_container="triton-inference-server")
    (daemonset,) = [d for d in yamlfast.load_all(files["daemonset/watch.yaml"]) if d]
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    assert "--pod-logs=/var/log/pods/*_*_*/triton-inference-server/*.log" in container["args"]
    result = CliRunner().invoke(k8s.app, ["render", "--check", "--triton-container", "a_b"])
    assert result.exit_code != 0


def test_daemonset_keeps_its_stores_on_the_node() -> None:
    """The stores and tail checkpoints (one per target) live in a host folder: a restarted or
    updated pod resumes each log where it stopped instead of re-reading or skipping."""
    container = _daemonset_watch()
    args = _args(container)
    assert "--store=/data" in args
    spec = _kinds("DaemonSet")[0]["spec"]["template"]["spec"]
    (data,) = [v for v in spec["volumes"] if v["name"] == "data"]
    assert data["hostPath"]["path"] == k8s.NODE_DATA
    # The pod fails at once, saying why, while the folder is not writable by watch's user.
    (check,) = spec["initContainers"]
    assert check["command"][:2] == ["sh", "-c"] and "test -w /data" in check["command"][2]
    assert {"name": "data", "mountPath": "/data"} in check["volumeMounts"]
    # Bounded: each target's window, and the memory limit above what the windows may hold.
    (max_records,) = [int(a.split("=")[1]) for a in args if a.startswith("--max-records=")]
    assert max_records * 400 * 8 < 2 * 1024**3 <= _bytes(container["resources"]["limits"]["memory"])


def _bytes(quantity: str) -> int:
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}
    return int(quantity[:-2]) * units[quantity[-2:]]


def test_targets_file_is_an_optional_config_map() -> None:
    spec = _kinds("DaemonSet")[0]["spec"]["template"]["spec"]
    (targets,) = [v for v in spec["volumes"] if v["name"] == "targets"]
    assert targets["configMap"] == {"name": "triton-obs-watch-targets", "optional": True}
    (mount,) = [m for m in _daemonset_watch()["volumeMounts"] if m["name"] == "targets"]
    assert mount == {"name": "targets", "mountPath": k8s.TARGETS_DIR, "readOnly": True}
    # Not rendered: an overlay brings it (docs/kubernetes.md), and without it nothing breaks.
    assert not [o for o in _kinds("ConfigMap") if o["metadata"]["name"].startswith("triton-obs-w")]


# --- watch's port: labels kept, ready on the API, reachable by Prometheus and triage only ----


def test_watch_pod_monitor_honors_the_pods_labels() -> None:
    """A fleet watch's series carry the Triton pod's namespace and pod: kept, not renamed
    exported_namespace/exported_pod. Triton's own /metrics has no such labels to keep."""
    monitors = {m["metadata"]["name"]: m for m in _kinds("PodMonitor")}
    ((watch,), (triton,)) = (
        monitors["triton-obs"]["spec"]["podMetricsEndpoints"],
        monitors["triton"]["spec"]["podMetricsEndpoints"],
    )
    assert watch["honorLabels"] is True
    assert "honorLabels" not in triton


@pytest.mark.parametrize(
    "where", [w for w, c, _ in _containers() if c["name"] == "watch"], ids=lambda w: w
)
def test_watch_is_ready_when_its_api_answers(where: str) -> None:
    (container,) = [c for w, c, _ in _containers() if w == where]
    probe = container["readinessProbe"]["httpGet"]
    assert probe == {"path": "/api/v1/targets", "port": "obs-metrics"}
    assert "--host=$(POD_IP)" in container["args"]  # the pod's IP, never 0.0.0.0


def _selects(policy: Obj, labels: dict[str, str]) -> bool:
    return _matches(policy["spec"]["podSelector"], labels)


def test_only_prometheus_and_triage_reach_watchs_port() -> None:
    """Every pod template that exposes watch's port is selected by a NetworkPolicy, and every
    rule letting traffic in to that port names its peers: Prometheus's pods and the triage
    app's, nothing else (no rule without ``from``, no bare namespace selector)."""
    policies = _kinds("NetworkPolicy")
    allowed = [
        {"podSelector": {"matchLabels": k8s.PROMETHEUS_PODS}, "namespaceSelector": {}},
        {"podSelector": {"matchLabels": k8s.TRIAGE_PODS}},
    ]
    covered = 0
    for obj in ALL:
        if obj["kind"] not in ("Deployment", "DaemonSet"):
            continue
        template = obj["spec"]["template"]
        ports = [p for c in template["spec"]["containers"] for p in c.get("ports", [])]
        if not any(p["containerPort"] == k8s.WATCH_PORT for p in ports):
            continue
        mine = [p for p in policies if _selects(p, template["metadata"]["labels"])]
        assert mine, obj["metadata"]["name"]
        for policy in mine:
            assert "Ingress" in policy["spec"]["policyTypes"]
            for rule in policy["spec"]["ingress"]:
                rule_ports = {p["port"] for p in rule.get("ports", [])}
                # A rule with no ports opens every port: it must not exist here.
                assert rule_ports, policy["metadata"]["name"]
                if k8s.WATCH_PORT in rule_ports or "obs-metrics" in rule_ports:
                    assert rule["from"] == allowed, policy["metadata"]["name"]
        covered += 1
    assert covered == 2  # the DaemonSet and the sidecar's Triton
    # The triage app's pods carry the labels the policies let in.
    (triage,) = [o for o in _kinds("Deployment") if o["metadata"]["name"] == "triton-obs-triage"]
    assert _matches(
        {"matchLabels": k8s.TRIAGE_PODS}, triage["spec"]["template"]["metadata"]["labels"]
    )


def test_documented_targets_overlay_builds() -> None:
    """The targets overlay of docs/kubernetes.md, built by kubectl's kustomize when there is
    one: the ConfigMap (its name hashed) is the one the DaemonSet mounts, --targets is added."""
    docs = (ROOT / "docs" / "kubernetes.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, re.S)
    (kustomization,) = [b for b in blocks if "triton-obs-watch-targets" in b and "patches" in b]
    (targets,) = [b for b in blocks if b.lstrip().startswith("targets:")]
    overlay = yamlfast.load(kustomization)
    assert overlay["configMapGenerator"][0]["name"] == "triton-obs-watch-targets"
    from observability.fleet import load_targets

    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl (its kustomize)")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        # As the docs lay it out: the overlay beside a checkout (kustomize wants relative paths).
        shutil.copytree(DEPLOY, Path(tmp) / "triton-observability" / "deploy" / "kubernetes")
        folder = Path(tmp) / "overlay"
        folder.mkdir()
        (folder / "kustomization.yaml").write_text(kustomization)
        (folder / "targets.yaml").write_text(targets)
        assert load_targets(folder / "targets.yaml")
        out = subprocess.run(
            ["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120
        )
    if out.returncode != 0 and "unknown command" in out.stderr:
        pytest.skip(f"this kubectl has no kustomize: {out.stderr.strip()[:200]}")
    assert out.returncode == 0, out.stderr
    built = [d for d in yamlfast.load_all(out.stdout) if d]
    (config_map,) = [
        o for o in built
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("triton-obs-watch-targets")
    ]  # fmt: skip
    (daemonset,) = [o for o in built if o["kind"] == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "targets"]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert f"--targets={k8s.TARGETS_DIR}/targets.yaml" in spec["containers"][0]["args"]
    for obj in built:
        _validate(obj, KUBERNETES[0])
