"""Golden pairs: a line Triton 2.51 really printed (tests/fixtures/logs) and its record."""

# ruff: noqa: E501  (real log lines are kept whole, as Triton printed them)

from __future__ import annotations

import calendar

import pytest

from collectors.logs import ParseStats, parse_lines
from observability.events import (
    ErrorLine,
    FrontendCancellation,
    FrontendRequest,
    InstanceExecuting,
    InstanceReleased,
    LogLevel,
    LogRecord,
    ModelStateChange,
    RateLimiterPool,
    RequestPrepared,
    RequestStateChange,
    ResponseOutput,
    StubHealth,
    WarmupRun,
)
from tests.collectors.logs.reference import parse_lines_regex

OFF = 1000
INF, WRN, ERR = LogLevel.INFO, LogLevel.WARNING, LogLevel.ERROR


def _ns(stamp: str, us: int = 0) -> int:
    """'2026-11-22 03:25:00' (UTC) -> epoch ns."""
    d, t = stamp.split()
    y, mo, dd = (int(x) for x in d.split("-"))
    hh, mm, ss = (int(x) for x in t.split(":"))
    return calendar.timegm((y, mo, dd, hh, mm, ss)) * 10**9 + us * 1000


def H(level: LogLevel, stamp: str, us: int, src: str, line: int) -> LogRecord:
    return LogRecord(_ns(stamp, us), level, src, line, OFF)


T = "2026-11-22 03:25:00"
PREP = (
    b'I1122 03:25:00.828571 4403 infer_request.cc:905] "[request id: req-plain-1] prepared: '
    b"[0x0x7f7e540062c0] request id: req-plain-1, model: plain, requested version: -1, actual "
    b"version: 1, flags: 0x0, correlation id: 0, batch size: 0, priority: 0, timeout (us): 0\\n"
    b"original inputs:\\n[0x0x7f7e54016a58] input: INPUT0, type: INT64, original shape: [4], "
    b"batch + shape: [4], shape: [4]\\noverride inputs:\\ninputs:\\n[0x0x7f7e54016a58] input: "
    b"INPUT0, type: INT64, original shape: [4], batch + shape: [4], shape: [4]\\noriginal "
    b'requested outputs:\\nrequested outputs:\\nOUTPUT0\\n"\n'
)

GOLDEN: list[tuple[bytes, object]] = [
    (
        b'I1122 03:25:00.828602 4403 infer_request.cc:132] "[request id: req-plain-1] '
        b'Setting state from INITIALIZED to PENDING"\n',
        RequestStateChange(
            H(INF, T, 828602, "infer_request.cc", 132), "req-plain-1", "INITIALIZED", "PENDING"
        ),
    ),
    (
        b'I1122 03:25:00.872811 4403 infer_request.cc:132] "[request id: <id_unknown>] '
        b'Setting state from INITIALIZED to INITIALIZED"\n',
        RequestStateChange(
            H(INF, T, 872811, "infer_request.cc", 132), "", "INITIALIZED", "INITIALIZED"
        ),
    ),
    (
        b'I1122 03:25:00.874718 4403 infer_request.cc:132] "[request id: req-bls-1-child] '
        b'Setting state from EXECUTING to RELEASED"\n',
        RequestStateChange(
            H(INF, T, 874718, "infer_request.cc", 132), "req-bls-1-child", "EXECUTING", "RELEASED"
        ),
    ),
    (
        PREP,
        RequestPrepared(
            H(INF, T, 828571, "infer_request.cc", 905), "req-plain-1", "plain", 1, 0, 0
        ),
    ),
    (
        b'I1122 03:25:00.828760 4403 python_be.cc:1310] "model plain, instance plain_0_0, '
        b'executing 1 requests"\n',
        InstanceExecuting(H(INF, T, 828760, "python_be.cc", 1310), "plain", "plain_0_0", 1),
    ),
    (
        b'I1122 03:25:00.918868 4403 python_be.cc:2369] "TRITONBACKEND_ModelInstanceExecute: '
        b'model instance name bls_0_0 released 1 requests"\n',
        InstanceReleased(H(INF, T, 918868, "python_be.cc", 2369), "bls_0_0", 1),
    ),
    (
        b'I1122 03:25:00.977662 4403 infer_response.cc:174] "add response output: output: '
        b'OUTPUT0, type: INT64, shape: [16]"\n',
        ResponseOutput(H(INF, T, 977662, "infer_response.cc", 174), "", "OUTPUT0", "INT64", (16,)),
    ),
    (
        # the same text from another line of the same file (ensemble's final response)
        b'I1122 03:25:00.980502 4403 infer_response.cc:148] "add response output: output: '
        b'OUTPUT0, type: INT64, shape: [4]"\n',
        ResponseOutput(H(INF, T, 980502, "infer_response.cc", 148), "", "OUTPUT0", "INT64", (4,)),
    ),
    (
        b'I1122 03:25:00.828458 4403 http_server.cc:4599] "HTTP request: 2 /v2/models/plain/infer"\n',
        FrontendRequest(
            H(INF, T, 828458, "http_server.cc", 4599), "http", "POST", "/v2/models/plain/infer"
        ),
    ),
    (
        b'I1122 03:25:00.826881 4403 http_server.cc:4599] "HTTP request: 0 /v2/models/plain/ready"\n',
        FrontendRequest(
            H(INF, T, 826881, "http_server.cc", 4599), "http", "GET", "/v2/models/plain/ready"
        ),
    ),
    (
        b'I1122 03:25:00.921103 4403 infer_handler.cc:675] "New request handler for '
        b'ModelInferHandler, 0"\n',
        FrontendRequest(
            H(INF, T, 921103, "infer_handler.cc", 675), "grpc", "ModelInferHandler", ""
        ),
    ),
    (
        b'I1122 03:25:09.087551 4403 grpc_server.cc:152] "Process for RepositoryModelLoad, '
        b'rpc_ok=1, 0 step START"\n',
        FrontendRequest(
            H(INF, "2026-11-22 03:25:09", 87551, "grpc_server.cc", 152),
            "grpc",
            "RepositoryModelLoad",
            "",
        ),
    ),
    (
        b'I1122 03:25:01.984426 4403 infer_handler.h:850] "Cancellation notification received '
        b'for ModelInferHandler, rpc_ok=1, context 0, 0 step ISSUED"\n',
        FrontendCancellation(
            H(INF, "2026-11-22 03:25:01", 984426, "infer_handler.h", 850),
            "grpc",
            "ModelInferHandler",
            "Cancellation notification received for ModelInferHandler, rpc_ok=1, context 0, 0 step ISSUED",
        ),
    ),
    (
        b'I1122 03:24:56.599953 4403 model_lifecycle.cc:472] "loading: plain:1"\n',
        ModelStateChange(
            H(INF, "2026-11-22 03:24:56", 599953, "model_lifecycle.cc", 472), "plain", 1, "loading"
        ),
    ),
    (
        b"I1122 03:24:58.385373 4403 model_lifecycle.cc:839] \"successfully loaded 'bls'\"\n",
        ModelStateChange(
            H(INF, "2026-11-22 03:24:58", 385373, "model_lifecycle.cc", 839), "bls", None, "loaded"
        ),
    ),
    (
        b"I1122 03:25:06.204700 4403 model_lifecycle.cc:624] \"successfully unloaded 'plain' version 1\"\n",
        ModelStateChange(
            H(INF, "2026-11-22 03:25:06", 204700, "model_lifecycle.cc", 624), "plain", 1, "unloaded"
        ),
    ),
    (
        b"E1122 03:25:00.362227 4403 model_lifecycle.cc:642] \"failed to load 'broken' version 1: "
        b"Internal: RuntimeError: broken on purpose\\n\\nAt:\\n  /tmp/logs-helper/repo/broken/1/"
        b'model.py(3): initialize\\n"\n',
        ModelStateChange(
            H(ERR, T, 362227, "model_lifecycle.cc", 642),
            "broken",
            1,
            "failed",
            "Internal: RuntimeError: broken on purpose\n\nAt:\n  /tmp/logs-helper/repo/broken/1/model.py(3): initialize\n",
        ),
    ),
    (
        b"I1122 03:25:00.362253 4403 model_lifecycle.cc:777] \"failed to load 'broken'\"\n",
        ModelStateChange(H(INF, T, 362253, "model_lifecycle.cc", 777), "broken", None, "failed"),
    ),
    (
        b'E1122 03:24:56.599570 4403 model_repository_manager.cc:1460] "Poll failed for model '
        b"directory 'ens_bad': output 'OUTPUT0' for ensemble 'ens_bad' is not written: at least "
        b"one of its depending tensors, 'plain_out', is not connected\"\n",
        ModelStateChange(
            H(ERR, "2026-11-22 03:24:56", 599570, "model_repository_manager.cc", 1460),
            "ens_bad",
            None,
            "failed",
            "output 'OUTPUT0' for ensemble 'ens_bad' is not written: at least one of its "
            "depending tensors, 'plain_out', is not connected",
        ),
    ),
    (
        b'I1122 03:25:10.173867 4403 server.cc:351] "bls v1: UNLOADING"\n',
        ModelStateChange(
            H(INF, "2026-11-22 03:25:10", 173867, "server.cc", 351), "bls", 1, "unloading"
        ),
    ),
    (
        b'E1122 03:26:36.521314 7671 pb_stub.cc:714] "Failed to process the request(s) for model '
        b"'bls_0_0', message: TritonModelException: Stub process 'plain_0_0' is not healthy.\\n\\n"
        b'At:\\n  /tmp/logs-helper/repo/bls/1/model.py(16): execute\\n"\n',
        StubHealth(
            H(ERR, "2026-11-22 03:26:36", 521314, "pb_stub.cc", 714),
            "plain_0_0",
            "Failed to process the request(s) for model 'bls_0_0', message: TritonModelException: "
            "Stub process 'plain_0_0' is not healthy.\n\nAt:\n  /tmp/logs-helper/repo/bls/1/model.py(16): execute\n",
        ),
    ),
    (
        b"I1122 03:24:38.019874 3994 pb_stub.cc:2145]  Non-graceful termination detected. \n",
        StubHealth(
            H(INF, "2026-11-22 03:24:38", 19874, "pb_stub.cc", 2145),
            "",
            "Non-graceful termination detected.",
        ),
    ),
    (
        b'W1122 03:24:56.597516 4403 pinned_memory_manager.cc:273] "Unable to allocate pinned '
        b"system memory, pinned memory pool will not be available: CUDA driver version is "
        b'insufficient for CUDA runtime version"\n',
        ErrorLine(
            H(WRN, "2026-11-22 03:24:56", 597516, "pinned_memory_manager.cc", 273),
            "Unable to allocate pinned system memory, pinned memory pool will not be available: "
            "CUDA driver version is insufficient for CUDA runtime version",
        ),
    ),
    (
        b'2026-11-22T03:26:21Z E 7400 pb_stub.cc:714] "Failed to process the request(s) for model '
        b"'bls_0_0', message: TritonModelException: Stub process 'plain_0_0' is not healthy.\\n\\n"
        b'At:\\n  /tmp/logs-helper/repo/bls/1/model.py(16): execute\\n"\n',
        StubHealth(
            H(ERR, "2026-11-22 03:26:21", 0, "pb_stub.cc", 714),
            "plain_0_0",
            "Failed to process the request(s) for model 'bls_0_0', message: TritonModelException: "
            "Stub process 'plain_0_0' is not healthy.\n\nAt:\n  /tmp/logs-helper/repo/bls/1/model.py(16): execute\n",
        ),
    ),
    (
        b'2026-11-22T03:26:19Z I 7400 infer_request.cc:132] "[request id: iso-after-stub-death] '
        b'Setting state from PENDING to EXECUTING"\n',
        RequestStateChange(
            H(INF, "2026-11-22 03:26:19", 0, "infer_request.cc", 132),
            "iso-after-stub-death",
            "PENDING",
            "EXECUTING",
        ),
    ),
    (
        # model_warmup at a load: tests/fixtures/foreign warm_reload_slow_warmup, Round 20
        b"I1126 10:17:50.665562 26026 backend_model_instance.cc:608] \"model 'warm_encoder' "
        b"instance warm_encoder_0_0 is running warmup sample 'zeros_single' for iteration 1\"\n",
        WarmupRun(
            H(INF, "2026-11-26 10:17:50", 665562, "backend_model_instance.cc", 608),
            "warm_encoder",
            "warm_encoder_0_0",
            "zeros_single",
            1,
        ),
    ),
    (
        # the same, failed: warm_warmup_raises_one (Triton crashed 0.2 ms later)
        b"I1126 10:25:25.838660 3328 backend_model_instance.cc:658] \"model 'warm_encoder' "
        b"instance warm_encoder_0_1 failed to run warmup sample 'zeros_single'\"\n",
        WarmupRun(
            H(INF, "2026-11-26 10:25:25", 838660, "backend_model_instance.cc", 658),
            "warm_encoder",
            "warm_encoder_0_1",
            "zeros_single",
            0,
            True,
        ),
    ),
    (
        # the rate limiter's pool, once per instance loaded: tests/fixtures/foreign
        # rl_resource_deadlock (--rate-limit=execution_count, score_licence:2), Round 37
        b'I1126 21:44:41.307066 28162 rate_limiter.cc:999] "\\nMax Resource Map===>\\n\\t'
        b'Device: GLOBAL\\n\\t\\tResource: score_licence\\t Count: 2\\n"\n',
        RateLimiterPool(
            H(INF, "2026-11-26 21:44:41", 307066, "rate_limiter.cc", 999),
            (("GLOBAL", "score_licence", 2),),
        ),
    ),
    (
        # pre-24.06 form: the same message, unquoted (derived, see PROVENANCE.md)
        b"I1122 03:25:00.828602 4403 infer_request.cc:132] [request id: req-plain-1] "
        b"Setting state from INITIALIZED to PENDING\n",
        RequestStateChange(
            H(INF, T, 828602, "infer_request.cc", 132), "req-plain-1", "INITIALIZED", "PENDING"
        ),
    ),
]

SKIPPED_INFO = [
    b"I1126 10:17:50.664502 26026 backend_model_instance.cc:363] \"Generating warmup sample data for 'zeros_single'\"\n",
    b"I1122 03:25:00.871600 4403 http_server.cc:1280] \"HTTP using buffer for: 'OUTPUT0', size: 32, addr: 0x5635e648bef0\"\n",
    b'I1122 03:25:00.921032 4403 infer_handler.cc:723] "Process for ModelInferHandler, rpc_ok=1, 0 step START"\n',
    b'I1122 03:24:56.597540 4403 cuda_memory_manager.cc:117] "CUDA memory pool disabled"\n',
    b'I1122 03:25:12.174546 4403 grpc_server.cc:152] "Process for ServerLive, rpc_ok=0, 0 step START"\n',
]


@pytest.mark.parametrize(("line", "expected"), GOLDEN, ids=lambda v: repr(v)[:60])
def test_golden(line: bytes, expected: object) -> None:
    for parse in (parse_lines, parse_lines_regex):
        assert list(parse([line], year=2026, offset=OFF)) == [expected]


@pytest.mark.parametrize("line", SKIPPED_INFO, ids=lambda v: repr(v)[:60])
def test_info_lines_of_no_interest_are_counted_not_emitted(line: bytes) -> None:
    stats = ParseStats()
    assert list(parse_lines([line], year=2026, stats=stats)) == []
    assert stats.skipped["info"] == 1 and stats.lines == 1


def test_utc_offset_and_year_rollover() -> None:
    lines = [
        b'I1231 23:59:59.000001 1 server.cc:351] "m v1: UNLOADING"\n',
        b'I0101 00:00:00.000002 1 server.cc:351] "m v1: UNLOADING"\n',
    ]
    got = list(parse_lines(lines, year=2025, utc_offset_s=3600))
    assert [r.header.at_ns for r in got] == [  # type: ignore[union-attr]
        _ns("2025-12-31 22:59:59", 1),
        _ns("2025-12-31 23:00:00", 2),
    ]
    assert list(parse_lines_regex(lines, year=2025, utc_offset_s=3600)) == got


def test_two_triton_lines_glued_by_concurrent_threads() -> None:
    """Recorded on the lab (2.51, demo pipeline under load): one physical line, two records."""
    from collectors.logs.parser import parse_bytes
    from observability.events import RequestStateChange

    first = (
        b'I1122 03:55:50.686444 866 infer_request.cc:132] "[request id: bnd-15] Setting state '
        b'from EXECUTING to RELEASED"'
    )
    second = b'I1122 03:55:50.686441 866 infer_handler.h:1374] "Received notification for X, 0"\n'
    third = (
        b'I1122 03:55:50.686450 866 infer_request.cc:132] "[request id: y] Setting state '
        b'from PENDING to EXECUTING"\n'
    )
    records = parse_bytes(first + second + third, year=2026)
    states = [r for r in records if isinstance(r, RequestStateChange)]
    assert [(s.request_id, s.to_state) for s in states] == [
        ("bnd-15", "RELEASED"),
        ("y", "EXECUTING"),
    ]
    assert states[1].header.offset == len(first) + len(second)
