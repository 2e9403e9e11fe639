"""Fuzz the Triton trace-file parser and the rollover-file finder.

Inputs: trace files generated as Triton writes them (a header record and timestamp
records per id, children before parents, tensor records, ids and names with escapes and
non-ASCII) and then cut at every position, real recordings mutated character by
character, decoded recordings with random fields replaced, nesting at the decoder's
recursion limit, integers past int64. For each:

* strict parsing returns spans or raises ``TraceParseError``; lenient parsing never
  raises, and where strict parsing succeeds it gives the same spans and no problem;
* a file cut anywhere (a server killed mid-write, a file still being written) is reported
  as truncated, never as garbage, and keeps every record before the cut: the collector
  waits for a truncated file and would otherwise emit a half-read span for good;
* every span is storable: ids and timestamps fit SQLite's int64, texts encode as UTF-8.

Run longer: ``TRITON_OBS_FUZZ_EXAMPLES=20000 pytest -q tests/fuzz/test_fuzz_traces.py --timeout=0``
(``TRITON_OBS_FUZZ_KEEP=1`` keeps the input of a failure under ``regressions/traces/``).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from collectors.traces.files import rollover_index, trace_files
from collectors.traces.parser import (
    ParsedTraceFile,
    TraceParseError,
    parse_trace_file,
    parse_trace_file_lenient,
)
from observability.events import TraceSpan
from tests.fuzz._support import (
    FIXTURES,
    assert_storable,
    deep_json,
    fuzz_settings,
    keep_on_failure,
    mutated_json,
    regression_files,
)

_RECORDINGS = [p.read_text() for p in sorted((FIXTURES / "traces").glob("*/trace.json*"))]
_KEYS = ["id", "model_name", "model_version", "request_id", "parent_id", "timestamps", "name"]
_KEYS += ["ns", "activity", "tensor"]


# --------------------------------------------------------------------------- strategies

_TEXT = st.one_of(
    st.text(max_size=10),
    st.sampled_from(['a"b', "a\\b", "tr0.detector", "é", "\u2028", "a] b", "true", "null"]),
)
_NS = st.integers(0, 2**63 - 1)


@st.composite
def _trace_file(draw: st.DrawFn) -> str:
    """Records as Triton writes them: per id, a header then its timestamps, ids in any
    order, sometimes a tensor record; written compact or spaced like json.dumps."""
    records: list[dict[str, Any]] = []
    ids = draw(st.lists(st.integers(0, 2**63 - 1), min_size=0, max_size=6, unique=True))
    for trace_id in ids:
        header: dict[str, Any] = {"id": trace_id, "model_name": draw(_TEXT)}
        for key, value in (
            ("model_version", st.one_of(st.integers(-1, 10**6), _TEXT)),
            ("request_id", _TEXT),
            ("parent_id", st.one_of(st.none(), st.integers(0, 2**63 - 1))),
        ):
            if draw(st.booleans()):
                header[key] = draw(value)
        records.append(header)
        for _ in range(draw(st.integers(0, 4))):
            stamps = [{"name": draw(_TEXT), "ns": draw(_NS)}]
            records.append({"id": trace_id, "timestamps": stamps})
        if draw(st.integers(0, 5)) == 0:
            records.append({"id": trace_id, "activity": "TENSOR_QUEUE_INPUT", "tensor": {}})
    compact = draw(st.booleans())
    return json.dumps(
        records,
        separators=(",", ":") if compact else None,
        ensure_ascii=draw(st.booleans()),
        indent=None if compact else draw(st.sampled_from([None, 1])),
    )


_EDITS = st.sampled_from(
    ['"', "\\", "\\u", "{", "}", "[", "]", ",", ":", "1", "-", "e", "nul", "true", " ", "\x00"]
)


@st.composite
def _mutated_text(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_RECORDINGS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 2))
        if kind == 0:
            text = text[:at] + draw(_EDITS) + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
        else:
            edit = draw(_EDITS)
            text = text[:at] + edit + text[at + len(edit) :]
    return text


_DECODED = [json.loads(t) for t in _RECORDINGS]
_MUTATED_JSON = st.sampled_from(_DECODED).flatmap(lambda d: mutated_json(d, _KEYS)).map(json.dumps)


# ------------------------------------------------------------------------------ checks


def _check_spans(spans: tuple[TraceSpan, ...] | list[TraceSpan], source: str) -> None:
    for span in spans:
        assert span.source == source
        assert_storable(span)


def check_trace(text: str, source: str = "trace.json.0") -> ParsedTraceFile:
    """Every property this module asserts for one file; also what regressions replay."""
    try:
        strict: list[TraceSpan] | TraceParseError = parse_trace_file(text, source)
    except TraceParseError as err:
        assert source in str(err) and str(err)
        strict = err
    lenient = parse_trace_file_lenient(text, source)
    _check_spans(lenient.spans, source)
    assert all(isinstance(p, str) and p for p in lenient.problems)
    if isinstance(strict, list):
        _check_spans(strict, source)
        assert lenient.spans == tuple(strict)
        assert lenient.problems == () and not lenient.truncated
    elif "nested too deeply" not in str(strict):  # strict decodes the array, one level more
        assert lenient.problems, "strict parsing failed, lenient parsing must say why"
    if lenient.truncated:
        assert lenient.maybe_incomplete is None or isinstance(lenient.maybe_incomplete, int)
    else:
        assert lenient.maybe_incomplete is None
    return lenient


def check_cuts(text: str, cuts: Iterable[int] | None = None) -> None:
    """Prefixes of a complete file (all of them, or those at ``cuts`` modulo its length)
    read as truncated, with every record before the cut."""
    full = {s.trace_id: s for s in parse_trace_file(text, "f")}
    end = len(text.rstrip())
    for cut in range(end) if cuts is None else sorted({c % end for c in cuts}):
        parsed = check_trace(text[:cut], "f")
        assert parsed.truncated, (cut, parsed.problems)
        assert len(parsed.problems) == 1 and "truncated" in parsed.problems[0], parsed.problems
        for span in parsed.spans:
            if span.trace_id != parsed.maybe_incomplete:
                assert span == full[span.trace_id], cut


# ---------------------------------------------------------------------------- properties


_CUTS = st.lists(st.integers(0, 10**6), min_size=1, max_size=40)


@fuzz_settings(100)
@given(_trace_file(), _CUTS)
@example('[{"id":1,"model_name":"m","parent_id":null}]', [0])
@example('[{"id":1,"model_name":"a\\\\b","request_id":"\\u00e9"}]', [0])
def test_any_cut_of_a_generated_file(text: str, cuts: list[int]) -> None:
    """A file and its cuts: every cut of a small file, the drawn ones of a bigger one."""
    with keep_on_failure("traces", "cut", text.encode(), "json"):
        check_trace(text)
        check_cuts(text, None if len(text) <= 300 else cuts)


@fuzz_settings(300)
@given(st.one_of(_mutated_text(), _MUTATED_JSON, st.text(max_size=200)))
@example('[]{"id":4,"model_name":"detector"}]')
@example('[{"id":1,"model_name":"m"},{"id":1,"timestamps":[{"name":"X","ns":1e3}]}]')
@example("[" * 100_000)
@example("[" + '{"a":[' * 50_000)
@example('[{"id":' + "1" * 5000 + "}]")
@example('[{"id":' + "9" * 30 + ',"model_name":"m"}]')
@example('[{"id":1,"timestamps":[{"name":"X","ns":' + "9" * 20 + "}]}]")
@example('[{"id":1,"model_name":"\\ud800","request_id":"\\udfff"}]')
def test_any_file(text: str) -> None:
    with keep_on_failure("traces", "any", text.encode("utf-8", "surrogatepass"), "json"):
        check_trace(text)


@fuzz_settings(150)
@given(st.sampled_from(_RECORDINGS), st.integers(0, 10**6))
def test_any_cut_of_a_recording(text: str, cut: int) -> None:
    """The existing test cuts one recording every 7 characters; here any character of
    every recording (a long run reaches them all)."""
    full = {s.trace_id: s for s in parse_trace_file(text, "f")}
    part = text[: cut % len(text.rstrip())]
    with keep_on_failure("traces", "cut-recording", part.encode(), "json"):
        parsed = check_trace(part, "f")
        assert parsed.truncated and len(parsed.problems) == 1, parsed.problems
        for span in parsed.spans:
            if span.trace_id != parsed.maybe_incomplete:
                assert span == full[span.trace_id]


def _decodable_depth() -> int:
    """The deepest array json.loads decodes from here: it depends on the stack in use."""
    low, high = 1, 10_000
    while low < high:
        mid = (low + high + 1) // 2
        try:
            json.loads("[" * mid + "]" * mid)
        except RecursionError:
            high = mid - 1
        else:
            low = mid
    return low


@pytest.mark.parametrize(
    "template",
    [
        "[%s]",
        '[{"id":1,"model_name":%s}]',
        '[{"id":1,"timestamps":%s}]',
        '[{"id":1,"timestamps":[%s]}]',
        '[{"id":%s}]',
        '[{"id":1,"model_name":"m","model_version":%s}]',
    ],
)
def test_nesting_at_every_depth_around_the_limit(template: str) -> None:
    """Complete and cut: a cut deep array is checked by closing it, which nests as deep."""
    limit = _decodable_depth()
    for depth in range(limit - 30, limit + 3):
        text = template % ("[" * depth + "]" * depth)
        with keep_on_failure("traces", "nesting", text.encode(), "json"):
            check_trace(text)
            check_trace(text[: len(text) // 2])
    check_trace(deep_json(limit))


# ---------------------------------------------------------------------------- files.py

_NAME = st.text(string.ascii_letters + string.digits + "._-٣", min_size=1, max_size=12)


@fuzz_settings(200)
@given(_NAME, st.one_of(_NAME, st.integers(0, 10**30).map(str)), st.booleans())
def test_rollover_index(base: str, suffix: str, dotted: bool) -> None:
    name = f"{base}.{suffix}" if dotted else suffix
    index = rollover_index(base, name)
    if dotted and suffix.isascii() and suffix.isdigit():
        assert index == int(suffix)
    if index is not None:
        digits = name[len(base) + 1 :]
        assert name == f"{base}.{digits}" and digits.isascii() and int(digits) == index


_ROLLOVER = re.compile(r"trace\.json\.[0-9]+")


@fuzz_settings(40)
@given(st.lists(st.one_of(_NAME, st.integers(0, 10**6).map(lambda n: f"trace.json.{n}"))))
def test_trace_files_in_a_directory_of_anything(tmp_path_factory: Any, names: list[str]) -> None:
    """Rollovers in numeric order, then the base file; directories and other names never."""
    folder = tmp_path_factory.mktemp("traces")
    (folder / "trace.json.7.tmp").mkdir()
    (folder / "trace.json.8").mkdir()  # a directory with a rollover's name is not one
    names = [n for n in names if not (folder / n).exists() and n not in (".", "..")]
    for name in names:
        (folder / name).write_text("[]")
    found = trace_files(folder / "trace.json")
    assert all(p.parent == folder and p.is_file() for p in found)
    rollovers = [p.name for p in found if p.name != "trace.json"]
    assert set(rollovers) == {n for n in names if _ROLLOVER.fullmatch(n)}
    assert [int(n.rsplit(".", 1)[1]) for n in rollovers] == sorted(
        int(n.rsplit(".", 1)[1]) for n in rollovers
    )
    assert [p.name for p in found][len(rollovers) :] == (
        ["trace.json"] if "trace.json" in names else []
    )
    assert trace_files(folder / "missing" / "trace.json") == []


# ------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("path", regression_files("traces"), ids=lambda p: p.name)
def test_regression(path: Path) -> None:
    """Each kept input; a ``cut-`` file is also checked at every cut."""
    text = path.read_bytes().decode("utf-8", "surrogatepass")
    check_trace(text)
    if path.name.startswith("cut-"):
        check_cuts(text)
