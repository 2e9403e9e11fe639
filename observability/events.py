"""Typed events: the only currency between collectors, the store and detectors.

Every record is a frozen dataclass so that a parser's output can be compared, hashed and
replayed without surprises. Records carry no request payloads or tensor contents: shapes,
dtypes, names and ids only. Timestamps are nanoseconds since the Unix epoch (``at_ns``)
unless a field says otherwise (trace timestamps are Triton's monotonic clock).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "Labels",
    "MetricType",
    "MetricSample",
    "MetricFamily",
    "LogLevel",
    "LogRecord",
    "RequestPrepared",
    "RequestStateChange",
    "InstanceExecuting",
    "InstanceReleased",
    "ResponseOutput",
    "FrontendRequest",
    "ModelStateChange",
    "StubHealth",
    "ErrorLine",
    "StubOutput",
]

Labels = tuple[tuple[str, str], ...]
"""Label pairs in the order Triton wrote them; a tuple so samples stay hashable."""


class MetricType(str, Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    SUMMARY = "summary"
    HISTOGRAM = "histogram"
    UNTYPED = "untyped"


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One line of a /metrics page, with the name exactly as Triton wrote it.

    Counters keep Triton's names (no ``_total`` suffix is invented), histogram and summary
    series keep their ``_bucket``/``_sum``/``_count`` suffix; ``family`` names the family
    the sample belongs to.
    """

    name: str
    labels: Labels
    value: float
    family: str
    timestamp_ms: int | None = None

    def label(self, key: str, default: str = "") -> str:
        for k, v in self.labels:
            if k == key:
                return v
        return default


@dataclass(frozen=True, slots=True)
class MetricFamily:
    name: str
    type: MetricType
    help: str
    samples: tuple[MetricSample, ...] = field(default=())


class LogLevel(str, Enum):
    INFO = "I"
    WARNING = "W"
    ERROR = "E"
    FATAL = "F"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """Fields every parsed Triton log line shares (the glog or ISO8601 header)."""

    at_ns: int
    level: LogLevel
    source_file: str
    source_line: int
    offset: int
    """Byte offset of the line in its file: the stable identity used for idempotent ingest."""


@dataclass(frozen=True, slots=True)
class RequestPrepared:
    header: LogRecord
    request_id: str
    model: str
    version: int
    batch_size: int
    timeout_us: int


@dataclass(frozen=True, slots=True)
class RequestStateChange:
    header: LogRecord
    request_id: str
    """Triton's request id, or ``""`` where the log says ``<id_unknown>``."""
    from_state: str
    to_state: str


@dataclass(frozen=True, slots=True)
class InstanceExecuting:
    header: LogRecord
    model: str
    instance: str
    count: int


@dataclass(frozen=True, slots=True)
class InstanceReleased:
    header: LogRecord
    instance: str
    count: int


@dataclass(frozen=True, slots=True)
class ResponseOutput:
    header: LogRecord
    model: str
    output: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FrontendRequest:
    """An HTTP or gRPC request as the frontend logged it."""

    header: LogRecord
    protocol: str
    method: str
    path: str


@dataclass(frozen=True, slots=True)
class ModelStateChange:
    header: LogRecord
    model: str
    version: int | None
    state: str
    """``loading``, ``loaded``, ``unloading``, ``unloaded`` or ``failed``."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class StubHealth:
    header: LogRecord
    instance: str
    detail: str


@dataclass(frozen=True, slots=True)
class ErrorLine:
    """A warning or error line that no more specific record explains."""

    header: LogRecord
    text: str


@dataclass(frozen=True, slots=True)
class StubOutput:
    """Text a python stub printed into Triton's stream without a log header.

    Tracebacks such as ``Exception in callback`` or ``Task exception was never retrieved``
    arrive this way; ``at_ns`` is borrowed from the nearest preceding header.
    """

    at_ns: int
    offset: int
    text: str
