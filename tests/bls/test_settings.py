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
