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
    "ErrorLine",
    "ExitInflight",
    "FrontendCancellation",
    "FrontendRequest",
    "InstanceExecuting",
    "InstanceReleased",
    "Labels",
    "LogLevel",
    "LogRecord",
    "MetricFamily",
    "MetricSample",
    "MetricType",
    "ModelConfig",
    "ModelStateChange",
    "RateLimiterPool",
    "RequestPrepared",
    "RequestStateChange",
    "ResponseOutput",
    "StreamRequestRead",
    "StreamResponse",
    "StubHealth",
    "StubOutput",
    "WarmupRun",
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
    """One output tensor of a response (``infer_response.cc`` ``add response output``).

    2.51 does not name the model on this line; ``model`` is ``""`` when the line does not
    say it, and a consumer joins it to the preceding ``InstanceExecuting`` of the process.
    """

    header: LogRecord
    model: str
    output: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FrontendRequest:
    """An HTTP or gRPC request as the frontend logged it.

    HTTP: ``method`` is the verb (Triton logs libevhtp's method number; unknown numbers are
    kept as digits) and ``path`` the URI. gRPC logs neither model nor path: ``method`` is the
    handler or RPC name (``ModelInferHandler``, ``RepositoryModelLoad``) and ``path`` is ``""``.
    """

    header: LogRecord
    protocol: str
    method: str
    path: str


@dataclass(frozen=True, slots=True)
class StreamRequestRead:
    """The gRPC stream handler read one request from a client stream
    (``Process for ModelStreamInferHandler, rpc_ok=1, context 0, 0 step READ``).

    The request's own ``prepared:`` line (which names the model) follows it. 2.51 prints
    ``context 0, 0`` for every stream: streams cannot be told apart by these numbers."""

    header: LogRecord


@dataclass(frozen=True, slots=True)
class StreamResponse:
    """One response of a gRPC stream request handed to the frontend
    (``ModelStreamInferHandler::StreamInferComplete, context 0, 0 step ISSUED, callback index
    N, flags F, response is nullptr B``). Names neither model nor request.

    ``index`` counts the responses of one request from 1; ``final`` is the flags' FINAL bit
    (a decoupled stream's end); ``empty`` a send without a response (a final-flag-only send);
    ``step`` the handler's state (``ISSUED``, ``CANCELLATION_ISSUED`` after a client cancel)."""

    header: LogRecord
    index: int
    final: bool
    empty: bool
    step: str


@dataclass(frozen=True, slots=True)
class FrontendCancellation:
    """A frontend noticed its client gave up (gRPC deadline or cancel).

    Triton keeps executing the request in the backend; this line is often the only trace
    of a client timeout, since the CANCELED failure counter may stay 0.
    """

    header: LogRecord
    protocol: str
    handler: str
    detail: str


@dataclass(frozen=True, slots=True)
class ModelStateChange:
    header: LogRecord
    model: str
    version: int | None
    state: str
    """``loading``, ``loaded``, ``unloading``, ``unloaded`` or ``failed``."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class WarmupRun:
    """An instance running one of its config's ``model_warmup`` samples while its model
    loads (``backend_model_instance.cc``, at --log-verbose 1): the batch it logs next is
    Triton's own, fed by requests it prepared for the warmup, not by a client's. ``failed``:
    the sample failed (``failed to run warmup sample``), and so does the load."""

    header: LogRecord
    model: str
    instance: str
    sample: str
    iteration: int
    """1, 2, ... up to the sample's ``count``; 0 on the line saying it failed."""
    failed: bool = False


@dataclass(frozen=True, slots=True)
class RateLimiterPool:
    """The rate limiter's resource pool (``rate_limiter.cc``, ``Max Resource Map===>``), written
    as each instance loads while the server runs ``--rate-limit=execution_count``: how many
    copies of each resource there are. That the line is there says the rate limiter is on: a
    request can then wait with its model's instances idle, for a copy that running batches of
    any model sharing the resource hold. ``resources``: (device, resource, copies); the device
    is ``GLOBAL`` or a GPU's number."""

    header: LogRecord
    resources: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """A python model's configuration as the backend logs it when an instance loads
    (``python_be.cc`` ``model configuration:`` and the config as JSON, at --log-verbose 1):
    what its responses must carry. Triton 2.51 does not check a python model's response
    outputs against it (tests/fixtures/foreign vid_detect_wrong_dtype)."""

    header: LogRecord
    model: str
    outputs: tuple[tuple[str, str], ...]
    """``(name, data type)`` of each declared output, the type without ``TYPE_`` (``FP32``),
    as ``add response output`` lines spell it."""
    decoupled: bool
    preserve_ordering: bool = False
    """``dynamic_batching.preserve_ordering``: responses leave in the order the requests
    came, so one batch that never returns holds every later response of the model, those of
    its other instances too (dq_child_hang_in_batch). Last, with a default: blocks stored
    before it have one column fewer (``store/blocks.py`` gives them the default)."""


@dataclass(frozen=True, slots=True)
class ExitInflight:
    """Shutdown's drain, ``server.cc``: ``Model 'M' (version V) has N in-flight inferences``,
    written once a second of the exit timeout until the model's requests end. A count that
    does not go down is work that never completes; logged at any verbosity."""

    header: LogRecord
    model: str
    version: int
    count: int


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
    arrive this way; ``at_ns`` is borrowed from the nearest preceding header (0 before the
    first). Other headerless prints that share the stream (``Error: Failed to initialize
    NVML``, ``Signal (15) received.``) land here too: the log cannot tell them apart.
    """

    at_ns: int
    offset: int
    text: str


# --- scrape, statistics, trace and span events ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScrapeStatus:
    """One attempt to reach a target (/metrics or /v2/models/stats): up or down, and why."""

    at_ns: int
    target: str
    """``metrics`` or ``stats`` plus the URL, e.g. ``metrics http://127.0.0.1:8002/metrics``."""
    up: bool
    duration_s: float
    error: str = ""


@dataclass(frozen=True, slots=True)
class MetricsScrape:
    """A whole /metrics page as parsed at one instant; samples keep Triton's names."""

    at_ns: int
    target: str
    samples: tuple[MetricSample, ...]


@dataclass(frozen=True, slots=True)
class BatchStats:
    batch_size: int
    compute_input_count: int
    compute_input_ns: int
    compute_infer_count: int
    compute_infer_ns: int
    compute_output_count: int
    compute_output_ns: int


@dataclass(frozen=True, slots=True)
class ModelStats:
    """One model version's entry of ``/v2/models/stats`` (cumulative since load)."""

    at_ns: int
    model: str
    version: str
    last_inference_ms: int
    """Epoch milliseconds of the last inference, 0 when none."""
    inference_count: int
    execution_count: int
    success_count: int
    success_ns: int
    fail_count: int
    fail_ns: int
    queue_count: int
    queue_ns: int
    compute_input_ns: int
    compute_infer_ns: int
    compute_output_ns: int
    cache_hit_count: int = 0
    cache_miss_count: int = 0
    batch_stats: tuple[BatchStats, ...] = ()


@dataclass(frozen=True, slots=True)
class TraceSpan:
    """One request of a Triton trace file (``--trace-config triton,file=F``), records merged.

    ``trace_id`` is Triton's per-process integer id; ``parent_id`` links a BLS child to the
    request that issued it. Timestamps are Triton's monotonic clock in ns, in file order.
    """

    trace_id: int
    parent_id: int | None
    model: str
    version: str
    request_id: str
    timestamps: tuple[tuple[str, int], ...]
    source: str
    """The trace file it came from (``trace.json``, ``trace.json.3``)."""

    def timestamp(self, name: str) -> int | None:
        for key, ns in self.timestamps:
            if key == name:
                return ns
        return None


@dataclass(frozen=True, slots=True)
class OtlpSpanEvent:
    name: str
    at_ns: int
    attributes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class OtlpSpan:
    """A span received over OTLP (Triton's opentelemetry mode or our BLS instrumentation).

    Attribute values are kept as strings: the store and detectors compare, never compute.
    """

    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    parent_span_id: str
    name: str
    service: str
    start_ns: int
    end_ns: int
    status: str
    """``UNSET``, ``OK`` or ``ERROR``."""
    status_message: str = ""
    attributes: tuple[tuple[str, str], ...] = ()
    events: tuple[OtlpSpanEvent, ...] = ()

    def attribute(self, key: str, default: str = "") -> str:
        for k, v in self.attributes:
            if k == key:
                return v
        return default


__all__ += [  # extended by section: keeps merges of this shared module simple
    "BatchStats",
    "MetricsScrape",
    "ModelStats",
    "OtlpSpan",
    "OtlpSpanEvent",
    "ScrapeStatus",
    "TraceSpan",
]
