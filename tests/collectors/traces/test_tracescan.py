"""The compiled trace scan (``collectors/traces/_tracescan.c``) against the Python path, its
reference: on every trace file of every recorded bundle (real Triton 2.51 recordings: the
demo's four and the foreign corpus, which the quick suite samples) and on hypothesis' files,
which vary what Triton writes (key order, whitespace, escapes, floats, nulls, ids past 64 bits,
tensor records, unknown keys, files cut short). The scan either gives what the Python path
gives, or hands the file back (None) and the Python path reads it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.traces import parser
from collectors.traces.parser import (
    TraceParseError,
    parse_trace_file,
    parse_trace_file_lenient,
)
from tests.bundles import BUNDLES, members
from tests.hypothesis_profiles import examples

_built = pytest.mark.skipif(parser._SCAN is None, reason="the compiled scan is not built")


def test_the_compiled_scan_is_built() -> None:
    """Production runs the C path; CI must not pass on a build without it unnoticed."""
    if os.environ.get("TRITON_OBS_PURE_PARSER") == "1":
        pytest.skip("TRITON_OBS_PURE_PARSER=1 asks for the Python path")
    assert parser._SCAN is not None, (
        "collectors/traces/_tracescan.c was not built: install a C compiler and the Python "
        "headers (apt-get install gcc python3-dev), then pip install -e . again"
    )


@contextmanager
def _python_path() -> Iterator[None]:
    saved, parser._SCAN = parser._SCAN, None
    try:
        yield
    finally:
        parser._SCAN = saved


def _lenient(text: str) -> tuple[Any, ...]:
    r = parse_trace_file_lenient(text, "t")
    return r.spans, r.truncated, r.skipped_records, r.problems, r.maybe_incomplete


def _strict(text: str) -> object:
    try:
        return parse_trace_file(text, "t")
    except TraceParseError as err:
        return str(err)


def _same(text: str) -> bool:
    """Both paths agree on ``text``; True when the scan read it (did not hand it back)."""
    with _python_path():
        lenient, strict = _lenient(text), _strict(text)
    assert _lenient(text) == lenient
    assert _strict(text) == strict
    assert parser._SCAN is not None
    return parser._SCAN(text, parser._stage_named) is not None


@_built
@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_every_recorded_trace_file_gives_the_same_spans(name: str) -> None:
    files = members(BUNDLES[name], lambda member: Path(member).name.startswith("trace.json"))
    read = [_same(data.decode("utf-8", errors="replace")) for data in files]
    # The whole files are the scan's; only a file cut short by the recording is handed back.
    assert sum(read) >= len(read) - 1, f"{len(read) - sum(read)} of {len(read)} handed back"


@_built
def test_what_is_read_and_what_is_handed_back() -> None:
    header = '{"id":1,"model_name":"m","model_version":1,"request_id":"r","parent_id":null}'
    stamp = '{"id":1,"timestamps":[{"name":"QUEUE_START","ns":5},{"name":"x y","ns":0}]}'
    read = [
        f"[{header},{stamp}]",
        f" [ {header} , {stamp} ]\n",
        "[]",
        '[{"timestamps":[],"id":-9223372036854775808}]',  # keys in any order, the lowest id
        '[{"id":1,"model_name":"m","model_name":"n"}]',  # a key twice: the last one, as json
        '[{"id":2,"model_name":"é","request_id":7,"model_version":"v"}]',
        '[{"id":3,"timestamps":[{"ns":1,"name":"queue start"}]}]',  # an older release's name
        # a second header sets all four of its fields again, an absent one to its default
        '[{"id":1,"model_name":"m","model_version":2,"parent_id":4,"request_id":"r"},'
        '{"id":1,"timestamps":[{"name":"A","ns":3}]},{"id":1,"model_name":"n"}]',
    ]
    handed_back = [
        "",
        "[",
        f"[{header},{stamp}",  # cut short
        f"[{header}] x",
        '[{"id":1,"model_name":"m\\u00e9"}]',  # an escape
        '[{"id":1.0,"model_name":"m"}]',
        '[{"id":9223372036854775808,"model_name":"m"}]',
        '[{"id":01,"model_name":"m"}]',
        '[{"id":1,"model_name":"m","model_version":true}]',
        '[{"id":1,"model_name":"m","extra":1}]',
        '[{"id":1,"activity":"TENSOR_QUEUE_INPUT","tensor":{}}]',
        '[{"id":1}]',
        '[{"id":1,"timestamps":[{"name":"A"}]}]',
        '[{"id":1,"timestamps":[{"name":"A","ns":1,"other":2}]}]',
        "[{},]",
        "\ufeff[]",
        '[{"id":1,"model_name":"m\ud800"}]',  # a lone surrogate in the text itself
    ]
    assert all(_same(text) for text in read)
    assert not any(_same(text) for text in handed_back)
    (span,) = parse_trace_file(read[1], "t")
    assert (span.model, span.version, span.request_id, span.parent_id) == ("m", "1", "r", None)
    assert span.timestamps == (("QUEUE_START", 5),)  # a zero is a stage never reached
    assert parse_trace_file(read[6], "t")[0].timestamps == (("QUEUE_START", 1),)
    (again,) = parse_trace_file(read[7], "t")
    assert (again.model, again.version, again.request_id, again.parent_id) == ("n", "", "", None)
    assert again.timestamps == (("A", 3),)


_NAMES = st.sampled_from(["REQUEST_START", "QUEUE_START", "compute start", "HTTP_SEND_START"])
_INTS = st.one_of(
    st.integers(-3, 5), st.integers(-(2**64), 2**64), st.just(2**63 - 1), st.just(-(2**63))
)
_ODD = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=3), st.just([])
)


def _stamp() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": st.one_of(_NAMES, st.text(max_size=4)), "ns": st.one_of(_INTS, _ODD)},
        optional={"extra": st.integers()},
    )


_RECORD = st.one_of(
    st.fixed_dictionaries(
        {"id": st.integers(1, 2), "timestamps": st.lists(_stamp(), max_size=3)},
    ),
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.integers(1, 2), _INTS, _ODD),
            "model_name": st.one_of(st.text(max_size=4), _ODD),
        },
        optional={
            "model_version": st.one_of(_INTS, st.text(max_size=3), _ODD),
            "request_id": st.one_of(st.text(max_size=3), _INTS, _ODD),
            "parent_id": st.one_of(st.none(), _INTS, _ODD),
            "timestamps": st.lists(_stamp(), max_size=2),
            "activity": st.just("TENSOR_QUEUE_INPUT"),
        },
    ),
)  # fmt: skip


@_built
@settings(max_examples=examples(2000), deadline=None)
@given(
    records=st.lists(_RECORD, max_size=6),
    spacing=st.sampled_from([None, 1, 0]),
    cut=st.one_of(st.none(), st.integers(0, 400)),
    reorder=st.booleans(),
    ascii_only=st.booleans(),
)
def test_any_trace_file_gives_the_same_spans(
    records: list[dict[str, Any]], spacing: int | None, cut: int | None, reorder: bool,
    ascii_only: bool,
) -> None:  # fmt: skip
    if reorder:
        records = [dict(reversed(r.items())) for r in records]
    separators = (",", ":") if spacing is None else (", ", ": ")
    text = json.dumps(records, indent=spacing, separators=separators, ensure_ascii=ascii_only)
    _same(text if cut is None else text[:cut])
