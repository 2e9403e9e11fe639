"""compose.yaml without a Docker engine: valid against the Compose specification's JSON
schema, every mounted or provisioned file present, nothing exposed beyond loopback, no
default password, anonymous Grafana off, every image pinned.

``compose-spec.json`` is vendored beside this file (compose-spec/compose-spec,
``schema/compose-spec.json`` at commit 170098ba07d9f53c383a41bfd4c5166b0a4529a6): tests never
download.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from tests import yamlfast

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yamlfast.load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, dict] = COMPOSE["services"]
SCHEMA = json.loads((Path(__file__).with_name("compose-spec.json")).read_text())


def _default(value: str) -> str:
    """Interpolate ``${VAR:-default}`` with its default, as compose does when VAR is unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def test_valid_against_the_compose_spec() -> None:
    jsonschema.Draft7Validator(SCHEMA).validate(COMPOSE)


def test_the_schema_rejects_a_broken_file() -> None:
    """Proof the validation bites: an unknown service key is an error."""
    broken = {"services": {"x": {"image": "a:1", "prots": ["1:1"]}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(broken)


def test_the_stack_is_complete() -> None:
    assert set(SERVICES) >= {
        "tritonserver", "prometheus", "alertmanager", "grafana", "otel-collector", "tempo",
        "triton-obs", "triage",
    }  # fmt: skip


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_images_are_pinned(service: str) -> None:
    image = SERVICES[service]["image"]
    tag = image.rsplit(":", 1)[-1] if ":" in image.split("/")[-1] else ""
    assert tag and tag != "latest", image
    build = SERVICES[service].get("build")
    if build is not None:  # and so is the base of what is built
        dockerfile = ROOT / (build if isinstance(build, str) else build["context"])
        dockerfile = (
            dockerfile / "Dockerfile" if isinstance(build, str) else ROOT / build["dockerfile"]
        )
        bases = re.findall(r"^FROM (\S+)", dockerfile.read_text(), re.M)
        assert bases and all(":" in b and not b.endswith(":latest") for b in bases), bases


def test_our_image_runs_as_a_non_root_user() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER [1-9]\d*$", text, re.M), "the last USER must be a non-root uid"


def test_every_bind_mount_exists_in_the_repo() -> None:
    for name, svc in SERVICES.items():
        for volume in svc.get("volumes", []):
            source = _default(volume.split(":")[0])
            if source.startswith("."):
                assert (ROOT / source).exists(), f"{name}: {source}"


def test_every_port_is_bound_to_loopback() -> None:
    for name, svc in SERVICES.items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: {port}"


def test_grafana_has_no_default_password_and_no_anonymous_access() -> None:
    env = SERVICES["grafana"]["environment"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    password = env["GF_SECURITY_ADMIN_PASSWORD"]
    assert re.fullmatch(r"\$\{GRAFANA_ADMIN_PASSWORD:\?[^}]+\}", password), (
        "the password must come from the environment and fail when unset"
    )
    text = (ROOT / "compose.yaml").read_text()
    assert not re.search(r"(?i)password\W+(admin|changeme|secret|password)\b", text)


def test_triton_runs_on_gpu_with_verbose_log_and_opentelemetry_traces() -> None:
    triton = SERVICES["tritonserver"]
    dockerfile = (ROOT / triton["build"]["dockerfile"]).read_text()
    assert re.search(r"^FROM nvcr\.io/nvidia/tritonserver:\d\d\.\d\d-py3$", dockerfile, re.M)
    assert "[bls]" in dockerfile  # what the instrumented models import
    devices = triton["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    args = " ".join(triton["command"])
    # The stubs' output reaches the log only through the pipe, never through --log-file.
    assert args.startswith("triton-obs logpipe --file /var/log/triton/triton.log -- tritonserver")
    assert "--log-verbose=1" in args and "--log-file" not in args
    assert "mode=opentelemetry" in args and "otel-collector:4318" in args
    assert any(v.startswith("triton-logs:") for v in SERVICES["triton-obs"]["volumes"])


def test_provisioned_files_point_at_what_is_mounted() -> None:
    prom = yamlfast.load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    assert {j["job_name"] for j in prom["scrape_configs"]} == {"triton", "triton-obs"}
    assert prom["rule_files"] == ["/etc/prometheus/rules/*.rules.yml"]
    assert any(
        v.startswith("./dashboards/alerts:/etc/prometheus/rules")
        for v in SERVICES["prometheus"]["volumes"]
    )
    providers = yamlfast.load(
        (ROOT / "deploy/grafana/provisioning/dashboards/dashboards.yml").read_text()
    )["providers"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in SERVICES["grafana"]["volumes"]}
    source = mounted[providers[0]["options"]["path"]]
    assert list((ROOT / source).glob("*.json")), source
    sources = yamlfast.load(
        (ROOT / "deploy/grafana/provisioning/datasources/datasources.yml").read_text()
    )["datasources"]
    assert {d["uid"] for d in sources} == {"prometheus", "tempo"}
