"""OTLP/HTTP: pure decoders for OTLP trace exports and a small receiver on 127.0.0.1."""

from collectors.otlp.decode import (
    OtlpDecodeError,
    otlp_json_from_proto,
    spans_from_otlp_json,
    spans_from_otlp_proto,
)
from collectors.otlp.receiver import DEFAULT_MAX_BODY_BYTES, OtlpReceiver, ReceiverCounters

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "OtlpDecodeError",
    "OtlpReceiver",
    "ReceiverCounters",
    "otlp_json_from_proto",
    "spans_from_otlp_json",
    "spans_from_otlp_proto",
]
