"""The compiled hot path (``collectors/logs/_hotpath.c``) gives exactly the Python parser's
records and counts.

Every recorded log in the repository (real Triton 2.51 and older-format recordings: the demo's
``tests/fixtures/recordings``, the foreign corpus ``tests/fixtures/foreign``, the parser fixtures
``tests/fixtures/logs``) is parsed both ways, in windows at its start, middle and end; then
mutated real lines, and the lines the C code must hand back to Python (signed numbers, escaped
ids, glued lines, a cut line, unknown files, a full id table).
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.logs import parser
from collectors.logs.parser import Event, ParseStats, parse_lines
from tests.hypothesis_profiles import examples

REPO = Path(__file__).resolve().parents[3]
_WINDOW = 300


def _parse(
    lines: list[bytes], compiled: bool, run: int | None = None, **kw: object
) -> tuple[list[Event], ParseStats]:
    """The records and counts of ``lines``, by the compiled path or the Python one alone,
    in runs of ``run`` lines (the parser's own by default)."""
    saved = parser._SCAN, parser._RUN
    parser._SCAN = saved[0] if compiled else None
    parser._RUN = run or saved[1]
    try:
        stats = ParseStats()
        records = list(parse_lines(lines, year=2026, stats=stats, **kw))  # type: ignore[arg-type]
    finally:
        parser._SCAN, parser._RUN = saved
    return records, stats


def _same_both_ways(lines: list[bytes], **kw: object) -> list[Event]:
    ours, our_stats = _parse(lines, True, **kw)
    theirs, their_stats = _parse(lines, False, **kw)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        assert a == b, f"record {i}: compiled {a!r}, Python {b!r}"
    assert len(ours) == len(theirs)
    assert our_stats == their_stats
    return ours


def test_the_compiled_path_is_built() -> None:
    """Production runs the C path; a build without it (no compiler at install time) parses
    at a quarter of the speed, so CI must not pass on one unnoticed."""
    if os.environ.get("TRITON_OBS_PURE_PARSER") == "1":
        pytest.skip("TRITON_OBS_PURE_PARSER=1 asks for the Python path")
    assert parser._SCAN is not None, (
        "collectors/logs/_hotpath.c was not built: install a C compiler and the Python headers "
        "(apt-get install gcc python3-dev), then pip install -e . again"
    )


def _sources() -> dict[str, Path]:
    """Every recorded log by name: a foreign recording's folder name (the quick suite sweeps
    a sample of those, tests/foreign/sample.py), or the path of any other recording or log."""
    logs = sorted((REPO / "tests/fixtures/logs").glob("*.log"))
    bundles = sorted((REPO / "tests/fixtures").glob("*/*/bundle.tar.gz"))
    foreign = REPO / "tests/fixtures/foreign"
    return {
        p.parent.name if p.parent.parent == foreign else p.relative_to(REPO).as_posix(): p
        for p in logs + bundles
    }


_SOURCES = _sources()


def _logs(source: Path) -> Iterator[tuple[str, bytes]]:
    if source.suffix == ".log":
        yield source.name, source.read_bytes()
        return
    with tarfile.open(source) as tf:
        for member in tf:  # a bundle's log comes after meta.json: the rest is not unpacked
            if member.isfile() and member.name.endswith(".log"):
                data = tf.extractfile(member).read()  # type: ignore[union-attr]
                yield f"{source.parent.name}/{member.name}", data
                return


def _windows(data: bytes) -> Iterator[tuple[int, list[bytes]]]:
    """(byte offset, lines) of three windows: the load, the middle of serving, the end."""
    lines = data.splitlines(keepends=True)
    starts = sorted({0, max(0, len(lines) // 2 - _WINDOW // 2), max(0, len(lines) - _WINDOW)})
    for start in starts:
        yield sum(map(len, lines[:start])), lines[start : start + _WINDOW]


def test_every_recorded_log_is_read() -> None:
    assert len({p for p in _SOURCES.values() if "foreign" in p.parts}) > 300
    assert len(_SOURCES) > len(list((REPO / "tests/fixtures/foreign").glob("*/bundle.tar.gz")))


@pytest.mark.parametrize("name", sorted(_SOURCES))
def test_every_recorded_log_parses_the_same_both_ways(name: str) -> None:
    logs = list(_logs(_SOURCES[name]))
    assert logs, f"no log in {_SOURCES[name]}"  # an empty one (a capture of a quiet log) counts
    for log, data in logs:
        for offset, window in _windows(data):
            try:
                _same_both_ways(window, offset=offset)
            except AssertionError as err:
                raise AssertionError(f"{log} at byte {offset}: {err}") from None


def _real_lines() -> list[bytes]:
    data = (REPO / "tests/fixtures/logs").glob("*.log")
    return [line for p in sorted(data) for line in p.read_bytes().splitlines(keepends=True)]


_REAL = _real_lines()
_BYTES = st.sampled_from(
    [b"", b"\x00", b"\xff", b"\xc3", b"\\", b'"', b"] ", b",", b" ", b"-", b"+", b"_", b"0",
     b"9", b"\n", b"\r", b":", b".cc:", b"<id_unknown>", b"99999999999999999999"]
)  # fmt: skip


@given(
    picks=st.lists(st.integers(0, len(_REAL) - 1), min_size=1, max_size=40),
    cuts=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 3), _BYTES), max_size=8),
)
@settings(max_examples=examples(300), deadline=None)
def test_mutated_real_lines_parse_the_same_both_ways(
    picks: list[int], cuts: list[tuple[int, int, bytes]]
) -> None:
    lines = [_REAL[i] for i in picks]
    for at, drop, put in cuts:
        k = at % len(lines)
        line = lines[k]
        j = at % (len(line) + 1)
        lines[k] = line[:j] + put + line[j + drop :]
    _same_both_ways(lines)
    _same_both_ways(lines, final=False)


_HEAD = b"I1122 03:20:14.655239 2106 "


def _line(src: str, msg: str, head: bytes = _HEAD) -> bytes:
    return head + src.encode() + b'] "' + msg.encode() + b'"\n'


_HANDED_BACK = [
    _line("python_be.cc:1395", "model m, instance m_0, executing +3 requests"),
    _line("python_be.cc:1395", "model m, instance m_0, executing 1_0 requests"),
    _line("python_be.cc:1395", "model m, instance m_0, executing 99999999999999999999 requests"),
    _line("infer_request.cc:131", "[request id: a\\u00e9] Setting state from PENDING to EXECUTING"),
    _line("infer_request.cc:131", "[request id: x] y] Setting state from PENDING to EXECUTING"),
    _line("infer_request.cc:131", "[request id: r] Setting state from A B"),
    _line(
        "infer_request.cc:1034",
        "[request id: r] prepared: [0x1] request id: r, model: m, requested model version: -1, "
        "actual version: -1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, "
        "timeout (us): 0",
    ),
    _line("infer_response.cc:174", "add response output: output: OUT, type: FP32, shape: [-1,3]"),
    _line("infer_response.cc:174", "add response output: output: OUT, type: FP32, shape: [1, 3]"),
    _line("infer_response.cc:174", "add response output: output: OUT, type: FP32, shape: []"),
    _line("python_be.cc:1395", 'model configuration:\\n{\\"name\\": \\"m\\"}'),
    _line("pb_stub.cc:1", "Stub process 'm_0' is not healthy"),
    _line("unknown_file.cc:7", "anything at all"),
    _line("http_server.cc:4694", "HTTP request: 2 /v2/models/m/infer")[:-1],  # cut: no newline
    _line("http_server.cc:4694", "HTTP request: 2 /v2/models/m/infer")[:-1] + b"\r\n",
    _line("http_server.cc:4694", "HTTP request: 99 /v2/models/\xe9/infer"),
    _line("grpc_server.cc:1", "Process for ModelInferHandler, rpc_ok=1, 7 step START"),
    _line(
        "stream_infer_handler.cc:1",
        "ModelStreamInferHandler::StreamInferComplete, context 0, 0 step ISSUED, callback index -1,"
        " flags 1, response is nullptr 0",
    ),
    _line("infer_handler.h:1", "Cancellation notification received for ModelInferHandler, rpc_ok=1")
    + _line("infer_handler.h:2", "Cancellation notification received for X, rpc_ok=1"),
    _line("infer_handler.cc:1", "New request handler for ModelInferHandler, 0")
    + _line("infer_handler.cc:2", "New request handler for ModelInferHandler, 1")[:-1],
    _line("python_be.cc:1395", "model m, instance m_0, executing 1 requests", b"W" + _HEAD[1:]),
    _line("server.cc:1", "Model 'm' (version 1) has 2 in-flight inferences"),
    b"2026-11-22T03:20:14Z I 2106 python_be.cc:1395] "
    b'"model m, instance m_0, executing 1 requests"\n',
    b"I9922 03:20:14.655239 2106 python_be.cc:1395] "
    b'"model m, instance m_0, executing 1 requests"\n',
    b"stub text glued " + _line("python_be.cc:1395", "model m, instance m_0, executing 1 requests"),
    b"\n",
    b"",
    # warnings and errors no handler reads: ErrorLine, StubHealth
    _line("model.py:115", "nz_router: request #100: embed cache is cold", b"W" + _HEAD[1:]),
    _line("pinned_memory_manager.cc:1", "failed to allocate pinned memory", b"E" + _HEAD[1:]),
    _line("model.py:1", 'an escaped \\"quote\\" and \\u00e9', b"E" + _HEAD[1:]),
    _line("pb_stub.cc:1", "Stub process 'm_0' is not healthy", b"E" + _HEAD[1:]),
    _line("python_be.cc:1", " Non-graceful termination detected.", b"E" + _HEAD[1:]),
    _line("model.py:1", "x" * 17_000, b"W" + _HEAD[1:]),
    _line("infer_request.cc:131", "[request id: r] Setting state from A to B", b"W" + _HEAD[1:]),
    # headerless: prints, tracebacks, bodies, blank lines (read in C unless unsure)
    b"[nz_embed] got batch of 1\n",
    b"2026-11-26 02:46:49,321 INFO nz_embed: embedding 2 request(s)\n",
    b"2026-11-26T02:46:49Z nothing like a header\n",
    b"Traceback (most recent call last):\n",
    b'  File "/models/m/1/model.py", line 3, in execute\n',
    b"Task exception was never retrieved\n",
    b"Exception in callback _boom()\n",
    b"Exception ignored in: <function _boom at 0x7f>\n",
    b"E1122 03:20:14 torn header\n",
    b"KeyError: 'x'\r\n",
    b"  \t \r\n",
    b"text with a NUL \x00 inside\n",
    b"text \xff\xfe not UTF-8\n",
    b'print then a glued header I1122 03:20:14.655239 2106 python_be.cc:1395] "x"\n',
    b"a print naming file.cc:12] and more\n",
    b"x" * 20_000 + b"\n",
]


@pytest.mark.parametrize("line", _HANDED_BACK, ids=range(len(_HANDED_BACK)))
def test_a_line_the_c_code_is_unsure_of_reads_as_python_reads_it(line: bytes) -> None:
    ok = _line("python_be.cc:1395", "model m, instance m_0, executing 2 requests")
    body = _line("server.cc:1", "")  # an empty message: the headerless lines after it are its
    older = _HEAD + b"model.py:1] unquoted, as before 24.06\n"  # its body runs to a header
    for lines in (
        [line],
        [ok, line, ok],
        [line, line, ok],
        [body, line, line, ok],
        [older, line, line, ok],
    ):
        _same_both_ways(lines)
        _same_both_ways(lines, final=False)
        _same_both_ways(lines, start_ns=2**70)  # a time no C integer holds


def test_a_busy_log_past_the_id_table_reads_the_same() -> None:
    """Past 4,096 request ids the id table is cleared, by either path, without a trace."""
    lines = [
        _line("infer_request.cc:131", f"[request id: r{i % 5000}] Setting state from A to B")
        for i in range(12_000)
    ]
    records = _same_both_ways(lines)
    assert len(records) == 12_000
    assert {r.request_id for r in records} == {f"r{i}" for i in range(5000)}  # type: ignore[attr-defined]


def test_records_are_the_parsers_own_types_and_survive_pickling() -> None:
    import pickle

    window = _REAL[:2000]
    ours, _ = _parse(window, True)
    assert ours and pickle.loads(pickle.dumps(ours)) == ours
    assert {type(r).__module__ for r in ours} == {"observability.events"}


@pytest.mark.parametrize("run", [1, 2, 7])
def test_the_runs_handed_to_the_scan_do_not_change_what_is_read(run: int) -> None:
    """Lines are taken from the input ``_RUN`` at a time; a cut line (no newline: a CR-split
    line, a write in flight) held across the end of a run is read once, at its offset."""
    lines = _REAL[:300] + [b"\r", b"\x1c\r", b"cut", b"\x1c\r"] * 5 + _REAL[300:400] + [b"end"]
    for final in (True, False):
        whole = _parse(lines, False, run=len(lines), final=final)  # Python, every line at once
        for compiled in (True, False):
            assert _parse(lines, compiled, run=run, final=final) == whole
    assert whole[1].resume_offset == sum(map(len, lines)) - len(b"end")


@pytest.mark.parametrize("name", ["nz_rank_hang_iso", "ocr_cycle_deadlock_iso"])
def test_an_iso8601_log_is_the_compiled_scans_and_reads_as_python_reads_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--log-format ISO8601`` (whole seconds, each second's records spread 1 µs apart across
    calls of the scan): the whole log, in runs of the parser's size and of 7 lines, gives the
    Python path's records and counts, and the scan reads nearly every line of it."""
    (_, data), *_ = _logs(_SOURCES[name])
    lines = data.splitlines(keepends=True)
    assert lines[0][10:11] == b"T" and lines[0][19:20] == b"Z", "an ISO8601 log"
    for run in (None, 7):
        _same_both_ways(lines, run=run)
    if parser._SCAN is None:
        pytest.skip("not compiled (or TRITON_OBS_PURE_PARSER=1): Python reads every line")
    by_python = 0
    one = parser._one

    def counted(*args: object) -> list[Event]:
        nonlocal by_python
        by_python += 1
        return one(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(parser, "_one", counted)
    _parse(lines, True)
    assert by_python < len(lines) // 20, f"Python read {by_python} of {len(lines)} lines"


_PIECE = st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\r\n", b"\x85", b"\x0b"]), max_size=30)


def test_the_readers_split_with_the_compiled_splitter() -> None:
    from collectors.tail import reader

    if os.environ.get("TRITON_OBS_PURE_PARSER") == "1":
        pytest.skip("TRITON_OBS_PURE_PARSER=1 asks for the Python path")
    assert reader.whole_lines is not reader._whole_lines


@settings(max_examples=examples(2000), deadline=None)
@given(pieces=_PIECE, limit=st.integers(1, 12), cut=st.integers(0, 30))
def test_split_lines_is_its_reference(pieces: list[bytes], limit: int, cut: int) -> None:
    """The compiled ``split_lines`` cuts a read as ``reader._whole_lines`` does: at ``\\n``
    alone (never at a lone ``\\r`` or the other breaks ``splitlines`` knows), None where a
    line is past ``limit``, whatever follows the last ``\\n`` left out."""
    from collectors.logs.hotpath import line_splitter
    from collectors.tail.reader import _whole_lines

    split = line_splitter()
    if split is None:
        pytest.skip("the extension is not built")
    data = b"".join(pieces) + b"tail"[: cut % 5]
    end = data.rfind(b"\n") + 1
    assert split(data, end, limit) == _whole_lines(data, end, limit)
    with pytest.raises(ValueError):
        split(data, len(data) + 1, limit)


@settings(max_examples=examples(1000), deadline=None)
@given(pieces=_PIECE, limit=st.integers(1, 12), cut=st.integers(0, 30), at=st.integers(-40, 40))
def test_a_line_view_holds_the_split_lines(
    pieces: list[bytes], limit: int, cut: int, at: int
) -> None:
    """``line_view`` (a read's lines where they lie, what a bundle's ingest scans) holds the
    lines ``split_lines`` cuts: by length, index (from either end), slice and iteration; None
    where they are None."""
    from collectors.logs.hotpath import line_splitter, line_viewer

    split, view = line_splitter(), line_viewer()
    if split is None or view is None:
        pytest.skip("the extension is not built")
    data = b"".join(pieces) + b"tail"[: cut % 5]
    end = data.rfind(b"\n") + 1
    lines, viewed = split(data, end, limit), view(data, end, limit)
    if lines is None:
        assert viewed is None
        return
    assert viewed is not None
    assert len(viewed) == len(lines) and list(viewed) == lines
    assert viewed[at : at + 3] == lines[at : at + 3] and viewed[::-2] == lines[::-2]
    if -len(lines) <= at < len(lines):
        assert viewed[at] == lines[at]
    else:
        with pytest.raises(IndexError):
            viewed[at]
    with pytest.raises(ValueError):
        view(data, len(data) + 1, limit)


@pytest.mark.parametrize("name", sorted(_SOURCES)[:: max(1, len(_SOURCES) // 40)])
def test_a_line_view_scans_as_its_lines(name: str) -> None:
    """The scan reads a view of a read as it reads the read's lines: the same records and
    counts, handing back the same lines (a sample of the recorded logs)."""
    from collectors.logs.hotpath import line_viewer

    view = line_viewer()
    if view is None or parser._SCAN is None:
        pytest.skip("the extension is not built")
    for _log, data in _logs(_SOURCES[name]):
        end = data.rfind(b"\n") + 1
        viewed = view(data, end, end or 1)
        assert viewed is not None
        listed = list(viewed)
        runs = [listed[i : i + 4096] for i in range(0, len(listed), 4096)]
        views = [view(b"".join(run), sum(map(len, run)), end or 1) for run in runs]
        ours, their = ParseStats(), ParseStats()
        by_view = [e for run in parser.parse_runs(views, year=2026, stats=ours) for e in run]
        by_list = [e for run in parser.parse_runs(runs, year=2026, stats=their) for e in run]
        assert by_view == by_list
        assert ours == their


def test_a_scan_begun_inside_another_reads_the_same() -> None:
    """The compiled scan remembers its dict lookups for a call (``memo_get``). A collection
    run by one of its allocations may finalize an object whose ``__del__`` parses a log: that
    inner scan must neither read nor fill the outer one's memo, whose entries say nothing of
    the tables they came from (here the inner parse's year is another, so are its clocks).
    With the collector run at every allocation and a finalizer always pending, inner parses
    begin inside the outer scan, and every parse gives the Python path's records."""
    import gc

    real = parser._SCAN
    if real is None:
        pytest.skip("the extension is not built")
    name = next(n for n in sorted(_SOURCES) if n.startswith("tests/fixtures/recordings/"))
    data = next(_logs(_SOURCES[name]))[1]
    _, lines = list(_windows(data))[1]  # serving: lines the compiled scan reads
    expected = _parse(lines, False)[0]
    parser._SCAN = None
    try:
        expected_inner = list(parse_lines(lines, year=2025))
    finally:
        parser._SCAN = real
    assert expected_inner != expected
    depth = [0]
    nested: list[list[Event]] = []

    def scan(*args: object) -> object:
        depth[0] += 1
        try:
            return real(*args)
        finally:
            depth[0] -= 1

    class Parses:
        def __init__(self) -> None:
            self.me = self  # a cycle: only a collection frees it

        def __del__(self) -> None:
            if len(nested) < 5:
                Parses()  # the next one, pending for the next collection
                if depth[0]:
                    nested.append(list(parse_lines(lines, year=2025)))

    threshold, was_enabled = gc.get_threshold(), gc.isenabled()
    parser._SCAN = scan
    gc.enable()
    gc.set_threshold(1, 1, 1)
    try:
        Parses()
        outer = list(parse_lines(lines, year=2026))
    finally:
        gc.set_threshold(*threshold)
        if not was_enabled:
            gc.disable()
        parser._SCAN = real
    assert outer == expected
    assert nested, "no parse began inside a scan"
    assert all(records == expected_inner for records in nested)
