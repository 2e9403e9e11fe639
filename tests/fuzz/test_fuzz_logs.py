"""Fuzz the verbose-log parser against its regex reference.

The existing properties (``tests/collectors/logs``) feed random bytes and header-shaped
garbage; this module feeds what a real log turns into when things go wrong: real fixture
lines mutated byte by byte, invalid UTF-8 and NULs, JSON escapes that decode to lone
surrogates, impossible dates (year 0000, 9999 plus a December-to-January step), stub
tracebacks glued in front of headers, lines cut without their newline, and 1 MB lines.
Each input must give, without raising:

* no ``internal`` skip (the parser's own marker for "a bug dropped this line");
* ``resume_offset`` exactly past the bytes it consumed, records in file order, each inside
  the input, each text cut to ``MAX_TEXT`` and encodable as UTF-8 (what the store needs);
* the same records as the regex reference (where the two differ by design, named in
  ``_NUMBER_QUIRK`` and ``_cache_may_skip_a_year_step``, only the rest is compared).

The optional atheris harness ``benchmarks/fuzz_atheris.py`` checks the same, guided by
coverage; inputs it found are among ``regressions/logs/``.

Run longer: ``TRITON_OBS_FUZZ_EXAMPLES=20000 pytest -q tests/fuzz/test_fuzz_logs.py --timeout=0``
(``TRITON_OBS_FUZZ_KEEP=1`` keeps the input of a failure under ``regressions/logs/``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from collectors.logs import MAX_TEXT, ParseStats, parse_bytes, parse_lines
from collectors.logs.parser import Event, _unglued
from observability.events import StubOutput
from tests.collectors.logs.reference import parse_lines_regex
from tests.fuzz._support import (
    FIXTURES,
    assert_storable,
    fuzz_settings,
    keep_on_failure,
    regression_files,
)

_LINES = [
    line
    for path in sorted((FIXTURES / "logs").glob("*.log"))
    for line in path.read_bytes().splitlines(keepends=True)
]
_REFERENCE_LIMIT = 16_384
"""The regex reference backtracks over long lines; it is the yardstick only below this."""

_NASTY = [
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",  # a UTF-8 encoded surrogate: invalid UTF-8
    b"\r",
    b"\n",
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\udfff",
    b"\\n",
    b"] ",
    b'] "',
    b":",
    b" ",
    b"<id_unknown>",
    b"Traceback (most recent call last):",
    b"Exception in callback",
    b"99999999999999999999999",
]
_YEARS = st.sampled_from([0, 1, 1969, 1970, 2026, 2262, 2263, 9999])
_FILES = st.sampled_from(
    [
        "infer_request.cc",
        "python_be.cc",
        "infer_response.cc",
        "http_server.cc",
        "infer_handler.h",
        "grpc_server.cc",
        "model_lifecycle.cc",
        "server.cc",
        "model_repository_manager.cc",
        "pb_stub.cc",
        "stub_launcher.cc",
        "x.cc",
    ]
)


@st.composite
def _header(draw: st.DrawFn) -> bytes:
    """A glog or ISO8601 header, dates possible or not."""
    level = draw(st.sampled_from("IWEFX"))
    mo, d = draw(st.integers(0, 13)), draw(st.integers(0, 32))
    hh, mm, ss = draw(st.integers(0, 25)), draw(st.integers(0, 61)), draw(st.integers(0, 61))
    src = f"{draw(_FILES)}:{draw(st.integers(0, 99999))}"
    pid = draw(st.sampled_from(["1", "4403", "  7", "x"]))
    if draw(st.booleans()):
        us = draw(st.integers(0, 999_999))
        head = f"{level}{mo:02d}{d:02d} {hh:02d}:{mm:02d}:{ss:02d}.{us:06d} {pid} {src}] "
    else:
        y = draw(_YEARS)
        head = f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}Z {level} {pid} {src}] "
    return head.encode()


def _mutate(line: bytes, ops: list[tuple[int, int, bytes]]) -> bytes:
    """Apply (kind, position, bytes) edits: 0 insert, 1 overwrite, 2 delete, 3 cut."""
    for kind, pos, blob in ops:
        at = pos % (len(line) + 1)
        if kind == 0:
            line = line[:at] + blob + line[at:]
        elif kind == 1:
            line = line[:at] + blob + line[at + len(blob) :]
        elif kind == 2:
            line = line[:at] + line[at + len(blob) + 1 :]
        else:
            line = line[:at]
    return line


_EDIT = st.tuples(
    st.integers(0, 3),
    st.integers(0, 10_000),
    st.one_of(st.sampled_from(_NASTY), st.binary(min_size=1, max_size=4)),
)
_MESSAGE = st.lists(
    st.one_of(st.sampled_from(_NASTY), st.binary(max_size=8), st.sampled_from(_LINES)),
    max_size=6,
).map(b"".join)
_MADE = st.builds(lambda h, q, m: h + q + m + q, _header(), st.sampled_from([b'"', b""]), _MESSAGE)
_MUTATED = st.builds(
    _mutate, st.one_of(st.sampled_from(_LINES), _MADE), st.lists(_EDIT, max_size=4)
)
_STUB = st.sampled_from(
    [
        b"Traceback (most recent call last):",
        b'  File "/models/bls/1/model.py", line 40, in execute',
        b"    raise RuntimeError('boom')",
        b"RuntimeError: boom",
        b"gluer progress 50%",
        b"",
    ]
)
_GLUED = st.builds(lambda a, b: a + b, _STUB, st.one_of(st.sampled_from(_LINES), _MADE))
_NEW_YEAR = st.builds(
    lambda jan, edits: b'W1231 23:59:59.999999 1 x.cc:1] "december"\n' + _mutate(jan, edits),
    st.sampled_from([ln.replace(b"I1122 ", b"I0101 ", 1) for ln in _LINES if ln[:1] == b"I"]),
    st.lists(_EDIT, max_size=2),
)
"""December, then a January line, maybe damaged: the one step that changes the year of
every later glog line, so the one place a damaged header must change nothing."""
_PIECE = st.one_of(
    st.sampled_from(_LINES), _MUTATED, _MADE, _GLUED, _STUB, _NEW_YEAR, st.binary(max_size=60)
)


@st.composite
def _log(draw: st.DrawFn) -> bytes:
    """Pieces joined with a newline or glued; the last one may lack its newline."""
    out = b""
    for piece in draw(st.lists(_PIECE, max_size=25)):
        out += piece
        if not piece.endswith(b"\n") and draw(st.integers(0, 3)):
            out += draw(st.sampled_from([b"\n", b"\r\n"]))
    return out


def _tail_lines(data: bytes) -> list[bytes]:
    """Lines as the tailer gets them: iterating a binary file splits after b"\\n" only."""
    return list(io.BytesIO(data))


def _splitlines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _held_back(data: bytes, split: Callable[[bytes], list[bytes]]) -> int:
    """Bytes that ``final=False`` leaves for the next call: a last piece without b"\\n".

    A piece, not the physical line: the front of two glued Triton lines ends at the quote
    before the second header, so it is complete even while the second is still in flight.
    """
    pieces = list(_unglued(split(data)))
    return len(pieces[-1]) if pieces and not pieces[-1].endswith(b"\n") else 0


def _check_records(records: list[Event], data: bytes, offset: int) -> None:
    last = offset
    for rec in records:
        off = _offset(rec)
        assert offset <= off < offset + max(len(data), 1), rec
        assert off >= last, "records out of file order"
        last = off
        for text in (getattr(rec, "text", ""), getattr(rec, "detail", "")):
            assert len(text) <= MAX_TEXT
        # at_ns past int64 (a year after 2262) is the store's to refuse: ints=False here
        assert_storable(rec, ints=False)


_NUMBER_QUIRK = re.compile(
    rb"actual version: (?!-?\d+,)"
    rb"|batch size: (?!\d+,)"
    rb"|timeout \(us\): (?!\d+(?:\\n|\"?[\r\n]*$))"
    rb"|, executing (?!\d+ requests\"?[\r\n]*$)"
    rb"| released (?!\d+ requests\"?[\r\n]*$)"
    rb"|shape: \[(?!(?:-?\d+(?:,-?\d+)*)?\]\"?[\r\n]*$)"
    rb"|loading: (?!.*:\d+\"?[\r\n]*$)"
    rb"|' version (?!\d+(?:: |\"?[\r\n]*$))"
    rb"| v(?=\S*: UNLOADING)(?!\d+: UNLOADING)"
)
"""A number in a message shape that is not plain ASCII digits where the shape puts one.

There the two parsers differ by design: the parser reads the
field with ``int()``, which also takes ``+1``, `` 2``, ``1_000`` and digits past int64 (the
golden table of ``tests/collectors/logs/test_log_parser_records.py`` pins that), while the regex
reference wants ``\\d+`` and the delimiter right after. A line with such a number is left
out of the comparison; every other line must give the same records."""


def _offset(rec: Event) -> int:
    return rec.offset if isinstance(rec, StubOutput) else rec.header.offset


def assert_same_as_reference(
    records: list[Event], lines: list[bytes], *, year: int, utc_offset_s: int = 0, offset: int = 0
) -> None:
    """``records`` (from ``parse_lines(lines, ...)`` with these keywords) equal the regex
    reference's."""
    # The reference reads one Triton line per call: two glued on one physical line are
    # split first by the parser's own policy helper, as parse_lines splits them.
    pieces = list(_unglued(lines))
    want = list(parse_lines_regex(pieces, year=year, utc_offset_s=utc_offset_s, offset=offset))
    quirky: list[tuple[int, int]] = []
    start = offset
    for piece in pieces:
        if _NUMBER_QUIRK.search(piece):
            quirky.append((start, start + len(piece)))
        start += len(piece)
    if quirky:

        def plain(recs: list[Event]) -> list[Event]:
            return [r for r in recs if not any(a <= _offset(r) < b for a, b in quirky)]

        records, want = plain(records), plain(want)
    if _cache_may_skip_a_year_step(b"".join(pieces)):
        return
    assert records == want


_GLOG_KEY = re.compile(rb"[IWEF]((\d\d)\d\d \d\d:\d\d:\d\d)\.")
_YEAR_STEP = re.compile(rb"\b12\b.*\b01\b")


def _cache_may_skip_a_year_step(data: bytes) -> bool:
    """A December-to-January step, and a glog second that comes twice.

    The parser's clock caches each second's base keyed without the year and updates its
    month only on a miss, so a second seen before may skip the year step the reference
    takes (``test_log_parser_records.py::test_timestamp_cache_clear`` pins that). The years
    then differ, and with them every later time, whether a 29 February exists and whether a
    year passes 9999: such input is not compared with the reference (the other checks still
    run). A single year step still is.
    """
    found = _GLOG_KEY.findall(data)
    months = b" ".join(month for _, month in found)
    return bool(_YEAR_STEP.search(months)) and len({k for k, _ in found}) < len(found)


def check_log(data: bytes, *, year: int = 2026, utc_offset_s: int = 0, offset: int = 0) -> None:
    """Every property this module asserts, for one input; also what regressions replay.

    Lines are cut both ways a caller cuts them: after b"\\n" only (the tailer iterating a
    binary file) and by ``bytes.splitlines`` (``parse_bytes``, which also cuts at a lone CR).
    """
    kw = {"year": year, "utc_offset_s": utc_offset_s, "offset": offset}
    for split in (_tail_lines, _splitlines):
        for final in (True, False):
            stats = ParseStats()
            records = list(parse_lines(split(data), final=final, stats=stats, **kw))
            assert stats.skipped["internal"] == 0, "a line was dropped by an exception"
            held = _held_back(data, split)
            assert stats.resume_offset == offset + len(data) - (0 if final else held)
            _check_records(records, data, offset)
            if final and len(data) <= _REFERENCE_LIMIT:
                assert_same_as_reference(records, split(data), **kw)


# ---------------------------------------------------------------------------- properties

_GLUED_YEAR_0 = b'junk 0000-11-22T03:25:00Z I 1 x.cc:1] "a"'
_SURROGATE_ID = (
    b'I1122 03:25:00.828602 4403 infer_request.cc:132] "[request id: a\\ud800] '
    b'Setting state from PENDING to EXECUTING"\n'
)


@fuzz_settings(400)
@given(_log())
@example(_GLUED_YEAR_0)
@example(_GLUED_YEAR_0 + b"\n")
@example(_SURROGATE_ID)
@example(
    b'I1122 03:25:00.917434 4403 infer_request.cc:132] "[request id: ] <id_unknown>] '
    b'Setting state from INITIALIZED to INITIALIZED"\n'
)
@example(b'E1122 03:25:00.000000 1 x.cc:1] "lone \\udc80 surrogate"\n')
@example(b'I1231 23:59:59.000000 1 x.cc:1] "a"\nI0101 00:00:00.000000 1 x.cc:1] "b"')
@example(
    b'W1231 23:59:59.000000 1 x.cc:1] "a"\nI0101 00:00:00.00:02.6 1 x.cc:1] "b"\n'
    b"I1122 03:25:00.874178 4403 python_be.cc:1310] model a, instance b, executing 1 requests\n"
)
@example(  # an ISO8601 second past 64 bits of nanoseconds, then the compiled scan again
    b'9999-12-31T23:59:59Z I 1 x.cc:1] "a"\n'
    b'9999-12-31T23:59:59Z I 1 infer_request.cc:132] "[request id: <id_unknown>] Setting state '
    b'from INITIALIZED to PENDING"\n' * 600
)
def test_mutated_logs(data: bytes) -> None:
    with keep_on_failure("logs", "mutated", data, "log"):
        check_log(data)


@fuzz_settings(100)
@given(
    _log(),
    st.integers(1, 9999),
    st.integers(-(2**40), 2**40),
    st.integers(0, 2**62),
)
@example(
    b'W1231 23:59:59.000000 1 x.cc:1] "dec"\nI0101 00:00:00.000000 1 python_be.cc:1] '
    b'"model a, instance b, executing 1 requests"\n',
    9999,
    0,
    0,
)
def test_any_year_offset_and_position(data: bytes, year: int, utc: int, offset: int) -> None:
    """The caller's arguments over their whole documented range; 9999 plus a year step
    leaves datetime's range, which must be a skipped line, not an exception."""
    with keep_on_failure("logs", "arguments", data, "log"):
        check_log(data, year=year, utc_offset_s=utc, offset=offset)


def test_text_lines_are_a_caller_error() -> None:
    """The one documented exception: ``str`` lines instead of ``bytes``."""
    with pytest.raises(TypeError, match="bytes"):
        list(parse_lines(["I1122 03:25:00.000000 1 x.cc:1] x\n"], year=2026))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="bytes"):
        list(parse_lines([b"ok\n", "tail without newline"], year=2026))  # type: ignore[list-item]


# ------------------------------------------------------------------------- 1 MB lines

_MB = 1 << 20
_HEAD = b"E1122 03:25:00.828602 4403 python_be.cc:1273] "


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(_HEAD + b'"' + b"x" * _MB + b'"\n', id="quoted-message"),
        pytest.param(_HEAD + b"\\u00e9" * (_MB // 6) + b"\n", id="escapes"),
        pytest.param(b"stub says " * (_MB // 10) + b"\n", id="stub-text"),
        pytest.param(b"] " * (_MB // 2) + b"\n", id="brackets"),
        pytest.param(b"\x00" * _MB + b"\n", id="nul"),
        pytest.param(b"\xff\xfe" * (_MB // 2) + b"\n", id="invalid-utf8"),
        pytest.param(b"x" * _MB + _SURROGATE_ID, id="stub-glued-to-header"),
        pytest.param((b'"' + _SURROGATE_ID[:-2] + b'"') * (_MB // 120) + b"\n", id="glued"),
        pytest.param(b"I1122 03:25:00.000000 " * (_MB // 22) + b"\n", id="stamps"),
        pytest.param(
            b'I1122 03:25:00.000000 1 infer_request.cc:1] "[request id: '
            + b"] prepared: , model: " * (_MB // 21)
            + b'"\n',
            id="request-id-brackets",
        ),
        pytest.param(
            b"I1122 03:25:00.000000 1 infer_request.cc:1] [request id: "
            + b"] Setting state from " * (_MB // 21)
            + b"\n",
            id="request-id-states",
        ),
    ],
)
def test_one_megabyte_lines(line: bytes) -> None:
    """A 1 MB line costs one bounded record, never a 1 MB string downstream."""
    data = _SURROGATE_ID + line + _SURROGATE_ID
    stats = ParseStats()
    records = parse_bytes(data, year=2026, stats=stats)
    assert stats.skipped["internal"] == 0
    assert stats.resume_offset == len(data)
    _check_records(records, data, 0)
    assert _offset(records[0]) == 0  # the neighbours survive
    assert _offset(records[-1]) == len(data) - len(_SURROGATE_ID)


@fuzz_settings(8, long_run_cap=300)
@given(st.binary(min_size=1, max_size=40), st.sampled_from([b"", b"\n", _SURROGATE_ID]))
def test_random_megabyte_lines(unit: bytes, tail: bytes) -> None:
    data = unit * (_MB // len(unit)) + tail
    with keep_on_failure("logs", "megabyte", data, "log"):
        stats = ParseStats()
        records = parse_bytes(data, year=2026, stats=stats)
        assert stats.skipped["internal"] == 0
        _check_records(records, data, 0)


# ------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("path", regression_files("logs"), ids=lambda p: p.name)
def test_regression(path: Path) -> None:
    """Each kept input; ``caller-year-N`` in its name is the ``year`` argument it needs."""
    year = re.search(r"caller-year-(\d+)-", path.name)
    check_log(path.read_bytes(), year=int(year.group(1)) if year else 2026)
