"""Settings of the in-model BLS instrumentation: argument > ``TRITON_OBS_*`` > ``OTEL_*`` > default.

Why the precedence and the asymmetry: a model author's explicit argument is a programming
decision, so a bad one raises at ``initialize`` where it is seen at once; an environment value
is an operator's deployment decision, and a typo there must never take a model down, so it
warns and falls back to the default (as opentelemetry-sdk does with ``OTEL_*``).

The OpenTelemetry environment specification's variables are honoured below ours, so a
deployment that already configures OpenTelemetry needs nothing new: ``OTEL_SDK_DISABLED``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is) and ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base
URL: ``/v1/traces`` is appended), ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER``/``OTEL_TRACES_SAMPLER_ARG`` (the library's sampler is always parent
based: ``traceidratio`` and ``parentbased_traceidratio`` give the root ratio), the
``COMPRESSION`` and ``TIMEOUT`` (milliseconds) of ``OTEL_EXPORTER_OTLP_TRACES_*`` or
``OTEL_EXPORTER_OTLP_*``; the headers are read by ``otlp.env_headers``.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ENV_PREFIX", "Settings", "resolve"]

ENV_PREFIX = "TRITON_OBS_"


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one model instance (one stub process)."""

    model: str = "unknown"
    instance: str = "unknown"
    enabled: bool = True
    """False: every call is a plain pass-through (no spans, no metrics, no watchdog)."""
    endpoint: str | None = None
    """OTLP/HTTP traces URL (``http://host:4318/v1/traces``); None: no span export."""
    deadline_s: float = 30.0
    """A BLS call in flight longer than this is reported as hung while it is still hung."""
    stream_stall_s: float | None = None
    """A decoupled stream (``bls.response_sender``) that sends nothing for this long is reported
    stalled while it is stalled; None: ``deadline_s``."""
    sample_ratio: float = 1.0
    metrics: bool = True
    """Publish ``triton_obs_bls_*`` through ``pb_utils.MetricFamily`` (Triton's /metrics)."""
    queue_size: int = 2048
    batch_size: int = 256
    flush_interval_s: float = 1.0
    export_timeout_s: float = 2.0
    shutdown_timeout_s: float = 4.0
    thread_pool_size: int = 32
    """The python backend's ``thread-pool-size`` (only Triton knows it; tell us if not 32)."""
    decoupled: bool = False
    service_name: str | None = None
    """The spans' ``service.name``; None: the model's name."""
    resource_attributes: tuple[tuple[str, str], ...] = ()
    """More resource attributes (``OTEL_RESOURCE_ATTRIBUTES``)."""
    compression: str = "none"
    """``gzip`` or ``none``: the OTLP request body."""


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _endpoint(text: str) -> str | None:
    text = text.strip()
    if not text or text.lower() == "none":
        return None
    if not text.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {text!r}")
    return text


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(f"must be > 0: {text!r}")
    return value


def _ratio(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"must be within [0, 1]: {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(f"must be > 0: {text!r}")
    return value


def _compression(text: str) -> str:
    value = text.strip().lower()
    if value not in ("gzip", "none"):
        raise ValueError(f"gzip or none, not {text!r}")
    return value


def _attributes(text: str) -> tuple[tuple[str, str], ...]:
    """``key=value,key2=value2`` with URL-encoded values, as the specification writes them."""
    out = []
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"not key=value: {part!r}")
        out.append((key.strip(), urllib.parse.unquote(value.strip())))
    return tuple(out)


def _name(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()


_PARSERS: dict[str, Callable[[str], Any]] = {
    "model": _name,
    "instance": _name,
    "enabled": _bool,
    "endpoint": _endpoint,
    "deadline_s": _positive_float,
    "stream_stall_s": _positive_float,
    "sample_ratio": _ratio,
    "metrics": _bool,
    "queue_size": _positive_int,
    "batch_size": _positive_int,
    "flush_interval_s": _positive_float,
    "export_timeout_s": _positive_float,
    "shutdown_timeout_s": _positive_float,
    "thread_pool_size": _positive_int,
    "decoupled": _bool,
    "service_name": _name,
    "resource_attributes": _attributes,
    "compression": _compression,
}

_SAMPLERS = {
    "always_on": 1.0,
    "always_off": 0.0,
    "parentbased_always_on": 1.0,
    "parentbased_always_off": 0.0,
}


def _otel(env: Mapping[str, str]) -> dict[str, Any]:
    """Settings from the OpenTelemetry variables (module docstring); bad values warn."""
    found: dict[str, Any] = {}

    def take(name: str, key: str, parse: Callable[[str], Any]) -> None:
        raw = env.get(name)
        if raw is None or not raw.strip():
            return
        try:
            found[key] = parse(raw)
        except ValueError as exc:
            warnings.warn(f"ignoring {name}={raw!r} ({exc})", RuntimeWarning, stacklevel=3)

    take("OTEL_SDK_DISABLED", "enabled", lambda raw: not _bool(raw))
    take("OTEL_EXPORTER_OTLP_ENDPOINT", "endpoint", lambda raw: _traces_url(raw))
    take("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "endpoint", _endpoint)
    take("OTEL_SERVICE_NAME", "service_name", _name)
    take("OTEL_RESOURCE_ATTRIBUTES", "resource_attributes", _attributes)
    for scope in ("OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_"):  # the specific wins
        take(scope + "COMPRESSION", "compression", _compression)
        take(scope + "TIMEOUT", "export_timeout_s", lambda raw: _positive_float(raw) / 1000)
    sampler = (env.get("OTEL_TRACES_SAMPLER") or "").strip().lower()
    if sampler in _SAMPLERS:
        found["sample_ratio"] = _SAMPLERS[sampler]
    elif sampler in ("traceidratio", "parentbased_traceidratio"):
        found["sample_ratio"] = 1.0
        take("OTEL_TRACES_SAMPLER_ARG", "sample_ratio", _ratio)
    elif sampler:
        warnings.warn(f"ignoring OTEL_TRACES_SAMPLER={sampler!r}", RuntimeWarning, stacklevel=2)
    return found


def _traces_url(base: str) -> str | None:
    url = _endpoint(base)
    return None if url is None else url.rstrip("/") + "/v1/traces"


def _from_args(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """What Triton's ``initialize(args)`` tells us: model, instance, decoupled policy."""
    if not args:
        return {}
    found: dict[str, Any] = {}
    if args.get("model_name"):
        found["model"] = str(args["model_name"])
    if args.get("model_instance_name"):
        found["instance"] = str(args["model_instance_name"])
    try:
        config = json.loads(args.get("model_config") or "{}")
        policy = config.get("model_transaction_policy") or {}
        found["decoupled"] = bool(policy.get("decoupled", False))
    except (TypeError, ValueError):
        pass
    return found


def resolve(
    args: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Settings from explicit ``overrides`` > ``TRITON_OBS_<NAME>`` > ``OTEL_*`` > Triton's
    ``args`` > default (module docstring). Raises ``ValueError``/``TypeError`` for a bad
    override; warns (``RuntimeWarning``) and ignores a bad environment value.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = dict(_from_args(args))
    values.update(_otel(env))
    for key, parse in _PARSERS.items():
        raw = env.get(ENV_PREFIX + key.upper())
        if raw is None:
            continue
        try:
            values[key] = parse(raw)
        except ValueError as exc:
            warnings.warn(
                f"ignoring {ENV_PREFIX}{key.upper()}={raw!r} ({exc}); using the default",
                RuntimeWarning,
                stacklevel=2,
            )
    for key, value in overrides.items():
        if key not in _PARSERS:
            raise TypeError(f"unknown setting {key!r}")
        if value is None:
            continue
        values[key] = _PARSERS[key](value if isinstance(value, str) else str(value))
        if key in ("endpoint",) and not isinstance(value, str):
            raise TypeError(f"{key} must be a string, got {type(value).__name__}")
    return Settings(**values)
