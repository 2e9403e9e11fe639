"""Fuzz the /metrics parser against prometheus_client, its C fast path and itself.

The existing properties (``tests/collectors/metrics``) generate valid pages and lightly
damaged ones. Here the input is anything: exposition-shaped token soup, real Triton pages
mutated token by token, and arbitrary unicode text. For every input:

* strict parsing returns families or raises ``MetricsParseError`` (nothing else), naming a
  line that is really on the page at that number; lenient parsing never raises, its first
  problem is exactly the strict error, and it keeps every family strict parsing returns;
* the ``_fastmetrics`` C path and the pure-Python path give identical results, with the
  caches cold or warm;
* where ``prometheus_client.parser`` reads the page too, both give the same samples
  (name, labels, value with NaN and infinities, timestamp); where only
  prometheus_client reads it, our error is one of the stricter rules the parser documents.

Run longer: ``TRITON_OBS_FUZZ_EXAMPLES=20000 pytest -q tests/fuzz/test_fuzz_metrics.py --timeout=0``
(``TRITON_OBS_FUZZ_KEEP=1`` keeps the input of a failure under ``regressions/metrics/``).
"""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from collectors.metrics import parser
from collectors.metrics.parser import MetricsParseError, parse_metrics, parse_metrics_lenient
from observability.events import MetricFamily, MetricType
from tests.fuzz._support import FIXTURES, fuzz_settings, keep_on_failure, regression_files

_PAGES = [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "metrics").glob("*.prom"))]
_PAGE_LINES = [line for page in _PAGES for line in page.split("\n") if line]

_STRICTER = (
    # What the parser's docstring lists as stricter than prometheus_client:
    "appears twice on the page",
    "second TYPE line",
    "second HELP line",
    "after its samples",
    "unknown metric type",
    "invalid escape",
    "invalid timestamp",
    "unexpected text after the timestamp",
    # A suffix the family's type does not have (a bare ``h`` under ``# TYPE h histogram``):
    # prometheus_client starts an untyped family, we name the line.
    "is not valid in a",
    # The 0.0.4 grammar, which prometheus_client 0.2x no longer holds lines to: it takes
    # any text before ``{`` as the name, ``__name__`` in the label set, ``:`` in label
    # names (its UTF-8 names), and reads "NaN" alone as the sample "Na" = NaN.
    "invalid metric name",
    "missing metric name",
    "invalid label name",
    # ``version=}``: the grammar quotes every label value; prometheus_client drops the label.
    "is not quoted",
    "missing value",
)
"""Reasons we may reject a page prometheus_client reads; anything else is a bug of ours."""


# --------------------------------------------------------------------------- strategies

_TOKEN_LIST = [
    "# HELP ",
    "# TYPE ",
    "#",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "{",
    "}",
    "=",
    '"',
    ",",
    "\\",
    "\\n",
    '\\"',
    "\\\\",
    "x",
    "x_total",
    "x_bucket",
    "x_sum",
    "x_count",
    "x_created",
    "y",
    ":",
    "le",
    "quantile",
    "model",
    "counter",
    "gauge",
    "histogram",
    "summary",
    "untyped",
    "info",
    "0",
    "1",
    "-1",
    "1.5",
    "1e3",
    "1_0",
    "NaN",
    "Nan",
    "+Inf",
    "-Inf",
    "inf",
    "1234567890123",
    "é",
    "٣",
]
_TOKENS = st.sampled_from(_TOKEN_LIST)
_SOUP = st.lists(_TOKENS, max_size=60).map("".join)


@st.composite
def _mutated_page(draw: st.DrawFn) -> str:
    """A run of real Triton lines, then a few tokens inserted, deleted or replaced."""
    start = draw(st.integers(0, len(_PAGE_LINES) - 1))
    lines = _PAGE_LINES[start : start + draw(st.integers(1, 40))]
    text = "\n".join(lines) + "\n"
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 2))
        if kind == 0:
            text = text[:at] + draw(_TOKENS) + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        else:
            token = draw(_TOKENS)
            text = text[:at] + token + text[at + len(token) :]
    return text


_ANY_PAGE = st.one_of(_SOUP, _mutated_page(), st.text(max_size=300))


# ------------------------------------------------------------------------------ checks


def _exact(families: list[MetricFamily] | tuple[MetricFamily, ...]) -> list[object]:
    """Families with each value as its bits: NaN == NaN and -0.0 != 0.0 here."""
    return [
        (
            f.name,
            f.type,
            f.help,
            [
                (s.name, s.labels, struct.pack("<d", s.value), s.family, s.timestamp_ms)
                for s in f.samples
            ],
        )
        for f in families
    ]


def _outcome(text: str) -> tuple[object, object, object]:
    try:
        strict: object = _exact(parse_metrics(text))
    except MetricsParseError as err:
        strict = err
    page = parse_metrics_lenient(text)
    return strict, _exact(page.families), page.problems


def _same(a: object, b: object) -> bool:
    if isinstance(a, MetricsParseError) and isinstance(b, MetricsParseError):
        return (a.line_number, a.line, a.reason) == (b.line_number, b.line, b.reason)
    return a == b


def _canon_name(name: str, typ: str) -> str:
    return name[:-6] if typ == "counter" and name.endswith("_total") else name


def _ours(families: list[MetricFamily] | tuple[MetricFamily, ...]) -> list[tuple[object, ...]]:
    return [
        (
            _canon_name(s.name, f.type.value),
            tuple(s.labels),
            "nan" if math.isnan(s.value) else s.value,
            None if s.timestamp_ms is None else s.timestamp_ms / 1000,
        )
        for f in families
        for s in f.samples
    ]


def _prometheus(text: str) -> list[tuple[object, ...]] | None:
    """prometheus_client's samples in our shape, or None where it rejects the page."""
    try:
        families = list(text_string_to_metric_families(text))
    except Exception:  # it raises ValueError, but also whatever else its scanner hits
        return None
    return [
        (
            _canon_name(s.name, f.type),
            tuple(s.labels.items()),
            "nan" if math.isnan(s.value) else float(s.value),
            None if s.timestamp is None else float(s.timestamp),
        )
        for f in families
        for s in f.samples
    ]


def check_metrics(text: str) -> None:
    """Every property this module asserts, for one page; also what regressions replay."""
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    parser._clear_caches()
    cold = _outcome(text)
    warm = _outcome(text)
    with mock.patch.object(parser, "_build", None):
        parser._clear_caches()
        python = _outcome(text)
    for other in (warm, python):
        assert all(_same(a, b) for a, b in zip(cold, other, strict=True)), (cold, other)

    strict, lenient, problems = cold
    for problem in problems:  # type: ignore[attr-defined]
        assert lines[problem.line_number - 1] == problem.line
        assert problem.reason
    if isinstance(strict, MetricsParseError):
        assert lines[strict.line_number - 1] == strict.line
        first = problems[0]  # type: ignore[index]
        assert (first.line_number, first.line, first.reason) == (
            strict.line_number,
            strict.line,
            strict.reason,
        )
    else:
        assert problems == ()
        assert lenient == strict

    theirs = _prometheus(text)
    if theirs is None:
        return  # we may read more than it does (a lone CR as a separator, say)
    if isinstance(strict, MetricsParseError):
        assert (
            any(rule in strict.reason for rule in _STRICTER)
            or _float_extra(strict)
            or _other_space(strict)
        ), strict
        # What lenient parsing kept around the line is still what prometheus_client read.
        kept = _ours(parse_metrics_lenient(text).families)
        assert _is_subsequence(kept, theirs), (kept, theirs)
        return
    assert _ours(parse_metrics(text)) == theirs


def _is_subsequence(part: list[tuple[object, ...]], whole: list[tuple[object, ...]]) -> bool:
    rest = iter(whole)
    return all(any(item == other for other in rest) for item in part)


def _other_space(err: MetricsParseError) -> bool:
    """Our label-set rule: between pairs the grammar has spaces and tabs; prometheus_client
    also skips other whitespace there (a CR: ``m{A=""\r}0``, found by this test in CI)."""
    return "expected ',' or '}' after label" in err.reason and (
        re.search(r'"[ \t]*[^\S \t]', err.line) is not None
    )


def _float_extra(err: MetricsParseError) -> bool:
    """Our value/timestamp rule: float() accepts "1_0" and "٣", no exporter writes them."""
    token = re.search(r"invalid (?:value|timestamp) '(.*)'", err.reason)
    return token is not None and ("_" in token.group(1) or not token.group(1).isascii())


# ---------------------------------------------------------------------------- properties


@fuzz_settings(300)
@given(_ANY_PAGE)
@example("# TYPE x counter\nx 1\nx_created 2\n")
@example("# TYPE h histogram\nh 1\n")
@example('x{a="1",a="2"} 1\n')
@example("x 1 2 3\n")
@example("x 1_0\n")
@example('x NaN\nx{a="b"} -Inf\n')
@example('""{A=""\r}0')  # found in CI (2026-11-26): a CR between label pairs
def test_any_page(text: str) -> None:
    with keep_on_failure("metrics", "any-page", text.encode("utf-8"), "prom"):
        check_metrics(text)


@fuzz_settings(20)
@given(st.sampled_from(_PAGES), st.integers(0, 10**6))
def test_every_cut_of_a_real_page(page: str, cut: int) -> None:
    """A scrape cut short (the connection dropped) is a page that ends early."""
    text = page[: cut % (len(page) + 1)]
    with keep_on_failure("metrics", "cut-page", text.encode("utf-8"), "prom"):
        check_metrics(text)


# ------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("path", regression_files("metrics"), ids=lambda p: p.name)
def test_regression(path: Path) -> None:
    check_metrics(path.read_bytes().decode("utf-8"))


def test_types_cover_the_enum() -> None:
    """The soup names every type the parser knows, so each one's rules get fuzzed."""
    assert {t.value for t in MetricType} <= set(_TOKEN_LIST)
