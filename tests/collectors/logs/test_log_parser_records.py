"""The parser's records of the five kinds detectors join on, as plain rows: a golden table,
the clock's edge cases and an invalid-input table.

Each case is fed through ``parse_lines`` as the tailer feeds it (split after each ``b"\\n"``,
``final=False``) and the records of the five kinds come back as one tuple per record, so the
table spells out every field. (These cases first pinned the C column scanner ``fastscan``
against the parser; the scanner had no production caller and was removed, the parser's pins
stay.)
"""

# ruff: noqa: E501  (log lines are kept whole)

from __future__ import annotations

import calendar
import io
import time
from dataclasses import dataclass
from typing import Any

import pytest

from collectors.logs import ParseStats, parse_lines, parser
from observability.events import (
    InstanceExecuting,
    InstanceReleased,
    RequestPrepared,
    RequestStateChange,
    ResponseOutput,
)

KINDS = ("state", "executing", "released", "outputs", "prepared")
_FIELDS: dict[type, tuple[str, tuple[str, ...]]] = {
    RequestStateChange: ("state", ("request_id", "from_state", "to_state")),
    InstanceExecuting: ("executing", ("model", "instance", "count")),
    InstanceReleased: ("released", ("instance", "count")),
    ResponseOutput: ("outputs", ("output", "dtype", "shape")),
    RequestPrepared: ("prepared", ("request_id", "model", "version", "batch_size", "timeout_us")),
}


@dataclass
class Rows:
    lines: int
    resume_offset: int
    rows: dict[str, list[tuple[Any, ...]]]

    @property
    def records(self) -> int:
        return sum(len(v) for v in self.rows.values())


def parsed(data: bytes, *, year: int = 2026, utc_offset_s: int = 0, offset: int = 0) -> Rows:
    """``(at_ns, offset, *fields)`` per record of the five kinds, per kind."""
    stats = ParseStats()
    rows: dict[str, list[tuple[Any, ...]]] = {k: [] for k in KINDS}
    records = parse_lines(
        io.BytesIO(data),  # splits after b"\n" only, as reading the file in binary mode does
        year=year,
        utc_offset_s=utc_offset_s,
        offset=offset,
        final=False,
        stats=stats,
    )
    for rec in records:
        found = _FIELDS.get(type(rec))
        if found is not None:
            kind, names = found
            h = rec.header  # type: ignore[union-attr]
            rows[kind].append((h.at_ns, h.offset, *(getattr(rec, n) for n in names)))
    return Rows(stats.lines, stats.resume_offset, rows)


def ns(y: int, mo: int, d: int, hh: int, mm: int, ss: int, us: int = 0) -> int:
    return calendar.timegm((y, mo, d, hh, mm, ss)) * 10**9 + us * 1000


# ------------------------------------------------------------------------ golden table

STATE = b'I1122 03:25:00.828602 4403 infer_request.cc:132] "[request id: req-plain-1] Setting state from INITIALIZED to PENDING"\n'
T = ns(2026, 11, 22, 3, 25, 0)
PREP = (
    b'I1122 03:25:00.828571 4403 infer_request.cc:905] "[request id: req-plain-1] prepared: '
    b"[0x0x7f7e540062c0] request id: req-plain-1, model: plain, requested version: -1, actual "
    b"version: 1, flags: 0x0, correlation id: 0, batch size: 4, priority: 0, timeout (us): 250\\n"
    b'original inputs:\\n[0x0x7f7e54016a58] input: INPUT0, type: INT64, shape: [4]\\n"\n'
)

# (name, data, expected rows per kind: only the kinds listed must be non-empty)
GOLDEN: list[tuple[str, bytes, dict[str, list[tuple[Any, ...]]]]] = [
    (
        "state change",
        STATE,
        {"state": [(T + 828602000, 0, "req-plain-1", "INITIALIZED", "PENDING")]},
    ),
    (
        "id unknown",
        b'I1122 03:25:00.872811 4403 infer_request.cc:132] "[request id: <id_unknown>] Setting state from INITIALIZED to INITIALIZED"\n',
        {"state": [(T + 872811000, 0, "", "INITIALIZED", "INITIALIZED")]},
    ),
    (
        "json-escaped id",
        b'I1122 03:25:00.000001 1 infer_request.cc:132] "[request id: a\\"b\\u00e9] Setting state from PENDING to EXECUTING"\n',
        {"state": [(T + 1000, 0, 'a"b\u00e9', "PENDING", "EXECUTING")]},
    ),
    ("prepared", PREP, {"prepared": [(T + 828571000, 0, "req-plain-1", "plain", 1, 4, 250)]}),
    (
        "prepared, legacy unquoted",
        b"I1122 03:25:00.000002 1 infer_request.cc:905] [request id: x] prepared: [0x1] request id: x, model: m, requested version: -1, actual version: 3, flags: 0x0, batch size: 2, priority: 0, timeout (us): 7\n",
        {"prepared": [(T + 2000, 0, "x", "m", 3, 2, 7)]},
    ),
    (
        "executing",
        b'I1122 03:25:00.873601 4403 python_be.cc:1273] "model bls, instance bls_0_0, executing 1 requests"\n',
        {"executing": [(T + 873601000, 0, "bls", "bls_0_0", 1)]},
    ),
    (
        "released",
        b'I1122 03:25:00.875337 4403 python_be.cc:1395] "TRITONBACKEND_ModelInstanceExecute: model instance name bls_0_0 released 3 requests"\n',
        {"released": [(T + 875337000, 0, "bls_0_0", 3)]},
    ),
    (
        "response output",
        b'I1122 03:25:00.874560 4403 infer_response.cc:174] "add response output: output: OUTPUT0, type: FP32, shape: [2,-1,3]"\n',
        {"outputs": [(T + 874560000, 0, "OUTPUT0", "FP32", (2, -1, 3))]},
    ),
    (
        "scalar output",
        b'I1122 03:25:00.874560 4403 infer_response.cc:148] "add response output: output: o, type: BYTES, shape: []"\n',
        {"outputs": [(T + 874560000, 0, "o", "BYTES", ())]},
    ),
    (
        "iso8601 header",
        b'2026-11-22T03:26:19Z I 7400 python_be.cc:1273] "model m, instance m_0, executing 2 requests"\n',
        {"executing": [(ns(2026, 11, 22, 3, 26, 19), 0, "m", "m_0", 2)]},
    ),
    (
        "crlf",
        STATE[:-1] + b"\r\n",
        {"state": [(T + 828602000, 0, "req-plain-1", "INITIALIZED", "PENDING")]},
    ),
    (
        "crlf unquoted",
        b"I1122 03:25:00.000003 1 python_be.cc:1 model a, instance b, executing 4 requests\r\n".replace(
            b":1 ", b":1] "
        ),
        {"executing": [(T + 3000, 0, "a", "b", 4)]},
    ),
    (
        "stub text glued in front",
        b'gluer progress 50%I1122 03:36:02.651174 9684 infer_response.cc:174] "add response output: output: OUTPUT0, type: INT64, shape: [2]"\n',
        {"outputs": [(ns(2026, 11, 22, 3, 36, 2, 651174), 18, "OUTPUT0", "INT64", (2,))]},
    ),
    (
        "two Triton lines glued",
        b'I1122 03:55:50.686430 866 infer_request.cc:132] "[request id: g1] Setting state from EXECUTING to RELEASED"'
        b'I1122 03:55:50.686441 866 python_be.cc:1] "model a, instance a_0, executing 1 requests"\n',
        {
            "state": [(ns(2026, 11, 22, 3, 55, 50, 686430), 0, "g1", "EXECUTING", "RELEASED")],
            "executing": [(ns(2026, 11, 22, 3, 55, 50, 686441), 107, "a", "a_0", 1)],
        },
    ),
    (
        "three Triton lines glued",
        STATE[:-1]
        + STATE[:-1].replace(b"PENDING", b"EXECUTING")
        + b'2026-11-22T03:26:19Z I 1 python_be.cc:9] "TRITONBACKEND_ModelInstanceExecute: model instance name i released 1 requests"\n',
        {
            "state": [
                (T + 828602000, 0, "req-plain-1", "INITIALIZED", "PENDING"),
                (T + 828602000, len(STATE) - 1, "req-plain-1", "INITIALIZED", "EXECUTING"),
            ],
            "released": [(ns(2026, 11, 22, 3, 26, 19), 2 * len(STATE), "i", 1)],
        },
    ),
    (
        "utc offset and year come from the caller",
        b'I0101 00:00:00.000000 1 python_be.cc:1] "model a, instance b, executing 1 requests"\n',
        {"executing": [(ns(2026, 1, 1, 0, 0, 0), 0, "a", "b", 1)]},
    ),
    (
        "december to january bumps the year",
        b'I1231 23:59:59.000000 1 python_be.cc:1] "model a, instance b, executing 1 requests"\n'
        b'I0101 00:00:00.000000 1 python_be.cc:1] "model a, instance b, executing 2 requests"\n',
        {
            "executing": [
                (ns(2026, 12, 31, 23, 59, 59), 0, "a", "b", 1),
                (ns(2027, 1, 1, 0, 0, 0), 84, "a", "b", 2),
            ]
        },
    ),
    (
        "int() semantics: spaces and underscores",
        b'I1122 03:25:00.000000 1 python_be.cc:1] "model a, instance b, executing 1_000 requests"\n'
        b'I1122 03:25:00.000000 1 infer_response.cc:1] "add response output: output: o, type: t, shape: [ 2,+3]"\n',
        {
            "executing": [(T, 0, "a", "b", 1000)],
            "outputs": [(T, 88, "o", "t", (2, 3))],
        },
    ),
    (
        "numbers past int64",
        b'I1122 03:25:00.000000 1 infer_response.cc:1] "add response output: output: o, type: t, shape: [99999999999999999999999]"\n',
        {"outputs": [(T, 0, "o", "t", (99999999999999999999999,))]},
    ),
    (
        "not utf-8 in a name",
        b'I1122 03:25:00.000000 1 python_be.cc:1] "model \xff\xfe, instance b, executing 1 requests"\n',
        {"executing": [(T, 0, "\ufffd\ufffd", "b", 1)]},
    ),
]


@pytest.mark.parametrize(("name", "data", "want"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden(name: str, data: bytes, want: dict[str, list[tuple[Any, ...]]]) -> None:
    r = parsed(data)
    assert r.rows == {k: want.get(k, []) for k in KINDS}
    assert r.resume_offset == len(data)


def test_year_past_2262_does_not_overflow() -> None:
    r = parsed(STATE, year=2300)
    assert [row[0] for row in r.rows["state"]] == [ns(2300, 11, 22, 3, 25, 0, 828602)]


def test_last_line_without_newline_is_held_back() -> None:
    r = parsed(STATE + STATE[:-1], offset=500)
    assert len(r.rows["state"]) == 1 and r.lines == 1
    assert r.resume_offset == 500 + len(STATE)


def test_timestamp_cache_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    """After more distinct seconds than it keeps (``CLOCK_SECONDS``, made small here: the
    real 100,000 took 2.4 s of the quick suite) the parser's clock forgets what it saw, so a
    seen January second is recomputed and bumps the year again after December lines."""
    monkeypatch.setattr(parser, "CLOCK_SECONDS", 50)
    dec = b'I12%02d %02d:%02d:%02d.000000 1 x.cc:1] "y"\n'
    jan = b'I0101 00:00:00.000000 1 python_be.cc:1] "model a, instance b, executing 1 requests"\n'
    parts = [jan, dec % (1, 1, 0, 0), jan]
    parts += [dec % (1 + s // 86400, s // 3600 % 24, s // 60 % 60, s % 60) for s in range(52)]
    parts.append(jan)
    r = parsed(b"".join(parts), year=2026)
    years = [time.gmtime(row[0] // 10**9).tm_year for row in r.rows["executing"]]
    assert years == [2026, 2026, 2027]  # the second January line hit the cache


# ------------------------------------------------------------------------ invalid input

INVALID: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("month 13", STATE.replace(b"I1122", b"I1322")),
    ("day 31 of November", STATE.replace(b"I1122", b"I1131")),
    ("letters in micros", STATE.replace(b".828602", b".82x602")),
    ("no pid", STATE.replace(b" 4403 ", b" ")),
    ("no source line", STATE.replace(b".cc:132]", b".cc]")),
    ("other source file", STATE.replace(b"infer_request.cc", b"infer_requests.cc")),
    ("header cut short", b"I1122 03:25:00.8286\n"),
    ("iso year 0", STATE.replace(b"I1122 03:25:00.828602", b"0000-11-22T03:25:00Z I")),
    ("NUL before a glued header", b"\x00junk" + STATE),
    ("binary", bytes(range(256)) * 3 + b"\n"),
    ("blank", b"   \n\r\n\n"),
    ("no states", STATE.replace(b" to ", b" into ")),
    (
        "count not a number",
        b'I1122 03:25:00.000000 1 python_be.cc:1] "model a, instance b, executing x requests"\n',
    ),
    (
        "shape not numbers",
        b'I1122 03:25:00.000000 1 infer_response.cc:1] "add response output: output: o, type: t, shape: [2,,3]"\n',
    ),
    ("prepared without timeout", PREP.replace(b"timeout (us)", b"timeout")),
    ("prepared version not a number", PREP.replace(b"actual version: 1", b"actual version: one")),
    (
        "over-long line",
        b'I1122 03:25:00.000000 1 python_be.cc:1] "model ' + b"a" * 2_000_000 + b"\n",
    ),
    ("over-long junk with brackets", b"] " * 500_000 + b"\n"),
]


@pytest.mark.parametrize(("name", "bad"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_gives_no_record_and_neighbours_survive(name: str, bad: bytes) -> None:
    assert parsed(bad).records == 0
    r = parsed(STATE + bad + b"\n" + STATE)
    assert [row[1] for row in r.rows["state"]] == [0, len(STATE) + len(bad) + 1]


def test_iso8601_records_of_one_second_keep_their_order_in_time() -> None:
    """``--log-format ISO8601`` stamps whole seconds: the n-th record of a second is placed
    n µs into it, across a tailer's calls too (the same ``ParseStats``), and a line that
    gives no record (an info line) moves nothing."""
    line = b'2026-11-22T03:26:19Z I 7400 python_be.cc:1273] "model m, instance m_0, executing 1 requests"\n'
    info = b'2026-11-22T03:26:19Z I 7400 server.cc:1 "nothing of interest"\n'.replace(
        b'.cc:1 "', b'.cc:1] "'
    )
    later = line.replace(b"03:26:19Z", b"03:26:20Z")
    stats = ParseStats()
    first = list(parse_lines([line, info, line], year=2026, stats=stats))
    second = list(parse_lines([line, later], year=2026, stats=stats))
    at = [r.header.at_ns - ns(2026, 11, 22, 3, 26, 19) for r in [*first, *second]]
    assert at == [0, 1000, 2000, 1_000_000_000]
