"""deploy/kubernetes without a cluster: rendered == checked in, every object valid against the
Kubernetes schemas (kubernetes-validate, strict) or the Prometheus Operator's CRD schemas
(vendored in ``crds/``), images pinned as compose.yaml pins them, nothing privileged, root or
on the host's network, RBAC no wider than pods get/list/watch, the PrometheusRules equal to the
rule files, the dashboard ConfigMaps equal to the dashboards' JSON, and the watch and triage
arguments accepted by today's CLI.

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
import yaml
from typer.testing import CliRunner

from dashboards import kubernetes as k8s

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
CRDS = Path(__file__).with_name("crds")
# The oldest Kubernetes the manifests claim, and the newest the package knows.
KUBERNETES = ["1.29.0", kubernetes_validate.latest_version()]
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]

Obj = dict[str, Any]


def _load(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


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
        for obj in yaml.safe_load_all(files[name]):
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
        assert obj["apiVersion"] in ("v1", "apps/v1", "rbac.authorization.k8s.io/v1") or (
            (obj["apiVersion"], obj["kind"]) in CRD_SCHEMAS
        ), obj["kind"]


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
    built = [d for d in yaml.safe_load_all(out.stdout) if d]
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
def test_host_paths_are_only_the_pod_logs_read_only(where: str, spec: Obj) -> None:
    host = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
    assert set(host.values()) <= {"/var/log/pods"}, where
    for container in spec["containers"]:
        for mount in container.get("volumeMounts", []):
            if mount["name"] in host:
                assert mount.get("readOnly") is True, f"{where}: {mount}"


def test_rbac_reads_pods_and_nothing_else() -> None:
    assert not _kinds("ClusterRole") and not _kinds("ClusterRoleBinding")
    (role,) = _kinds("Role")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    (binding,) = _kinds("RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (account,) = _kinds("ServiceAccount")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "triton"}
    ]
    (daemonset,) = _kinds("DaemonSet")
    assert (
        daemonset["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    )
    # Every other workload runs without an API token.
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
        source = yaml.safe_load(path.read_text())["groups"]
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
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    source = yaml.safe_load((ROOT / "deploy" / "otel-collector" / "config.yaml").read_text())
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
    """What the kubelet substitutes for $(VAR) in args: the target ConfigMap's values, a pod
    IP for the downward API."""
    (target,) = [o for o in _kinds("ConfigMap") if o["metadata"]["name"].endswith("-target")]
    values = {}
    for env in container.get("env", []):
        ref = env.get("valueFrom", {})
        if "configMapKeyRef" in ref:
            values[env["name"]] = target["data"][ref["configMapKeyRef"]["key"]]
        elif "fieldRef" in ref:
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
        if container["name"] != name:
            continue
        args = _args(container)
        command = group.commands[args[0]]  # type: ignore[attr-defined]
        ctx = command.make_context(args[0], args[1:])
        assert ctx.params, where
        if args[0] == "watch":
            assert ctx.params["store"] == Path("/data/triton-obs.db")
            assert ctx.params["port"] == k8s.WATCH_PORT and ctx.params["host"] == "10.1.2.3"
            assert ctx.params["url"] and ctx.params["metrics_url"] and ctx.params["log"]


def test_daemonset_reads_cri_logs_from_var_log_pods() -> None:
    (daemonset,) = _kinds("DaemonSet")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    args = _args(container)
    assert "--log-format=cri" in args
    (log,) = [a.split("=", 1)[1] for a in args if a.startswith("--log=")]
    assert log.startswith("/var/log/pods/")
