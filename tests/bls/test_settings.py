"""Constructor argument > TRITON_OBS_* > Triton's args > default; bad env warns, bad arg raises."""

from __future__ import annotations

import json

import pytest

from observability.bls.settings import Settings, resolve

ARGS = {
    "model_name": "router",
    "model_instance_name": "router_0_3",
    "model_config": json.dumps({"model_transaction_policy": {"decoupled": True}}),
}


def test_defaults_and_triton_args() -> None:
    s = resolve(ARGS, env={})
    assert (s.model, s.instance, s.decoupled) == ("router", "router_0_3", True)
    assert s.deadline_s == Settings.deadline_s and s.endpoint is None and s.enabled


def test_argument_beats_env_beats_default() -> None:
    env = {"TRITON_OBS_DEADLINE_S": "7", "TRITON_OBS_ENDPOINT": "http://127.0.0.1:1/v1/traces"}
    assert resolve(ARGS, env=env).deadline_s == 7.0
    assert resolve(ARGS, env=env, deadline_s=2).deadline_s == 2.0
    assert resolve(ARGS, env=env).endpoint == "http://127.0.0.1:1/v1/traces"
    assert resolve(ARGS, env={"TRITON_OBS_MODEL": "other"}).model == "other"


def test_otel_endpoint_is_a_fallback() -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://a:4318/v1/traces"}
    assert resolve(None, env=env).endpoint == "http://a:4318/v1/traces"
    env["TRITON_OBS_ENDPOINT"] = "none"
    assert resolve(None, env=env).endpoint is None


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("DEADLINE_S", "soon"),
        ("DEADLINE_S", "-1"),
        ("SAMPLE_RATIO", "2"),
        ("ENABLED", "maybe"),
        ("ENDPOINT", "127.0.0.1:4318"),
        ("QUEUE_SIZE", "0"),
        ("THREAD_POOL_SIZE", "1.5"),
    ],
)
def test_bad_env_value_warns_and_falls_back(name: str, raw: str) -> None:
    with pytest.warns(RuntimeWarning, match=f"TRITON_OBS_{name}"):
        s = resolve(ARGS, env={f"TRITON_OBS_{name}": raw})
    key = name.lower()
    assert getattr(s, key) == getattr(Settings(), key)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"deadline_s": 0},
        {"deadline_s": "x"},
        {"sample_ratio": 1.5},
        {"endpoint": "ftp://x"},
        {"queue_size": 2.5},
        {"no_such_setting": 1},
    ],
)
def test_bad_argument_raises(kwargs: dict) -> None:
    with pytest.raises((ValueError, TypeError)):
        resolve(ARGS, env={}, **kwargs)


def test_opentelemetry_environment_below_ours() -> None:
    """The OpenTelemetry environment specification's variables configure the library too."""
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
        "OTEL_SERVICE_NAME": "ranker",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=a%20b",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.25",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1500",
    }
    s = resolve(ARGS, env=env)
    assert s.endpoint == "http://collector:4318/v1/traces"  # a base URL gets the signal path
    assert s.service_name == "ranker" and s.sample_ratio == 0.25
    assert s.resource_attributes == (("deployment.environment", "prod"), ("team", "a b"))
    assert s.compression == "gzip" and s.export_timeout_s == 1.5
    # the signal-specific variable wins, and ours win over all of them
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://other:4318/custom"
    env["OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"] = "none"
    assert resolve(ARGS, env=env).endpoint == "http://other:4318/custom"
    assert resolve(ARGS, env=env).compression == "none"
    env["TRITON_OBS_SAMPLE_RATIO"] = "1"
    assert resolve(ARGS, env=env).sample_ratio == 1.0
    assert resolve(ARGS, env={"OTEL_SDK_DISABLED": "true"}).enabled is False
    assert resolve(ARGS, env={"OTEL_TRACES_SAMPLER": "always_off"}).sample_ratio == 0.0


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "-5"),
        ("OTEL_RESOURCE_ATTRIBUTES", "novalue"),
        ("OTEL_TRACES_SAMPLER", "jaeger_remote"),
        ("OTEL_SDK_DISABLED", "perhaps"),
    ],
)
def test_bad_opentelemetry_values_warn_and_are_ignored(name: str, raw: str) -> None:
    with pytest.warns(RuntimeWarning, match=name):
        s = resolve(ARGS, env={name: raw})
    assert s == resolve(ARGS, env={})
