"""The obvious parser: one combined named-group regex per line, dataclass constructors.

It exists to be the yardstick, not to be used: the tests require the fast parser to give
exactly its records on every real fixture line, and ``benchmarks/log_parse.py`` reports the
fast parser's speed as a multiple of this one's. It shares only the policy helpers (how a
headerless line is classified, how a JSON message is decoded) with ``parser``; everything
that reads a header or a message is written independently.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Iterator

from collectors.logs.parser import (
    _HEADISH,
    _HTTP_METHODS,
    _STUB_STARTS,
    MAX_TEXT,
    Event,
    ParseStats,
    _ident,
    _opens_block,
    _text,
    model_config,
)
from observability.events import (
    ErrorLine,
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
    StubHealth,
    StubOutput,
    WarmupRun,
)

__all__ = ["LINE_RE", "parse_lines_regex"]

LINE_RE = re.compile(
    rb"""(?P<pre>.*?)
(?:(?P<glv>[IWEF])(?P<mo>\d\d)(?P<dd>\d\d)\ (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)\.(?P<us>\d{6})
  |(?P<Y>\d{4})-(?P<imo>\d\d)-(?P<idd>\d\d)T(?P<iH>\d\d):(?P<iM>\d\d):(?P<iS>\d\d)Z
   \ (?P<ilv>[IWEF]))
\ +(?P<pid>\d+)\ (?P<file>[^\s:\]]+):(?P<lineno>\d+)\]\ (?P<q>"?)
(?:
   \[request\ id:\ (?P<rid>.*?)\]\ (?:
        Setting\ state\ from\ (?P<sfrom>.*?)\ to\ (?P<sto>.*?)
       |prepared:\ (?:(?!\\n).)*?,\ model:\ (?P<pmodel>[^,]*),(?:(?!\\n).)*?
            actual\ version:\ (?P<pver>-?\d+),(?:(?!\\n).)*?batch\ size:\ (?P<pbs>\d+),
            (?:(?!\\n).)*?timeout\ \(us\):\ (?P<pto>\d+)(?:\\n.*|\n?.*?))
  |(?P<mcfg>model\ configuration:.*)
  |model\ (?P<emodel>.*?),\ instance\ (?P<einst>.*?),\ executing\ (?P<en>\d+)\ requests
  |TRITONBACKEND_ModelInstanceExecute:\ model\ instance\ name\ (?P<rinst>.*)
     \ released\ (?P<rn>\d+)\ requests
  |add\ response\ output:\ output:\ (?P<oname>.*?),\ type:\ (?P<otype>.*?),
     \ shape:\ \[(?P<oshape>[-\d,]*)\]
  |HTTP\ request:\ (?P<hm>\d+)\ (?P<hpath>.*?)
  |New\ request\ handler\ for\ (?P<gnew>[^,]*),.*?
  |(?P<gcan_all>Cancellation\ notification\ received\ for\ (?P<gcan>[^,]*),.*?)
  |Process\ for\ (?P<gproc>[^,]*),\ rpc_ok=1,\ .*\ step\ START
  |loading:\ (?P<lname>.*):(?P<lver>\d+)
  |successfully\ loaded\ '(?P<okname>[^']*)'.*?
  |successfully\ unloaded\ '(?P<unname>[^']*)'\ version\ (?P<unver>\d+)
  |failed\ to\ load\ '(?P<fname>[^']*)'(?:\ version\ (?P<fver>\d+):\ (?P<fdetail>.*?))?
  |(?P<uname>.+)\ v(?P<uver>\d+):\ UNLOADING
  |Poll\ failed\ for\ model\ directory\ '(?P<pfname>[^']*)':\ (?P<pfdetail>.*?)
  |model\ '(?P<wmodel>.*?)'\ instance\ (?P<winst>.*?)\ (?:is\ running\ warmup\ sample
     \ '(?P<wsample>[^']*)'\ for\ iteration\ (?P<witer>\d+)
     |failed\ to\ run\ warmup\ sample\ '(?P<wfailed>[^']*)')
  |(?P<rlpool>\\nMax\ Resource\ Map===>.*?)
  |(?P<rest>.*?)
)(?P=q)[\r\n]*\Z""",
    re.VERBOSE | re.DOTALL,
)
"""Header, then every message shape the detectors need, then anything."""

_FILES = {
    "rid": {b"infer_request.cc"},
    "mcfg": {b"python_be.cc", b"python.cc"},
    "emodel": {b"python_be.cc"},
    "rinst": {b"python_be.cc"},
    "oname": {b"infer_response.cc"},
    "hm": {b"http_server.cc"},
    "gnew": {b"infer_handler.cc", b"infer_handler.h", b"stream_infer_handler.cc"},
    "gcan": {b"infer_handler.cc", b"infer_handler.h", b"stream_infer_handler.cc"},
    "gproc": {b"grpc_server.cc"},
    "lname": {b"model_lifecycle.cc"},
    "okname": {b"model_lifecycle.cc"},
    "unname": {b"model_lifecycle.cc"},
    "fname": {b"model_lifecycle.cc"},
    "uname": {b"server.cc"},
    "pfname": {b"model_repository_manager.cc"},
    "wmodel": {b"backend_model_instance.cc"},
    "rlpool": {b"rate_limiter.cc"},
}
_STUB_RE = re.compile(
    rb".*?Stub process '(?P<sinst>[^']*)'"
    rb"|Failed to initialize Python stub| Non-graceful termination"
    rb"|Stub process is unhealthy and it will be restarted|Stub process is not healthy",
    re.DOTALL,
)
"""Stub health anywhere in a message that no file-specific shape claimed."""
_STUB_FILES = {b"python_be.cc", b"pb_stub.cc", b"stub_launcher.cc"}


def _u(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _record(
    g: dict[str, bytes | None], msg: bytes, hdr: LogRecord, stats: ParseStats
) -> Event | None:
    f = g["file"]
    kind = next((k for k in _FILES if g[k] is not None), None)
    if kind is not None and f not in _FILES[kind]:
        kind = None
    if kind == "rid" and g["sfrom"] is not None:
        return RequestStateChange(
            hdr, _ident(g["rid"] or b""), _u(g["sfrom"] or b""), _u(g["sto"] or b"")
        )
    if kind == "rid" and g["pmodel"] is not None:
        return RequestPrepared(
            hdr,
            _ident(g["rid"] or b""),
            _u(g["pmodel"]),
            int(g["pver"] or 0),
            int(g["pbs"] or 0),
            int(g["pto"] or 0),
        )
    if kind == "mcfg":
        fields = model_config(_text(b'"' + (g["mcfg"] or b"") + b'"', ParseStats()))
        if fields is not None:
            return ModelConfig(hdr, *fields)
        kind = None
    if kind == "emodel":
        return InstanceExecuting(
            hdr, _u(g["emodel"] or b""), _u(g["einst"] or b""), int(g["en"] or 0)
        )
    if kind == "rinst":
        return InstanceReleased(hdr, _u(g["rinst"] or b""), int(g["rn"] or 0))
    if kind == "oname":
        dims = g["oshape"] or b""
        shape = tuple(int(d) for d in dims.split(b",")) if dims else ()
        return ResponseOutput(hdr, "", _u(g["oname"] or b""), _u(g["otype"] or b""), shape)
    if kind == "hm":
        num = g["hm"] or b""
        return FrontendRequest(
            hdr, "http", _HTTP_METHODS.get(num) or _u(num), _u(g["hpath"] or b"")
        )
    if kind == "gnew":
        return FrontendRequest(hdr, "grpc", _u(g["gnew"] or b""), "")
    if kind == "gcan":
        return FrontendCancellation(hdr, "grpc", _u(g["gcan"] or b""), _u(g["gcan_all"] or b""))
    if kind == "gproc":
        return FrontendRequest(hdr, "grpc", _u(g["gproc"] or b""), "")
    if kind == "lname":
        return ModelStateChange(hdr, _u(g["lname"] or b""), int(g["lver"] or 0), "loading", "")
    if kind == "okname":
        return ModelStateChange(hdr, _u(g["okname"] or b""), None, "loaded", "")
    if kind == "unname":
        return ModelStateChange(hdr, _u(g["unname"] or b""), int(g["unver"] or 0), "unloaded", "")
    if kind == "fname":
        ver = g["fver"]
        detail = _text(b'"' + (g["fdetail"] or b"") + b'"', ParseStats()) if ver is not None else ""
        return ModelStateChange(
            hdr, _u(g["fname"] or b""), None if ver is None else int(ver), "failed", detail
        )
    if kind == "uname":
        return ModelStateChange(hdr, _u(g["uname"] or b""), int(g["uver"] or 0), "unloading", "")
    if kind == "pfname":
        detail = _text(b'"' + (g["pfdetail"] or b"") + b'"', ParseStats())
        return ModelStateChange(hdr, _u(g["pfname"] or b""), None, "failed", detail)
    if kind == "wmodel":
        model, inst = _u(g["wmodel"] or b""), _u(g["winst"] or b"")
        if g["wfailed"] is not None:
            return WarmupRun(hdr, model, inst, _u(g["wfailed"]), 0, True)
        return WarmupRun(hdr, model, inst, _u(g["wsample"] or b""), int(g["witer"] or 0))
    if kind == "rlpool":
        text = _text(b'"' + (g["rlpool"] or b"") + b'"', ParseStats())
        device, pool = "", []
        for row in (r.strip() for r in text.split("\n")):
            if m := re.fullmatch(r"Device: (.*)", row, re.DOTALL):
                device = m[1].strip()
            elif m := re.fullmatch(r"Resource: (.*)Count: (\d+)", row, re.DOTALL):
                pool.append((device, m[1].strip(), int(m[2])))
            elif row.startswith("Resource: "):
                pool = None  # type: ignore[assignment]
                break
        if pool is not None:
            return RateLimiterPool(hdr, tuple(pool))
        kind = None
    level = hdr.level
    if f not in _STUB_FILES and level is LogLevel.INFO:
        stats.skipped["info"] += 1
        return None
    # another file's shape may have matched above: look at the whole message again
    q = g["q"] or b""
    body = msg[1:-1] if q else msg
    stub = _STUB_RE.match(body)
    if stub is not None and stub["sinst"] is not None:
        return StubHealth(hdr, _u(stub["sinst"]), _text(b'"' + body + b'"', ParseStats()))
    if stub is not None:
        return StubHealth(hdr, "", _text(b'"' + body + b'"', ParseStats()).strip())
    if level is LogLevel.INFO:
        stats.skipped["info"] += 1
        return None
    return ErrorLine(hdr, _text(msg, stats))


def parse_lines_regex(
    lines: Iterable[bytes],
    *,
    year: int,
    utc_offset_s: int = 0,
    offset: int = 0,
    stats: ParseStats | None = None,
) -> Iterator[Event]:
    """Same contract as ``parser.parse_lines`` with ``final=True``."""
    stats = stats if stats is not None else ParseStats()
    off = offset
    at_ns = 0
    block = 0
    last_month = 0
    iso_s = iso_k = 0  # the parser's ISO8601 spread: n-th record of a second at n µs
    for line in lines:
        n = len(line)
        if not n:
            continue
        stats.lines += 1
        body = line.rstrip(b"\r\n")
        if not body.strip():
            stats.skipped["blank"] += 1
            if block == 1:
                block = 0
            off += n
            continue
        m = LINE_RE.match(line)
        if (m is None or m.group("pre")) and b"\x00" in line:
            stats.skipped["binary"] += 1
        elif m is not None and (not m.group("pre") or not _HEADISH.match(line)):
            g = m.groupdict()
            pre = g["pre"] or b""
            if pre:
                text = _u(pre)[:MAX_TEXT]
                stats.records += 1
                yield StubOutput(at_ns, off, text)
            try:
                if g["glv"] is not None:
                    mon = int(g["mo"] or 0)
                    if last_month == 12 and mon == 1:
                        year += 1
                    ymd = (year, mon, int(g["dd"] or 0))
                    hms = (int(g["H"] or 0), int(g["M"] or 0), int(g["S"] or 0))
                    us = int(g["us"] or 0)
                    lv = g["glv"]
                    shift = utc_offset_s
                else:
                    ymd = (int(g["Y"] or 0), int(g["imo"] or 0), int(g["idd"] or 0))
                    hms = (int(g["iH"] or 0), int(g["iM"] or 0), int(g["iS"] or 0))
                    us, lv, shift = 0, g["ilv"], 0
                y, mo, d = ymd
                if not (1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1]):
                    raise ValueError
                if hms[0] > 23 or hms[1] > 59 or hms[2] > 60:
                    raise ValueError
                if g["glv"] is not None:
                    last_month = mo
                at_ns = (calendar.timegm((*ymd, *hms)) - shift) * 1_000_000_000 + us * 1000
                iso = g["glv"] is None
                if iso:
                    if at_ns != iso_s:
                        iso_s, iso_k = at_ns, 0
                    at_ns += min(iso_k, 999_999) * 1000
                hdr = LogRecord(
                    at_ns,
                    LogLevel(_u(lv or b"")),
                    _u(g["file"] or b""),
                    int(g["lineno"] or 0),
                    off + len(pre),
                )
                msg_start = m.start("q")
                block = _opens_block(line[msg_start:].rstrip(b"\r\n"))
                rec = _record(g, line[msg_start:].rstrip(b"\r\n"), hdr, stats)
            except ValueError:
                stats.skipped["malformed_header"] += 1
                rec = None
            if rec is not None:
                stats.records += 1
                if g["glv"] is None:
                    iso_k += 1
                yield rec
        elif _HEADISH.match(line):
            stats.skipped["malformed_header"] += 1
        elif body.startswith(_STUB_STARTS) or not block:
            block = 0
            stats.records += 1
            yield StubOutput(at_ns, off, _u(body)[:MAX_TEXT])
        else:
            stats.skipped["continuation"] += 1
        off += n
