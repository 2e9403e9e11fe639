"""Fuzz the ``/v2/models/stats`` parser with any body, as text, bytes or a decoded dict.

Inputs: real Triton answers with random fields replaced, removed or added; any JSON
value; bytes that are not JSON or not UTF-8; nesting at the decoder's recursion limit;
integers and digit strings past what ``int()`` converts. For each:

* strict parsing returns ``ModelStats`` or raises ``StatsParseError``, nothing else;
* lenient parsing raises only where strict does for the same reason (the body is not
  stats at all), otherwise keeps exactly the entries strict parsing accepts and names
  every other one in a problem; one bad entry never costs the others;
* every record is storable: counts are non-negative integers, texts encode as UTF-8.

Run longer: ``TRITON_OBS_FUZZ_EXAMPLES=20000 pytest -q tests/fuzz/test_fuzz_stats.py --timeout=0``
(``TRITON_OBS_FUZZ_KEEP=1`` keeps the input of a failure under ``regressions/stats/``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from collectors.stats.parser import (
    ParsedStats,
    StatsParseError,
    parse_model_stats,
    parse_model_stats_lenient,
)
from observability.events import BatchStats, ModelStats
from tests.fuzz._support import (
    FIXTURES,
    JSON,
    assert_storable,
    deep_json,
    fuzz_settings,
    keep_on_failure,
    mutated_json,
    regression_files,
)

_ANSWERS = [json.loads(p.read_bytes()) for p in sorted((FIXTURES / "stats").glob("*.json"))]
_KEYS = [
    "model_stats",
    "name",
    "version",
    "last_inference",
    "inference_count",
    "execution_count",
    "inference_stats",
    "success",
    "fail",
    "queue",
    "compute_input",
    "compute_infer",
    "compute_output",
    "cache_hit",
    "cache_miss",
    "count",
    "ns",
    "batch_stats",
    "batch_size",
]
_AT_NS = 1_795_319_601_349_000_000


def _outcome(answer: str | bytes | dict[str, Any], at_ns: int) -> tuple[object, object]:
    try:
        strict: object = parse_model_stats(answer, at_ns)
    except StatsParseError as err:
        assert str(err), "a rejection must say why"
        strict = err
    try:
        lenient: object = parse_model_stats_lenient(answer, at_ns)
    except StatsParseError as err:
        lenient = err
    return strict, lenient


def _check_record(stats: ModelStats, at_ns: int) -> None:
    assert stats.at_ns == at_ns
    assert isinstance(stats.model, str) and stats.model
    for f in dataclasses.fields(ModelStats):
        value = getattr(stats, f.name)
        if f.type in (int, "int"):
            assert isinstance(value, int) and value >= 0, (f.name, value)
    for batch in stats.batch_stats:
        assert isinstance(batch, BatchStats)
        assert all(isinstance(v, int) and v >= 0 for v in dataclasses.astuple(batch))
    # the counts live in the row's JSON body, which holds any integer: ints=False
    assert_storable(stats, ints=False)


def check_stats(body: bytes, at_ns: int = _AT_NS) -> None:
    """Every property this module asserts, for one body; also what regressions replay."""
    strict, lenient = _outcome(body, at_ns)
    if isinstance(lenient, StatsParseError):
        assert isinstance(strict, StatsParseError) and str(strict) == str(lenient)
        return
    assert isinstance(lenient, ParsedStats)
    assert all(isinstance(p, str) and p for p in lenient.problems)
    for record in lenient.stats:
        _check_record(record, at_ns)
    entries = json.loads(body).get("model_stats", [])  # lenient accepted: this decodes
    assert len(lenient.stats) + len(lenient.problems) == len(entries)
    if isinstance(strict, StatsParseError):
        assert lenient.problems[0] == str(strict)
    else:
        assert lenient.problems == ()
        assert list(lenient.stats) == strict
        # the forms of one answer parse alike: bytes, decoded dict and, for a UTF-8 body
        # (json.loads also reads UTF-16 and a BOM from bytes, not from str), its text
        assert _outcome(json.loads(body), at_ns) == (strict, lenient)
        text = body.decode("utf-8", "replace")
        if text.encode() == body and not text.startswith("\ufeff"):
            assert _outcome(text, at_ns) == (strict, lenient)


# ---------------------------------------------------------------------------- properties

_BODIES = st.one_of(
    st.sampled_from(_ANSWERS).flatmap(lambda a: mutated_json(a, _KEYS)).map(json.dumps),
    JSON.map(json.dumps),
    st.builds(lambda e: json.dumps({"model_stats": e}), st.lists(JSON, max_size=4)),
).map(str.encode)
_DEEP = deep_json(480)


@fuzz_settings(400)
@given(_BODIES)
@example(b"[" * 100_000)
@example(b'{"model_stats":' + b"[" * 100_000)
@example(('{"model_stats":[{"name":"m","version":' + _DEEP + "}]}").encode())
@example(('{"model_stats":[' + _DEEP + "]}").encode())
@example(('{"model_stats":[{"name":"m","inference_count":"' + "1" * 5000 + '"}]}').encode())
@example(('{"model_stats":[{"name":"m","inference_count":' + "1" * 5000 + "}]}").encode())
@example(b'{"model_stats":[{"name":"\\ud800","version":"\\udc80"}]}')
def test_any_body(body: bytes) -> None:
    with keep_on_failure("stats", "any-body", body, "json"):
        check_stats(body)


@fuzz_settings(150)
@given(st.binary(max_size=200))
@example(b"\xff\xfe{\x00}\x00")  # UTF-16 by its BOM, as json.loads(bytes) detects it
@example(b"\xef\xbb\xbf{}")
def test_bytes_that_are_not_json(body: bytes) -> None:
    with keep_on_failure("stats", "bytes", body, "json"):
        strict, lenient = _outcome(body, _AT_NS)
        if isinstance(strict, StatsParseError):
            assert isinstance(lenient, (StatsParseError, ParsedStats))
        else:
            check_stats(body)


@fuzz_settings(60)
@given(st.sampled_from(_ANSWERS), st.integers(0, 10**6))
def test_every_cut_of_a_real_answer(answer: dict[str, Any], cut: int) -> None:
    """A body cut short (the connection dropped) is a clear error, never a partial list."""
    body = json.dumps(answer).encode()
    part = body[: cut % len(body)]
    with (
        keep_on_failure("stats", "cut", part, "json"),
        pytest.raises(StatsParseError, match="not JSON"),
    ):
        parse_model_stats_lenient(part, _AT_NS)


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
        '{"model_stats":[{"name":"m","version":%s}]}',
        '{"model_stats":[{"name":"m","inference_count":%s}]}',
        '{"model_stats":[{"name":"m","inference_stats":{"queue":%s}}]}',
        '{"model_stats":[{"name":"m","batch_stats":[%s]}]}',
        '{"model_stats":[%s]}',
        '{"model_stats":%s}',
    ],
)
def test_nesting_at_every_depth_around_the_limit(template: str) -> None:
    """Nesting that just decodes can still be too deep to print in an error message a few
    frames further down: every depth across the decoder's limit, one level at a time."""
    for depth in range(_decodable_depth() - 30, _decodable_depth() + 3):
        body = (template % ("[" * depth + "]" * depth)).encode()
        with keep_on_failure("stats", "nesting", body, "json"):
            check_stats(body)


# ------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("path", regression_files("stats"), ids=lambda p: p.name)
def test_regression(path: Path) -> None:
    check_stats(path.read_bytes())
