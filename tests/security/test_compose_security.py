"""compose.yaml and deploy/: nothing reachable from beyond the host unless the user sets it, no
secret with a default, Grafana without anonymous or self-made accounts.

``tests/dashboards/test_compose.py`` already checks the short ``ports`` syntax starts with
127.0.0.1, the Grafana admin password comes from a required variable, and anonymous access is
``false``. This extends it to what those checks let through: the long ``ports`` syntax and
``${VAR:-default}`` host addresses, the addresses services listen on inside the stack (their
defaults are often all interfaces: Prometheus ``:9090``, Alertmanager ``:9093`` and its cluster
gossip ``:9094``), every variable that looks like a secret, and Grafana's other doors.

Why in-container addresses matter although only published ports reach the host: any container
on the compose network, and any local user through the container's address, reaches what
listens on a container's interface. Only what must be published to be used listens there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from observability.netaddr import is_loopback
from tests import yamlfast

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_TEXT = (ROOT / "compose.yaml").read_text()
SERVICES: dict[str, dict[str, Any]] = yamlfast.load(COMPOSE_TEXT)["services"]
NAMESPACE = "tritonserver"
"""The service whose network namespace the loopback-only listeners share."""

ALL_INTERFACES_ALLOWED = {
    ("triage", "--host"): "the app you open: published on the host's 127.0.0.1:8501, and Docker "
    "forwards a published port to the container's interface, not to its loopback",
}
"""In-container listeners on all interfaces, each with the reason it must be so."""
LOOPBACK_REQUIRED = {
    "prometheus": ("--web.listen-address",),
    "alertmanager": ("--web.listen-address",),
}
"""Listen flags whose default is all interfaces: they must be given, and be loopback."""
SECRET_NAME = re.compile(r"(?i)(PASSW(OR)?D|SECRET|TOKEN|API_?KEY|CREDENTIAL|PRIVATE_KEY)")
_LISTEN = re.compile(r"(--[\w.-]*(?:listen-address|address|host))(?:=|\s+)(\S*)")


def resolve(value: str) -> str:
    """``${VAR:-default}`` and ``${VAR-default}`` as compose resolves them with VAR unset."""
    return re.sub(r"\$\{\w+:?-([^}]*)\}", r"\1", value)


def command_text(service: dict[str, Any]) -> str:
    command = service.get("command", "")
    return " ".join(command) if isinstance(command, list) else str(command)


def listen_flags(service: dict[str, Any]) -> list[tuple[str, str]]:
    """``(flag, resolved address)`` of every listen flag in the command line."""
    return [(flag, resolve(value)) for flag, value in _LISTEN.findall(command_text(service))]


def host_of(address: str) -> str:
    """The host of ``HOST:PORT``, ``[V6]:PORT`` or a bare host; ``""`` for ``:PORT``."""
    if address.startswith("["):
        return address[1 : address.index("]")]
    if address.count(":") == 1:
        return address.split(":", 1)[0]
    return address


def published(service: dict[str, Any]) -> list[str]:
    """The host address of every published port, short or long syntax, defaults resolved."""
    out = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            out.append(resolve(str(port.get("host_ip", ""))))
            continue
        parts = resolve(str(port)).rsplit(":", 2)
        out.append(parts[0] if len(parts) == 3 else "")  # "8000:8000" binds every interface
    return out


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_published_ports_bind_loopback_even_in_long_syntax(service: str) -> None:
    for host in published(SERVICES[service]):
        assert is_loopback(host), f"{service} publishes on {host or 'every interface'}"


def test_the_port_checks_bite() -> None:
    """Proof the parsing catches what a careless edit would write."""
    bad = [
        {"ports": ["3000:3000"]},
        {"ports": ["${GRAFANA_HOST:-0.0.0.0}:3000:3000"]},
        {"ports": [{"target": 3000, "published": 3000}]},
    ]
    for service in bad:
        assert not all(is_loopback(h) for h in published(service)), service
    assert listen_flags({"command": ["--web.listen-address=${X:-0.0.0.0}:9090"]}) == [
        ("--web.listen-address", "0.0.0.0:9090")
    ]


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_listeners_inside_the_stack_are_loopback_unless_they_must_be_published(
    service: str,
) -> None:
    flags = listen_flags(SERVICES[service])
    for flag in LOOPBACK_REQUIRED.get(service, ()):
        assert flag in dict(flags), f"{service} must set {flag} (its default is every interface)"
    for flag, address in flags:
        if (service, flag) in ALL_INTERFACES_ALLOWED or address == "":
            continue  # allowed with its reason; an empty address turns the listener off
        host = host_of(address)
        assert is_loopback(host), f"{service} {flag}={address}: beyond loopback by default"


def test_alertmanager_runs_no_cluster_listener() -> None:
    """Alertmanager gossips on 0.0.0.0:9094 unless ``--cluster.listen-address`` is empty."""
    command = SERVICES["alertmanager"]["command"]
    assert "--cluster.listen-address=" in command, command


def test_loopback_listeners_share_one_namespace_with_their_clients() -> None:
    """A loopback listener is only reachable from its own network namespace: Prometheus,
    Alertmanager, watch and Grafana must share one, and point at each other on 127.0.0.1."""
    for name in ("prometheus", "alertmanager", "grafana", "triton-obs"):
        assert SERVICES[name].get("network_mode") == f"service:{NAMESPACE}", name
        assert "ports" not in SERVICES[name], f"{name}: publish on {NAMESPACE} instead"
    prom = yamlfast.load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    jobs = prom["scrape_configs"] + prom["alerting"]["alertmanagers"]
    targets = [t for job in jobs for c in job["static_configs"] for t in c["targets"]]
    assert all(t.startswith("127.0.0.1:") for t in targets), targets
    sources = yamlfast.load(
        (ROOT / "deploy/grafana/provisioning/datasources/datasources.yml").read_text()
    )["datasources"]
    prometheus = next(d for d in sources if d["type"] == "prometheus")
    assert prometheus["url"] == "http://127.0.0.1:9090"
    host_ports = {p.rsplit(":", 1)[-1].split()[0] for p in map(str, SERVICES[NAMESPACE]["ports"])}
    assert {"3000", "9090", "9093", "9464"} <= host_ports


def test_no_secret_has_a_value_or_a_default() -> None:
    """Every secret-looking variable is ``${VAR:?message}`` (compose refuses to start without
    it) or a ``__FILE`` path; none is a literal or has a ``:-default``."""
    seen = 0
    for name, service in SERVICES.items():
        env = service.get("environment", {})
        if isinstance(env, list):
            env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
        for key, value in env.items():
            if not SECRET_NAME.search(key) or key.endswith("__FILE"):
                continue
            seen += 1
            assert re.fullmatch(r"\$\{\w+:\?[^}]+\}", str(value)), f"{name}: {key}={value}"
    assert seen, "the Grafana admin password at least is a secret"
    assert not re.search(r"\$\{\w*(PASSW|SECRET|TOKEN)\w*:?-", COMPOSE_TEXT, re.I)


NOT_A_CREDENTIAL = {"automountServiceAccountToken", "secretKeyRef", "secretName"}
"""Keys that match SECRET_NAME and hold a setting or a reference, not a secret: a pod's API
token on or off, the name of a Kubernetes Secret to read one from."""
_DOCKER_SECRET = re.compile(r"(?im)^\s*(?:ENV|ARG)\s+(\S*)")


def credentials_in(text: str, name: str) -> list[str]:
    """Where ``text`` (the file ``name``) holds a credential: a secret-looking key with a value
    (``password:``, ``basic_auth:``), an environment variable with a secret-looking name given
    a literal ``value`` instead of a ``secretKeyRef``, a Kubernetes ``Secret`` with data, or a
    Dockerfile ``ENV``/``ARG`` with a secret-looking name. Every YAML document of the file is
    read: the Kubernetes manifests hold several."""
    if not name.endswith((".yml", ".yaml")):
        return [
            f"{name}: {line.strip()} sets a secret"
            for line in text.splitlines()
            for var in _DOCKER_SECRET.findall(line)
            if SECRET_NAME.search(var)
        ]
    found: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            env_name = value.get("name")
            if (
                isinstance(env_name, str)
                and SECRET_NAME.search(env_name)
                and "value" in value
                and not str(value["value"]).startswith("/")  # a path to a mounted secret
            ):
                found.append(f"{name}: {where} sets {env_name} to a literal")
            for key, item in value.items():
                if str(key) in NOT_A_CREDENTIAL:
                    continue
                if SECRET_NAME.search(str(key)) or str(key) in ("basic_auth", "authorization"):
                    found.append(f"{name}: {where}.{key} holds a credential")
                walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")

    for index, document in enumerate(yamlfast.load_all(text)):
        if (
            isinstance(document, dict)
            and document.get("kind") == "Secret"
            and (document.get("data") or document.get("stringData"))
        ):
            found.append(f"{name}: document {index} is a Secret with data")
        walk(document, f"[{index}]")
    return found


DEPLOY_FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "deploy").rglob("*") if p.is_file())


@pytest.mark.parametrize("path", DEPLOY_FILES)
def test_deploy_files_hold_no_credentials(path: str) -> None:
    text = (ROOT / path).read_text()
    assert credentials_in(text, path) == []
    if path.endswith((".yml", ".yaml")):
        assert [d for d in yamlfast.load_all(text) if d is not None], f"{path}: no document read"


def test_the_credential_check_reads_every_document() -> None:
    """A credential in any document of a multi-document manifest, in any of the forms the
    check names, is caught; the settings that merely look like one are not."""
    many = max(
        (ROOT / "deploy" / "kubernetes").rglob("*.yaml"),
        key=lambda p: p.read_text().count("\n---\n"),
    )
    clean = many.read_text()
    assert clean.count("\n---\n") >= 1 and credentials_in(clean, "watch.yaml") == []
    planted = [
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {api_key: abc}\n",
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringData: {a: b}\n",
        "---\nspec:\n  containers:\n  - env:\n    - {name: GRAFANA_PASSWORD, value: hunter2}\n",
        "---\nscrape_configs:\n- basic_auth: {username: u}\n",
    ]
    for extra in planted:
        assert credentials_in(clean + extra, "watch.yaml"), extra
    secret_ref = {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    from_secret = yaml.safe_dump({"env": [{"name": "API_TOKEN", **secret_ref}]})
    assert credentials_in(from_secret, "x.yaml") == []
    assert credentials_in("FROM x\nENV HF_TOKEN=abc\n", "Dockerfile")
    assert credentials_in("FROM x\nENV LANG=C.UTF-8\n", "Dockerfile") == []


def test_grafana_has_no_other_door() -> None:
    env = {k: str(v).lower() for k, v in SERVICES["grafana"]["environment"].items()}
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env.get("GF_AUTH_ANONYMOUS_ORG_ROLE", "viewer") == "viewer"
    assert env["GF_USERS_ALLOW_SIGN_UP"] == "false"
    assert env.get("GF_SECURITY_ALLOW_EMBEDDING", "false") == "false"
    assert env.get("GF_AUTH_DISABLE_LOGIN_FORM", "false") == "false", "login is the only way in"
    assert env.get("GF_AUTH_PROXY_ENABLED", "false") == "false"


def test_prometheus_admin_endpoints_are_off() -> None:
    """Anyone who reaches Prometheus could delete series or shut it down with these."""
    command = command_text(SERVICES["prometheus"])
    assert "--web.enable-admin-api" not in command
    assert "--web.enable-lifecycle" not in command
    assert "--web.enable-remote-write-receiver" not in command
