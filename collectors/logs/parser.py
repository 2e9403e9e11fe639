"""Triton verbose-log lines (``--log-verbose 1``) to typed events, pure and fast.

Input is ``bytes`` lines as iterating a binary file yields them (terminator kept), so that
``LogRecord.offset`` is the exact byte offset that ingest uses as identity; text is decoded
with ``errors="replace"`` and only for the lines that become records.

Why it is shaped like this:

* A verbose log is mostly lines nobody needs (allocator chatter, gRPC state steps), and the
  needed ones are a handful of fixed message shapes. So the hot path does cheap byte checks
  on the header, dispatches on the *source file name* through a dict (line numbers move
  between releases: ``infer_response.cc`` logs the same text from lines 148 and 174 in
  2.51), and runs no regex; regexes run only for lines that do not start with a header.
* Both header forms of 2.51 are read: glog ``I1122 03:20:14.655239 2106 file.cc:132] msg``
  and ``--log-format ISO8601`` ``2026-11-22T03:20:14Z I 2106 file.cc:132] msg`` (second
  resolution: the n-th record of a second is placed n µs into it, ``_ISO_SPREAD_MAX``). On
  2.51 both are printed in UTC even with ``TZ`` set; glog has no year, so the caller passes
  ``year`` (and ``utc_offset_s`` for a build that prints local time). A December-to-January
  step in glog month bumps the year.
* Messages are JSON strings since 24.06 and bare text before; both are accepted. Headerless
  lines are either the continuation of the previous record (tables and protobuf configs
  after an empty or ``...: "`` message, the legacy multi-line ``prepared:`` record) or
  text a python stub printed into the same stream; see ``_opens_block``.
* A stub's text printed without a newline glues in front of the next line
  (``gluer progress 50%I1122 03:36:02.651174 ...``): the front part becomes a ``StubOutput``
  and the header is parsed at its own byte offset.
* Bad input never raises: each problem is a counted reason in ``ParseStats.skipped``.
  (Only a caller error does: ``str`` lines instead of ``bytes``.)
* Module-level dicts memoise decoded tokens (files, states, recent request ids); they hold
  no parse state, so the function stays pure: same lines in, same records out.
* ``ResponseOutput.model`` is ``""``: 2.51 does not name the model on that line.
"""

from __future__ import annotations

import calendar
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, TypedDict

from collectors.logs._ctor import fast_ctor
from collectors.logs.hotpath import ColumnSink, scanner
from collectors.logs.hotpath import column_sink as new_sink
from observability.events import (
    ErrorLine,
    ExitInflight,
    FrontendCancellation,
    FrontendRequest,
    InstanceExecuting,
    InstanceReleased,
    LogLevel,
    LogRecord,
    ModelConfig,
    ModelStateChange,
    RateLimiterPool,
    RequestPrepared,
    RequestStateChange,
    ResponseOutput,
    StreamRequestRead,
    StreamResponse,
    StubHealth,
    StubOutput,
    WarmupRun,
)

if TYPE_CHECKING:  # typing.Unpack for **kwargs is Python 3.11+ (the package supports 3.10)
    from typing_extensions import Unpack


__all__ = [
    "MAX_TEXT",
    "Event",
    "ParseOptions",
    "ParseStats",
    "column_sink",
    "parse_bytes",
    "parse_lines",
    "parse_runs",
    "runs_of",
]

Event = (
    RequestPrepared
    | RequestStateChange
    | InstanceExecuting
    | InstanceReleased
    | ResponseOutput
    | StreamRequestRead
    | StreamResponse
    | FrontendRequest
    | FrontendCancellation
    | ModelConfig
    | ModelStateChange
    | ExitInflight
    | StubHealth
    | ErrorLine
    | StubOutput
    | WarmupRun
    | RateLimiterPool
)

MAX_TEXT = 16384
"""Free text (error details, stub output) is cut to this many characters: a 1 MB line must
not become a 1 MB string in every downstream store."""


@dataclass(slots=True)
class ParseStats:
    """What the parser saw besides records; the caller keeps it across calls.

    ``skipped`` reasons: ``info`` (an I line of no interest: most of a verbose log),
    ``continuation`` (body of a multi-line record), ``blank``, ``malformed_header``,
    ``binary`` (NUL bytes), ``unterminated`` (last line without newline, held back when
    ``final=False``), ``internal`` (a bug: the line is dropped, the rest goes on);
    ``truncated_text`` counts texts cut to ``MAX_TEXT`` (the record is still emitted).
    ``resume_offset`` is where the next call should start reading; ``last_at_ns`` the time of
    the last header read (pass it as the next call's ``start_ns``: a stub's text carries no
    time of its own and takes the last header's).
    """

    lines: int = 0
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    resume_offset: int = 0
    last_at_ns: int = 0
    iso_second_ns: int = 0
    iso_in_second: int = 0
    """The ISO8601 second last read and how many records it gave (see ``_ISO_SPREAD_MAX``)."""


# ---------------------------------------------------------------- constructors and tables

_mk_hdr = fast_ctor(LogRecord)
_mk_state = fast_ctor(RequestStateChange)
_mk_prep = fast_ctor(RequestPrepared)
_mk_exec = fast_ctor(InstanceExecuting)
_mk_rel = fast_ctor(InstanceReleased)
_mk_resp = fast_ctor(ResponseOutput)
_mk_front = fast_ctor(FrontendRequest)
_mk_cancel = fast_ctor(FrontendCancellation)
_mk_sread = fast_ctor(StreamRequestRead)
_mk_sresp = fast_ctor(StreamResponse)
_mk_model = fast_ctor(ModelStateChange)
_mk_config = fast_ctor(ModelConfig)
_mk_exit = fast_ctor(ExitInflight)
_mk_stub = fast_ctor(StubHealth)
_mk_err = fast_ctor(ErrorLine)
_mk_out = fast_ctor(StubOutput)
_mk_warm = fast_ctor(WarmupRun)
_mk_pool = fast_ctor(RateLimiterPool)

_LEVELS: dict[int, LogLevel] = {ord(lv.value): lv for lv in LogLevel}

_HTTP_METHODS: dict[bytes, str] = {
    b"0": "GET",
    b"1": "HEAD",
    b"2": "POST",
    b"3": "PUT",
    b"4": "DELETE",
    b"8": "OPTIONS",
    b"15": "PATCH",
}
"""libevhtp's ``htp_method`` numbers, which ``http_server.cc`` logs instead of the verb."""

_STUB_STARTS = (
    b"Traceback (most recent call last):",
    b"Exception in callback",
    b"Task exception was never retrieved",
    b"Exception ignored in",
)
"""Headerless lines that are stub output even inside a continuation block."""

_GLOG_HEAD = re.compile(rb"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^\s:\]]+:\d+\] ")
_ISO_HEAD = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [IWEF] +\d+ [^\s:\]]+:\d+\] ")
_FNAME = re.compile(rb"[^\s:\]]+")
_HEADISH = re.compile(rb"[IWEF]\d{4} \d\d:|\d{4}-\d\d-\d\dT\d\d:")
_ANY_HEAD = re.compile(_GLOG_HEAD.pattern + rb"|" + _ISO_HEAD.pattern)
_GLOG_TS = re.compile(rb"(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\Z")
_ISO_TS = re.compile(rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\Z")

_str_cache: dict[bytes, str] = {}


def _s(b: bytes) -> str:
    """Decode a short token (file, state, model, instance), interned: they repeat endlessly."""
    s = _str_cache.get(b)
    if s is None:
        s = b.decode("utf-8", "replace")
        if len(_str_cache) < 65536:
            _str_cache[b] = s
    return s


def _text(raw: bytes, stats: ParseStats) -> str:
    """Decode a whole message: JSON string if quoted (24.06+), else bare text."""
    if len(raw) >= 2 and raw[0] == 34 and raw[-1] == 34:
        try:
            text = _no_surrogates(json.loads(raw.decode("utf-8", "replace")))
        except ValueError:
            text = raw[1:-1].decode("utf-8", "replace")
    else:
        text = raw.decode("utf-8", "replace")
    if len(text) > MAX_TEXT:
        stats.skipped["truncated_text"] += 1
        text = text[:MAX_TEXT]
    return str(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(text: str) -> str:
    """A JSON ``\\ud800`` escape decodes to a lone surrogate, which no UTF-8 sink (the
    store) can encode: it becomes U+FFFD, as an invalid UTF-8 byte does."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _ident(b: bytes) -> str:
    """A request id: ``<id_unknown>`` means none; escapes only matter in quoted messages."""
    if b == b"<id_unknown>":
        return ""
    if b"\\" in b:
        try:
            return _no_surrogates(str(json.loads(b'"' + b + b'"')))
        except ValueError:
            pass
    return b.decode("utf-8", "replace")


def _opens_block(raw: bytes) -> int:
    """Whether headerless lines after this message are its body rather than stub output.

    0: no body. 1: a body that ends at a blank line: an empty message (server.cc tables) or
    one that announces a body (``"Server side auto-completed config: "``). 2: any unquoted
    (pre-24.06) message, whose multi-line ``prepared:`` records and error details (with
    blank lines inside) run to the next header; prints after it cannot be told apart except
    by the traceback openers in ``_STUB_STARTS``.
    """
    raw = raw.rstrip()
    if not raw or raw.endswith((b':"', b': "')):
        return 1
    return 2 if raw[0] != 34 else 0


# ---------------------------------------------------------------- message handlers
# Each takes (line, m, e, h): the message is line[m:e] without the JSON quotes, h its
# LogRecord. It returns the record, or None when the message is not its shape. The caller
# builds h only after a cheap prefix test (_PREFIXES), so most lines of no interest cost
# no objects.

_Hdr = LogRecord


_transitions: dict[bytes, tuple[str, str]] = {}
"""``b"PENDING to EXECUTING"`` -> the two states: a handful of distinct tails, endlessly."""
_ids: dict[bytes, str] = {}
"""Recent request ids: each appears on ~6 lines (prepared, four transitions, children)."""
_ID_TRIES = 64
"""How many ``"] "`` a request id may hold before its line is not read as a request's."""


def _h_infer_request(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if not line.startswith(b"[request id: ", m):
        return None
    # The id is the client's string and may hold "] " itself ("batch[3] item"): it ends at
    # the first "] " that a known message follows, as the regex reference's lazy match
    # finds. Each try scans the rest of the line, so a junk line gets _ID_TRIES of them.
    j = line.find(b"] ", m + 13, e)
    for _ in range(_ID_TRIES):
        if j < 0:
            break
        rec = _request_message(line, m, j, e, h)
        if rec is not None:
            return rec
        j = line.find(b"] ", j + 1, e)
    return None


def _request_message(line: bytes, m: int, j: int, e: int, h: _Hdr) -> Event | None:
    """The message after ``[request id: ID] `` with the id ending at ``j``, or None."""
    k = j + 2
    if line.startswith(b"Setting state from ", k):
        tail = line[k + 19 : e]
        states = _transitions.get(tail)
        if states is None:
            a, sep, b = tail.partition(b" to ")
            if not sep:
                return None
            states = _transitions[tail] = (_s(a), _s(b))
        raw_id = line[m + 13 : j]
        rid = _ids.get(raw_id)
        if rid is None:
            if len(_ids) > 4096:
                _ids.clear()
            rid = _ids[raw_id] = _ident(raw_id)
        return _mk_state(h, rid, states[0], states[1])
    if line.startswith(b"prepared: ", k):
        stop = line.find(b"\\n", k, e)
        if stop < 0:
            stop = e
        p = line.find(b", model: ", k, stop)
        q = line.find(b",", p + 9, stop)
        v = line.find(b"actual version: ", q, stop)
        bs = line.find(b"batch size: ", v, stop)
        t = line.find(b"timeout (us): ", bs, stop)
        if p < 0 or q < 0 or v < 0 or bs < 0 or t < 0:
            return None
        try:
            return _mk_prep(
                h,
                _ident(line[m + 13 : j]),
                _s(line[p + 9 : q]),
                int(line[v + 16 : line.find(b",", v, stop)]),
                int(line[bs + 12 : line.find(b",", bs, stop)]),
                int(line[t + 14 : stop]),
            )
        except ValueError:  # a number that is not one: not this shape with this id
            return None
    return None


def model_config(text: str) -> tuple[str, tuple[tuple[str, str], ...], bool, bool] | None:
    """``model configuration:\n{json}`` (a python model's config, logged at load) ->
    ``(model, ((output, data type), ...), decoupled, preserve_ordering)``; None for any other
    text or a config that is not JSON (a pre-24.06 log writes it over many bare lines)."""
    head, sep, body = text.partition("\n")
    if head != "model configuration:" or not sep:
        return None
    try:
        cfg = json.loads(body)
        outputs = tuple(
            (str(o["name"]), str(o.get("data_type", "")).removeprefix("TYPE_"))
            for o in cfg.get("output", ())
        )
        decoupled = bool((cfg.get("model_transaction_policy") or {}).get("decoupled", False))
        ordered = bool((cfg.get("dynamic_batching") or {}).get("preserve_ordering", False))
        return str(cfg["name"]), outputs, decoupled, ordered
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _h_python_be(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if line.startswith(b"model configuration:", m):
        fields = model_config(_text(b'"' + line[m:e] + b'"', _NULL_STATS))
        return _h_stub(line, m, e, h) if fields is None else _mk_config(h, *fields)
    if line.startswith(b"model ", m):
        i = line.find(b", instance ", m, e)
        x = line.find(b", executing ", i, e)
        if i < 0 or x < 0 or not line.endswith(b" requests", m, e):
            return None
        return _mk_exec(h, _s(line[m + 6 : i]), _s(line[i + 11 : x]), int(line[x + 12 : e - 9]))
    if line.startswith(b"TRITONBACKEND_ModelInstanceExecute: model instance name ", m):
        r = line.rfind(b" released ", m, e)
        if r < 0 or not line.endswith(b" requests", m, e):
            return None
        return _mk_rel(h, _s(line[m + 56 : r]), int(line[r + 10 : e - 9]))
    return _h_stub(line, m, e, h)


def _h_response(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if not line.startswith(b"add response output: output: ", m):
        return None
    t = line.find(b", type: ", m, e)
    sh = line.find(b", shape: [", t, e)
    if t < 0 or sh < 0 or line[e - 1] != 93:
        return None
    dims = line[sh + 10 : e - 1]
    shape = tuple(int(d) for d in dims.split(b",")) if dims else ()
    return _mk_resp(h, "", _s(line[m + 29 : t]), _s(line[t + 8 : sh]), shape)


def _h_http(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if line.startswith(b"HTTP request: ", m):
        return _method_path(line, m + 14, e, h, "http")
    if line.startswith(b"SageMaker request: ", m):  # sagemaker_server.cc: /invocations, /ping
        return _method_path(line, m + 19, e, h, "sagemaker")
    return None


def _method_path(line: bytes, p: int, e: int, h: _Hdr, protocol: str) -> Event | None:
    """``<htp_method number> <path>`` as libevhtp's frontends log a request."""
    sp = line.find(b" ", p, e)
    if sp < 0:
        return None
    num = line[p:sp]
    if not num.isdigit():
        return None
    method = _HTTP_METHODS.get(num) or _s(num)
    return _mk_front(h, protocol, method, line[sp + 1 : e].decode("utf-8", "replace"))


def _h_grpc_handler(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if line.startswith(b"New request handler for ", m):
        c = line.find(b",", m + 24, e)
        if c < 0:
            return None
        return _mk_front(h, "grpc", _s(line[m + 24 : c]), "")
    if line.startswith(b"Cancellation notification received for ", m):
        c = line.find(b",", m + 39, e)
        if c < 0:
            return None
        return _mk_cancel(h, "grpc", _s(line[m + 39 : c]), line[m:e].decode("utf-8", "replace"))
    return None


_STREAM_COMPLETE = b"ModelStreamInferHandler::StreamInferComplete, "
_STREAM_READ = b"Process for ModelStreamInferHandler, rpc_ok=1, "


def _h_stream_handler(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    """stream_infer_handler.cc: a request read from a stream, one response of it, or what
    every gRPC handler logs (new handler, cancellation)."""
    if line.startswith(_STREAM_COMPLETE, m):
        s = line.find(b" step ", m, e)
        i = line.find(b", callback index ", s, e)
        f = line.find(b", flags ", i, e)
        n = line.find(b", response is nullptr ", f, e)
        if min(s, i, f, n) < 0:
            return None
        return _mk_sresp(
            h,
            int(line[i + 17 : f]),
            bool(int(line[f + 8 : n]) & 1),
            line[n + 22 : e] == b"1",
            _s(line[s + 6 : i]),
        )
    if line.startswith(_STREAM_READ, m):
        return _mk_sread(h) if line.endswith(b" step READ", m, e) else None
    return _h_grpc_handler(line, m, e, h)


def _h_grpc_server(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if line.startswith(b"Process for ", m) and line.endswith(b" step START", m, e):
        c = line.find(b", rpc_ok=1, ", m, e)
        if c < 0:
            return None
        return _mk_front(h, "grpc", _s(line[m + 12 : c]), "")
    return None


def _h_lifecycle(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if line.startswith(b"unloading: ", m):  # before 22.x: model_repository_manager.cc
        name, sep, ver = line[m + 11 : e].rpartition(b":")
        if not sep:
            return None
        return _mk_model(h, _s(name), int(ver), "unloading", "")
    if line.startswith(b"loading: ", m):
        name, sep, ver = line[m + 9 : e].rpartition(b":")
        if not sep:
            return None
        return _mk_model(h, _s(name), int(ver), "loading", "")
    if line.startswith(b"successfully loaded '", m):
        q = line.find(b"'", m + 21, e)
        return None if q < 0 else _mk_model(h, _s(line[m + 21 : q]), None, "loaded", "")
    if line.startswith(b"successfully unloaded '", m):
        q = line.find(b"' version ", m + 23, e)
        if q < 0:
            return None
        return _mk_model(h, _s(line[m + 23 : q]), int(line[q + 10 : e]), "unloaded", "")
    if line.startswith(b"failed to load '", m):
        q = line.find(b"'", m + 16, e)
        if q < 0:
            return None
        version = None
        detail = ""
        if q + 1 == e:
            pass  # the summary line: "failed to load 'M'"
        elif line.startswith(b"' version ", q):
            c = line.find(b": ", q, e)
            if c < 0:
                return None
            version = int(line[q + 10 : c])
            detail = _text(b'"' + line[c + 2 : e] + b'"', _NULL_STATS)
        else:
            return None
        return _mk_model(h, _s(line[m + 16 : q]), version, "failed", detail)
    return None


def _h_server(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    if line.endswith(b": UNLOADING", m, e):
        v = line.rfind(b" v", m, e)
        if v > m:
            return _mk_model(h, _s(line[m:v]), int(line[v + 2 : e - 11]), "unloading", "")
    if line.startswith(b"Model '", m) and line.endswith(b" in-flight inferences", m, e):
        q = line.find(b"' (version ", m + 7, e)
        c = line.find(b") has ", q, e)
        if q < 0 or c < 0:
            return None
        count = int(line[c + 6 : e - 21])
        return _mk_exit(h, _s(line[m + 7 : q]), int(line[q + 11 : c]), count)
    return None


def _h_repo_manager(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    """Repository polls, and every model's lifecycle before 22.x moved it to
    ``model_lifecycle.cc`` (``loading: m:1``, ``successfully loaded 'm' version 1``,
    ``unloading: m:1``, ``successfully unloaded 'm' version 1``)."""
    if line.startswith(b"Poll failed for model directory '", m):
        q = line.find(b"': ", m + 33, e)
        if q < 0:
            return None
        detail = _text(b'"' + line[q + 3 : e] + b'"', _NULL_STATS)
        return _mk_model(h, _s(line[m + 33 : q]), None, "failed", detail)
    return _h_lifecycle(line, m, e, h)


_WARMUP_RUNNING = b" is running warmup sample '"
_WARMUP_FAILED = b" failed to run warmup sample '"


def _h_model_instance(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    """``model 'M' instance I is running warmup sample 'S' for iteration N``, and ``... failed
    to run warmup sample 'S'``: the batch the instance logs next is Triton's warmup."""
    q = line.find(b"' instance ", m + 7, e)
    if q < 0:
        return None
    w = line.find(_WARMUP_RUNNING, q + 11, e)
    failed = w < 0
    if failed:
        w = line.find(_WARMUP_FAILED, q + 11, e)
        if w < 0:
            return None
    at = w + len(_WARMUP_FAILED if failed else _WARMUP_RUNNING)
    end = line.find(b"'", at, e)
    if end < 0:
        return None
    model, instance, sample = _s(line[m + 7 : q]), _s(line[q + 11 : w]), _s(line[at:end])
    if failed:
        return _mk_warm(h, model, instance, sample, 0, True)
    n = line[end + 1 : e].removeprefix(b" for iteration ")
    return _mk_warm(h, model, instance, sample, int(n), False) if n.isdigit() else None


def _h_stub(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    p = line.find(b"Stub process '", m, e)
    if p >= 0:
        q = line.find(b"'", p + 14, e)
        if q > 0:
            return _mk_stub(h, _s(line[p + 14 : q]), _text(b'"' + line[m:e] + b'"', _NULL_STATS))
    if line.startswith(_STUB_DEATHS, m):
        return _mk_stub(h, "", _text(b'"' + line[m:e] + b'"', _NULL_STATS).strip())
    return None


_POOL_HEAD = b"\\nMax Resource Map===>"


def _h_rate_limiter(line: bytes, m: int, e: int, h: _Hdr) -> Event | None:
    """``rate_limiter.cc``'s pool: ``\\nMax Resource Map===>\\n`` then, per device, a
    ``\\tDevice: GLOBAL`` line and a ``\\t\\tResource: NAME\\t Count: N`` line per resource."""
    if not line.startswith(_POOL_HEAD, m):
        return None
    rows = [r.strip() for r in _text(b'"' + line[m:e] + b'"', _NULL_STATS).split("\n")]
    device = ""
    resources = []
    for row in rows:
        if row.startswith("Device: "):
            device = row[8:].strip()
        elif row.startswith("Resource: "):
            name, sep, count = row[10:].rpartition("Count: ")
            if not sep or not count.isdecimal():
                return None
            resources.append((device, name.strip(), int(count)))
    return _mk_pool(h, tuple(resources))


_STUB_DEATHS = (
    b"Failed to initialize Python stub",
    b" Non-graceful termination",
    b"Stub process is unhealthy and it will be restarted",  # 21.x-23.x, no instance named
    b"Stub process is not healthy",
)

_NULL_STATS = ParseStats()

_DISPATCH = {
    b"infer_request.cc": _h_infer_request,
    b"python_be.cc": _h_python_be,
    b"python.cc": _h_python_be,  # the python backend's source before 21.x
    b"infer_response.cc": _h_response,
    b"http_server.cc": _h_http,
    b"sagemaker_server.cc": _h_http,
    b"infer_handler.cc": _h_grpc_handler,
    b"infer_handler.h": _h_grpc_handler,
    b"stream_infer_handler.cc": _h_stream_handler,
    b"grpc_server.cc": _h_grpc_server,
    b"model_lifecycle.cc": _h_lifecycle,
    b"server.cc": _h_server,
    b"model_repository_manager.cc": _h_repo_manager,
    b"pb_stub.cc": _h_stub,
    b"stub_launcher.cc": _h_stub,
    b"backend_model_instance.cc": _h_model_instance,
    b"rate_limiter.cc": _h_rate_limiter,
}
"""Source file -> handler. Keys are file names only: line numbers change between releases."""

_PREFIXES: dict[bytes, tuple[bytes, ...]] = {
    b"infer_request.cc": (b"[request id: ",),
    b"infer_response.cc": (b"add response output: ",),
    b"http_server.cc": (b"HTTP request: ",),
    b"sagemaker_server.cc": (b"SageMaker request: ",),
    b"infer_handler.cc": (b"New request handler for ", b"Cancellation notification received"),
    b"infer_handler.h": (b"New request handler for ", b"Cancellation notification received"),
    b"stream_infer_handler.cc": (
        b"New request handler for ",
        b"Cancellation notification received",
        _STREAM_COMPLETE,
        _STREAM_READ,
    ),
    b"grpc_server.cc": (b"Process for ",),
    b"backend_model_instance.cc": (b"model '",),
    b"rate_limiter.cc": (_POOL_HEAD,),
    b"model_lifecycle.cc": (b"loading: ", b"unloading: ", b"successfully ", b"failed to load '"),
    b"model_repository_manager.cc": (
        b"Poll failed for model directory '",
        b"loading: ",
        b"unloading: ",
        b"successfully ",
        b"failed to load '",
    ),
}
"""Message starts a handler can match, checked in C before paying for the Python call.
A source missing here (server.cc, pb_stub.cc) always gets its handler called."""


# ---------------------------------------------------------------- clock


CLOCK_SECONDS = 100_000
"""Distinct seconds a :class:`_Clock` remembers before it forgets them all (a day is 86,400)."""


class _Clock:
    """Header timestamp -> epoch ns, cached per second: a busy log repeats each second
    thousands of times, so the calendar arithmetic runs once per distinct second."""

    __slots__ = ("glog", "iso", "last_month", "offset_ns", "year")

    def __init__(self, year: int, utc_offset_s: int) -> None:
        self.year = year
        self.offset_ns = utc_offset_s * 1_000_000_000
        self.last_month = 0
        self.glog: dict[bytes, int] = {}
        self.iso: dict[bytes, int] = {}

    def glog_base(self, key: bytes) -> int | None:
        """``MMDD HH:MM:SS`` -> ns; None if not a real date/time."""
        m = _GLOG_TS.match(key)
        if m is None:
            return None
        mon, day, hh, mm, ss = (int(g) for g in m.groups())
        if self.last_month == 12 and mon == 1:
            self.year += 1
            self.glog.clear()
        if not _valid(self.year, mon, day, hh, mm, ss):
            return None
        self.last_month = mon
        base = calendar.timegm((self.year, mon, day, hh, mm, ss)) * 1_000_000_000 - self.offset_ns
        if len(self.glog) > CLOCK_SECONDS:
            self.glog.clear()
        self.glog[key] = base
        return base

    def iso_base(self, key: bytes) -> int | None:
        m = _ISO_TS.match(key)
        if m is None:
            return None
        y, mon, day, hh, mm, ss = (int(g) for g in m.groups())
        if not _valid(y, mon, day, hh, mm, ss):
            return None
        base = calendar.timegm((y, mon, day, hh, mm, ss)) * 1_000_000_000
        if len(self.iso) > CLOCK_SECONDS:
            self.iso.clear()
        self.iso[key] = base
        return base


def _valid(y: int, mon: int, day: int, hh: int, mm: int, ss: int) -> bool:
    return (
        1 <= y <= 9999  # datetime's range, which calendar.timegm needs
        and 1 <= mon <= 12
        and 1 <= day <= calendar.monthrange(y, mon)[1]
        and hh < 24
        and mm < 60
        and ss < 61
    )


# ---------------------------------------------------------------- the line loop


class _State:
    """What a headerless line needs to know about the lines before it."""

    __slots__ = ("at_ns", "block", "iso_k", "iso_s")

    def __init__(self) -> None:
        self.at_ns = 0
        self.block = 0
        self.iso_s = 0
        self.iso_k = 0


def _header(line: bytes, clock: _Clock) -> tuple[int, LogLevel, int, int] | None:
    """Validate a header at line[0:]; return (at_ns, level, source start, '] ' index)."""
    level = _LEVELS.get(line[0]) if line else None
    if level is not None and len(line) > 22 and line[5] == 32 and line[14] == 46:
        us = line[15:21]
        if line[21] != 32 or not us.isdigit():
            return None
        p = 22
        while line[p : p + 1] == b" ":  # tolerate a padded pid
            p += 1
        sp = line.find(b" ", p)
        close = line.find(b"] ", sp)
        if sp < 0 or close < 0 or not line[p:sp].isdigit() or not _source_ok(line, sp + 1, close):
            return None
        # The date last: a January date after December steps the year, which only a whole
        # header may do (a torn "I0101 00:00:00.00:02..." would move every later line).
        key = line[1:14]
        base = clock.glog.get(key)
        if base is None:
            base = clock.glog_base(key)
        if base is None:
            return None
        return base + int(us) * 1000, level, sp + 1, close
    if len(line) > 24 and line[10] == 84 and line[19] == 90 and line[20] == 32:
        level = _LEVELS.get(line[21])
        key = line[:19]
        base = clock.iso.get(key)
        if base is None:
            base = clock.iso_base(key)
        if base is None or level is None or line[22] != 32:
            return None
        p = 23
        while line[p : p + 1] == b" ":
            p += 1
        sp = line.find(b" ", p)
        close = line.find(b"] ", sp)
        if sp < 0 or close < 0 or not line[p:sp].isdigit():
            return None
        return base, level, sp + 1, close
    return None


def _source_ok(line: bytes, src: int, close: int) -> bool:
    """``file.cc:123`` between ``src`` and the ``] `` at ``close``."""
    colon = line.find(b":", src, close)
    return (
        colon >= 0
        and line[colon + 1 : close].isdigit()
        and _FNAME.fullmatch(line[src:colon]) is not None
    )


def _emit_header_line(
    line: bytes, off: int, parsed: tuple[int, LogLevel, int, int], st: _State, stats: ParseStats
) -> Event | None:
    """The general (not inlined) path for one header line; same result as the hot loop.

    An ISO8601 header (``--log-format ISO8601``) has whole seconds only: the records of one
    second are spread 1 µs apart in file order (``_ISO_SPREAD_MAX``)."""
    if line[10:11] != b"T":
        return _emit(line, off, parsed, st, stats)
    at_ns = parsed[0]
    if at_ns != st.iso_s:
        st.iso_s, st.iso_k = at_ns, 0
    spread = at_ns + min(st.iso_k, _ISO_SPREAD_MAX) * 1000
    rec = _emit(line, off, (spread, parsed[1], parsed[2], parsed[3]), st, stats)
    if rec is not None:
        st.iso_k += 1
    return rec


_ISO_SPREAD_MAX = 999_999
"""Triton's ISO8601 header says only the second, so every record of a busy second
had the same time, and whatever detectors decide by time (a call admitted inside its
caller's batch, a batch begun after a load) had no answer: a 20 ms batch began and ended at
one instant (``nz_rank_hang_iso``: no callee learned), and the old instances' batches logged
in the second of a reload counted as after it (``nz_cold_then_hang``). The n-th record of a
second is placed n µs into it: order survives every comparison by time; durations under a
second read as microseconds (deadlines then sit at their floors)."""


def _emit(
    line: bytes, off: int, parsed: tuple[int, LogLevel, int, int], st: _State, stats: ParseStats
) -> Event | None:
    at_ns, level, src, close = parsed
    colon = line.find(b":", src, close)
    if colon < 0 or not line[colon + 1 : close].isdigit() or not _FNAME.fullmatch(line[src:colon]):
        stats.skipped["malformed_header"] += 1
        return None
    st.at_ns = at_ns
    e = len(line)
    while e > close + 2 and line[e - 1] in (10, 13):
        e -= 1
    m = close + 2
    st.block = _opens_block(line[m:e])
    if e > m + 1 and line[m] == 34 and line[e - 1] == 34:
        m += 1
        e -= 1
    fname = line[src:colon]
    h = _mk_hdr(at_ns, level, _s(fname), int(line[colon + 1 : close]), off)
    handler = _DISPATCH.get(fname)
    try:
        rec = handler(line, m, e, h) if handler is not None else None
    except ValueError:  # a number that is not one: not this shape after all
        rec = None
    if rec is None:
        if level is LogLevel.INFO:
            stats.skipped["info"] += 1
            return None
        rec = _h_stub(line, m, e, h) or _mk_err(h, _text(line[close + 2 : _end(line)], stats))
    return rec


def _end(line: bytes) -> int:
    e = len(line)
    while e and line[e - 1] in (10, 13):
        e -= 1
    return e


def _headerless(line: bytes, off: int, st: _State, stats: ParseStats, clock: _Clock) -> list[Event]:
    """A line that does not start with a valid header: glued, stub text, body, or junk."""
    if b"\x00" in line:
        stats.skipped["binary"] += 1
        return []
    e = _end(line)
    if e == 0 or not line[:e].strip():
        stats.skipped["blank"] += 1
        if st.block == 1:
            st.block = 0
        return []
    if _HEADISH.match(line):
        # Starts like a header but the date/time or fields are impossible or cut short.
        stats.skipped["malformed_header"] += 1
        return []
    found = _ANY_HEAD.search(line) if b"] " in line else None
    out: list[Event] = []
    if found is not None:
        p = found.start()
        out.append(_stub_text(line[:p], off, st, stats))
        rest = line[p:]
        parsed = _header(rest, clock)
        if parsed is None:
            stats.skipped["malformed_header"] += 1
            return out
        rec = _emit_header_line(rest, off + p, parsed, st, stats)
        if rec is not None:
            out.append(rec)
        return out
    body = line[:e]
    if body.startswith(_STUB_STARTS):
        st.block = 0
    elif st.block:
        stats.skipped["continuation"] += 1
        return []
    return [_stub_text(body, off, st, stats)]


def _stub_text(raw: bytes, off: int, st: _State, stats: ParseStats) -> StubOutput:
    text = raw.decode("utf-8", "replace")
    if len(text) > MAX_TEXT:
        stats.skipped["truncated_text"] += 1
        text = text[:MAX_TEXT]
    return _mk_out(st.at_ns, off, text)


_GLUED_HEAD = re.compile(
    rb"(?<=\S)(?=[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^\s:\]]+\.(?:cc|h|cpp):\d+\] "
    rb"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [IWEF] +\d+ [^\s:\]]+\.(?:cc|h|cpp):\d+\] )"
)


def _unglued(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Split two Triton lines written onto one physical line by concurrent threads.

    Seen on 2.51 under load: ``"... EXECUTING to RELEASED"I1122 03:55:50.686441 866
    infer_handler.h:1374] "Received ..."``, and in older releases' unquoted messages the same
    without the quote (``... to RELEASEDI0315 ...``). Only a line naming two source files
    (``.cc:``/``.h:`` twice, a C-level count) is searched, so the common case costs two
    ``bytes.count``; a stub's text glued in front of a header is ``_headerless``'s.
    """
    for line in lines:
        if not isinstance(line, (bytes, bytearray)):
            raise TypeError(f"parse_lines wants bytes lines, got {type(line).__name__}")
        if line.count(b".cc:") + line.count(b".h:") < 2:
            yield line
            continue
        start = 0
        for m in _GLUED_HEAD.finditer(line, 1):
            if m.start() > start and _ANY_HEAD.match(line, start):
                yield line[start : m.start()]
                start = m.start()
        yield line[start:]


def runs_of(lines: Iterable[bytes]) -> Iterator[list[bytes]]:
    """``lines`` in lists of the size the compiled scan takes at a time."""
    it = iter(lines)
    while run := list(islice(it, _RUN)):
        yield run


class ParseOptions(TypedDict, total=False):
    """:func:`parse_runs`'s keywords beside ``year``, for the functions that hand them on."""

    utc_offset_s: int
    offset: int
    final: bool
    stats: ParseStats | None
    start_ns: int


def parse_lines(
    lines: Iterable[bytes], *, year: int, **options: Unpack[ParseOptions]
) -> Iterator[Event]:
    """Yield the events of ``lines`` (bytes, terminators kept) in order; the keywords are
    :func:`parse_runs`'s."""
    for run in parse_runs(runs_of(lines), year=year, **options):
        yield from run


def parse_runs(
    runs: Iterable[Sequence[bytes]],
    *,
    year: int,
    utc_offset_s: int = 0,
    offset: int = 0,
    final: bool = True,
    stats: ParseStats | None = None,
    start_ns: int = 0,
    into: ColumnSink | None = None,
) -> Iterator[list[Event]]:
    """Yield the events of ``runs`` (lists of lines, bytes with their terminators) in order,
    a list per run: a reader that has its lines in lists (a bundle's ingest reads a megabyte
    at a time) hands them over without a generator step a line, and takes the records
    without one a record, which were a fifth of an ingest.

    ``into`` (:func:`column_sink`'s) takes the records instead, as columns: it is what is
    yielded after each run, the same sink each time, and the caller takes what it wants off
    it before the next (a bundle's ingest, which stores columns and never needs the records).

    ``offset`` is the byte offset of the first line in its file. With ``final=False`` a last
    line without ``\\n`` is held back (a tailer caught a write in flight) and
    ``stats.resume_offset`` points at it. ``start_ns`` is the time of text before the first
    header (a tailer's previous call left off there: ``stats.last_at_ns``).
    """
    if stats is None:
        stats = ParseStats()
    clock = _Clock(year, utc_offset_s)
    st = _State()
    st.iso_s, st.iso_k = stats.iso_second_ns, stats.iso_in_second
    glog_cache = clock.glog
    iso_cache = clock.iso
    levels = _LEVELS
    sources = _source_cache()
    info = LogLevel.INFO
    mk_hdr = _mk_hdr
    skipped = stats.skipped
    off = offset
    n_lines = 0
    n_rec = 0
    n_info = 0
    pending: bytes | None = None
    last_at = start_ns
    block = 0
    rec: Event | None
    scan = _SCAN
    sink: Any = [] if into is None else into
    try:
        # Runs of lines: the compiled scan (hotpath.py) reads from ``i`` on what it is sure
        # of, and each line it hands back is read by the Python loop below, as it always was.
        for batch in runs:
            i = 0
            while i < len(batch):
                if scan is not None and pending is None:
                    (i, off, last_at, block, k_lines, k_rec, k_info, k_blank, k_cont,
                     st.iso_s, st.iso_k) = scan(
                        batch, i, sink, off, last_at, block, glog_cache, iso_cache, sources,
                        st.iso_s, st.iso_k,
                    )  # fmt: skip
                    n_lines += k_lines
                    n_rec += k_rec
                    n_info += k_info
                    if k_blank:
                        skipped["blank"] += k_blank
                    if k_cont:
                        skipped["continuation"] += k_cont
                    if i == len(batch):
                        break
                i += 1
                for line in _unglued(batch[i - 1 : i]):
                    if pending is not None:
                        st.at_ns = last_at
                        st.block = block
                        # the held line was not last after all: it is a real line
                        for rec in _guarded(pending, off, st, stats, clock):
                            n_rec += 1
                            sink.append(rec)
                        off += len(pending)
                        n_lines += 1
                        pending = None
                        last_at = st.at_ns
                        block = st.block
                    n = len(line)
                    if not n:
                        continue
                    if line[-1] != 10:
                        if not isinstance(line, (bytes, bytearray)):
                            raise TypeError(
                                f"parse_lines wants bytes lines, got {type(line).__name__}"
                            )
                        pending = line
                        continue
                    n_lines += 1
                    # ---- hot path: glog header, JSON-quoted message, known file:line
                    level = levels.get(line[0])
                    if (
                        level is not None
                        and n > 30
                        and line[5] == 32
                        and line[14] == 46
                        and line[21] == 32
                    ):
                        base = glog_cache.get(line[1:14])
                        sp = line.find(b" ", 22)
                        close = line.find(b"] ", sp)
                        src = sources.get(line[sp + 1 : close])
                        if src is None and close > 0:
                            src = _new_source(sources, line[sp + 1 : close])
                        if (
                            base is not None
                            and src is not None
                            and line[close + 2] == 34
                            and line[n - 2] == 34
                            and close + 3 < n - 2
                            and line[15:21].isdigit()
                            and line[22:sp].isdigit()
                        ):
                            at_ns = base + int(line[15:21]) * 1000
                            handler, fname, lineno, prefixes = src
                            if handler is not None and line.startswith(prefixes, close + 3):
                                try:
                                    rec = handler(
                                        line,
                                        close + 3,
                                        n - 2,
                                        mk_hdr(at_ns, level, fname, lineno, off),
                                    )
                                except ValueError:
                                    rec = None
                                if rec is not None:
                                    last_at = at_ns
                                    block = 0
                                    if line[n - 3] == 58 or line[n - 4 : n - 2] == b": ":
                                        block = 1
                                    n_rec += 1
                                    sink.append(rec)
                                    off += n
                                    continue
                            if level is info:
                                last_at = at_ns
                                block = (
                                    1 if line[n - 3] == 58 or line[n - 4 : n - 2] == b": " else 0
                                )
                                n_info += 1
                                off += n
                                continue
                    # ---- everything else: other formats, W/E lines, headerless, junk
                    if n > 24 and line[10] == 84 and line[19] == 90 and scan is not None:
                        _learn_source(sources, line)  # an ISO8601 header's, for the scan
                    st.at_ns = last_at
                    st.block = block
                    try:
                        for rec in _one(line, off, st, stats, clock):
                            n_rec += 1
                            sink.append(rec)
                    except Exception:  # one bad line must not lose the others
                        skipped["internal"] += 1
                    last_at = st.at_ns
                    block = st.block
                    off += n
            if sink:
                yield sink
                sink = [] if into is None else into
        if pending is not None:
            skipped["unterminated"] += 1
            st.at_ns = last_at
            st.block = block
            if final:
                n_lines += 1
                for rec in _guarded(pending, off, st, stats, clock):
                    n_rec += 1
                    sink.append(rec)
                off += len(pending)
        if sink:
            yield sink
    finally:
        stats.lines += n_lines
        stats.records += n_rec
        skipped["info"] += n_info
        stats.resume_offset = off
        stats.last_at_ns = last_at or stats.last_at_ns
        stats.iso_second_ns, stats.iso_in_second = st.iso_s, st.iso_k


_Source = tuple[Any, str, int, tuple[bytes, ...]]


def _source_cache() -> dict[bytes, _Source]:
    """``b"file.cc:123"`` -> (handler, file, line): one dict hit replaces split, int, lookup."""
    return {}


def _new_source(cache: dict[bytes, _Source], key: bytes) -> _Source | None:
    fname, sep, num = key.rpartition(b":")
    if not sep or not num.isdigit() or not _FNAME.fullmatch(fname):
        return None
    src = (_DISPATCH.get(fname), _s(fname), int(num), _PREFIXES.get(fname, (b"",)))
    if len(cache) < 100_000:
        cache[key] = src
    return src


def _learn_source(cache: dict[bytes, _Source], line: bytes) -> None:
    """Put an ISO8601 line's ``file.cc:123`` in the sources the compiled scan reads (the
    Python hot loop fills it from glog lines only): its next lines of that source are then
    the scan's, not Python's, at a fifth of the cost."""
    close = line.find(b"] ", 24)
    sp = line.rfind(b" ", 23, close) if close > 0 else -1
    if sp > 0 and line[sp + 1 : close] not in cache:
        _new_source(cache, line[sp + 1 : close])


def _one(line: bytes, off: int, st: _State, stats: ParseStats, clock: _Clock) -> list[Event]:
    parsed = _header(line, clock)
    if parsed is None:
        return _headerless(line, off, st, stats, clock)
    try:
        rec = _emit_header_line(line, off, parsed, st, stats)
    except ValueError:
        stats.skipped["malformed_header"] += 1
        return []
    return [] if rec is None else [rec]


def _guarded(line: bytes, off: int, st: _State, stats: ParseStats, clock: _Clock) -> list[Event]:
    """``_one`` for a line the hot loop did not read: a bug costs the line, not the parse."""
    try:
        return _one(line, off, st, stats, clock)
    except Exception:
        stats.skipped["internal"] += 1
        return []


_RUN = 512
"""Lines taken from the input at a time for the compiled scan (``hotpath``)."""

_SCAN = scanner(
    {
        "levels": _LEVELS,
        "handlers": {
            _h_infer_request: 1,
            _h_python_be: 2,
            _h_response: 3,
            _h_http: 4,
            _h_grpc_handler: 5,
            _h_stream_handler: 6,
            _h_grpc_server: 7,
        },
        "http_methods": _HTTP_METHODS,
        "strings": _str_cache,
        "transitions": _transitions,
        "ids": _ids,
    }
)

"""The compiled hot path (reads the lines it is sure of, hands back the rest), or None."""


def column_sink() -> ColumnSink | None:
    """A sink for :func:`parse_runs`' ``into``, or None where the scan is not compiled."""
    return new_sink() if _SCAN is not None else None


def parse_bytes(data: bytes, **kwargs: Any) -> list[Event]:
    """Convenience for a whole file's content; see ``parse_lines`` for the keywords."""
    return list(parse_lines(data.splitlines(keepends=True), **kwargs))
