"""The /metrics parser: golden pages from a real Triton 2.51, bad input, and a property
test against prometheus_client."""

from __future__ import annotations

import math
import re
from itertools import islice

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from promcompare import FIXTURES, canon_ours, canon_prometheus

from collectors.metrics.parser import (
    MetricsParseError,
    _clear_caches,
    iter_metric_families,
    parse_metrics,
    parse_metrics_lenient,
)
from observability.events import MetricType
from tests.hypothesis_profiles import examples

CLEAN_PAGES = [
    "triton_2.51_histogram_latencies.prom",
    "triton_2.51_summary_and_histogram_latencies.prom",
]
BROKEN_PAGE = "triton_2.51_summary_latencies.prom"
"""Holds a custom metric whose description has a newline: Triton writes it raw."""


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# --- golden pages ---------------------------------------------------------------------


@pytest.mark.parametrize("name", CLEAN_PAGES)
def test_real_page_matches_prometheus_client(name: str) -> None:
    text = _read(name)
    families = parse_metrics(text)
    assert canon_ours(families) == canon_prometheus(text)
    for family in families:
        assert all(s.family == family.name for s in family.samples)


def test_real_page_keeps_triton_names_and_label_order() -> None:
    families = {f.name: f for f in parse_metrics(_read(CLEAN_PAGES[1]))}
    success = families["nv_inference_request_success"]
    assert success.type is MetricType.COUNTER
    assert success.help == "Number of successful inference requests, all batch sizes"
    assert [s.name for s in success.samples] == ["nv_inference_request_success"] * 2
    assert success.samples[0].labels == (("model", "echo"), ("version", "1"))
    failure = families["nv_inference_request_failure"].samples[0]
    assert [k for k, _ in failure.labels] == ["model", "reason", "version"]
    hist = families["demo_custom_input_size_histogram"]
    # prometheus-cpp writes _count and _sum before the buckets
    assert [s.name.rsplit("_", 1)[1] for s in hist.samples][:3] == ["count", "sum", "bucket"]
    assert hist.samples[-1].label("le") == "+Inf"
    custom = families["demo_custom_calls"].samples[0]
    assert custom.label("tag") == 'odd "value" \\ with\nnewline'  # escapes decoded
    assert families["demo_custom_calls"].help.endswith('(a "quoted" help, with a \\ backslash)')


def test_triton_writes_nan_as_Nan() -> None:
    families = {f.name: f for f in parse_metrics_lenient(_read(BROKEN_PAGE)).families}
    quantiles = [
        s
        for s in families["nv_inference_request_summary_us"].samples
        if s.label("model") == "weird_help" and s.label("quantile")
    ]
    assert len(quantiles) == 5
    assert all(math.isnan(s.value) for s in quantiles)


def test_broken_real_page_strict_raises_with_line() -> None:
    with pytest.raises(MetricsParseError) as caught:
        parse_metrics(_read(BROKEN_PAGE))
    assert caught.value.line_number == 82
    assert caught.value.line == "second line"
    assert "line 82" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_broken_real_page_lenient_loses_only_the_bad_line() -> None:
    text = _read(BROKEN_PAGE)
    page = parse_metrics_lenient(text)
    assert [(p.line_number, p.line) for p in page.problems] == [(82, "second line")]
    without = "\n".join(line for line in text.split("\n") if line != "second line")
    assert canon_ours(page.families) == canon_prometheus(without)
    weird = next(f for f in page.families if f.name == "demo_weird_help")
    assert weird.help == "first line"
    assert weird.samples[0].value == -1.5


def test_hundred_model_page_matches_prometheus_client() -> None:
    from benchmarks.metrics_parse import TEMPLATE, synthesise_page

    text = synthesise_page(TEMPLATE.read_text(encoding="utf-8"), models=100)
    expected = canon_prometheus(text)
    _clear_caches()
    cold = parse_metrics(text)
    warm = parse_metrics(text)  # label and series caches filled by the first parse
    assert canon_ours(cold) == expected
    assert warm == cold
    models = {s.label("model") for f in cold for s in f.samples}
    assert len(models - {""}) == 100


# --- slow paths agree with the fast path ----------------------------------------------


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda t: t.replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda t: re.sub(r"(?m)^(?!#)", "  ", t), id="indented-samples"),
        pytest.param(lambda t: re.sub(r"(?m)\} ", "}\t", t), id="tabs"),
        pytest.param(lambda t: t.replace("\n# HELP", "\n\n# HELP"), id="blank-lines"),
        pytest.param(lambda t: t.replace('",version', '", version'), id="space-after-comma"),
        pytest.param(lambda t: t.rstrip("\n"), id="no-final-newline"),
    ],
)
def test_unusual_layout_parses_the_same(mangle: object) -> None:
    text = _read(CLEAN_PAGES[1])
    assert parse_metrics(mangle(text)) == parse_metrics(text)  # type: ignore[operator]


def test_timestamps_are_integer_milliseconds() -> None:
    text = '# TYPE a counter\na 1 1700000000123\na{x="y"} +Inf -5\n'
    samples = parse_metrics(text)[0].samples
    assert [s.timestamp_ms for s in samples] == [1700000000123, -5]
    assert samples[1].value == math.inf
    assert canon_ours(parse_metrics(text)) == canon_prometheus(text)


def test_label_values_with_specials_on_the_fast_path() -> None:
    text = '# TYPE a gauge\na{x="}{,= a",y=""} 1\na{x="\\\\"} 2\na{x="\\"",} 3\n'
    labels = [s.labels for s in parse_metrics(text)[0].samples]
    assert labels == [(("x", "}{,= a"), ("y", "")), (("x", "\\"),), (("x", '"'),)]
    assert canon_ours(parse_metrics(text)) == canon_prometheus(text)


def test_untyped_samples_and_help_only_families() -> None:
    text = "# HELP h some help\nh 1\nlone 2\nlone 3\n# just a comment\n"
    families = parse_metrics(text)
    assert [(f.name, f.type, f.help, len(f.samples)) for f in families] == [
        ("h", MetricType.UNTYPED, "some help", 1),
        ("lone", MetricType.UNTYPED, "", 2),
    ]


def test_help_escapes() -> None:
    families = parse_metrics("# HELP a x\\ny \\\\ z \\q\n# TYPE a gauge\na 1\n")
    assert families[0].help == "x\ny \\ z \\q"


def test_families_stream_before_a_later_error() -> None:
    text = _read(CLEAN_PAGES[0]) + "broken{\n"
    first = next(islice(iter_metric_families(text), 1))
    assert first.name == "nv_inference_request_success"
    with pytest.raises(MetricsParseError):
        list(iter_metric_families(text))


def test_empty_page() -> None:
    assert parse_metrics("") == []
    assert parse_metrics("\n\n# a comment only\n") == []


# --- malformed input ------------------------------------------------------------------

INVALID = [
    ('x{a="b} 1', 1, "unterminated quote"),
    ('x{a="b" 1', 1, "not closed"),
    ("x{a=b} 1", 1, "not quoted"),
    ('x{a="b"c="d"} 1', 1, "expected ','"),
    ('x{a="b",,c="d"} 1', 1, "invalid label name"),
    ("x{,} 1", 1, "label without '='"),
    ('x{1a="b"} 1', 1, "invalid label name"),
    ('x{a-b="c"} 1', 1, "invalid label name"),
    ('x{a="b",a="c"} 1', 1, "duplicate label 'a'"),
    ('x{a="\\q"} 1', 1, "invalid escape"),
    ('x{a="b\\"} 1', 1, "unterminated quote"),
    ('x{a="b"}} 1', 1, "expected ','"),
    ("x 1_000", 1, "invalid value '1_000'"),
    ("x abc", 1, "invalid value 'abc'"),
    ("x 1e", 1, "invalid value"),
    ("x 0x10", 1, "invalid value"),
    ("x \u0663", 1, "invalid value"),
    ("x", 1, "missing value"),
    ('x{a="b"}', 1, "missing value"),
    ('x{a="b"}junk 1', 1, "invalid value 'junk'"),
    ("x 1 2 3", 1, "after the timestamp"),
    ("x 1 1.5", 1, "invalid timestamp"),
    ("x 1 soon", 1, "invalid timestamp"),
    ("1x 1", 1, "invalid metric name"),
    ("x-y 1", 1, "invalid metric name"),
    ('{a="b"} 1', 1, "missing metric name"),
    ("\x00\xff\xfe 1", 1, "invalid metric name"),
    ("\ufeffx 1", 1, "invalid metric name"),
    ("# HELP 9bad help", 1, "invalid metric name"),
    ("# TYPE x counter\n# TYPE x gauge", 2, "second TYPE line"),
    ("# TYPE x summaryy", 1, "unknown metric type 'summaryy'"),
    ("# TYPE x", 1, "without a type"),
    ("# HELP x a\n# HELP x b", 2, "second HELP line"),
    ("x 1\n# TYPE x counter", 2, "after its samples"),
    ("# TYPE x counter\nx 1\n# TYPE y gauge\ny 1\n# TYPE x counter\nx 2", 5, "appears twice"),
    ("a 1\nb 1\na 2", 3, "appears twice"),
    ("# TYPE h histogram\nh 1", 2, "not valid in a histogram family"),
    ("# TYPE x gauge\nx 1\nx{", 3, "not closed"),
    (
        '# TYPE nv_inference_count counter\nnv_inference_count{model="echo",vers',
        2,
        "not closed",
    ),
    ("# TYPE x gauge\nx 1\n\nx 2\nx NaNa", 5, "invalid value 'NaNa'"),
]


@pytest.mark.parametrize(("text", "line_number", "reason"), INVALID)
def test_invalid_input_strict(text: str, line_number: int, reason: str) -> None:
    with pytest.raises(MetricsParseError) as caught:
        parse_metrics(text)
    assert caught.value.line_number == line_number
    assert reason in caught.value.reason
    assert caught.value.line == text.split("\n")[line_number - 1]
    assert f"line {line_number}:" in str(caught.value)


@pytest.mark.parametrize(("text", "line_number", "reason"), INVALID)
def test_invalid_input_lenient_reports_the_same_line(
    text: str, line_number: int, reason: str
) -> None:
    page = parse_metrics_lenient(text)
    assert page.problems
    assert page.problems[0].line_number == line_number
    assert reason in page.problems[0].reason


def test_truncated_real_page() -> None:
    text = _read(CLEAN_PAGES[0])
    cut = text.index('nv_inference_exec_count{model="custom"') + 30
    with pytest.raises(MetricsParseError, match="not closed"):
        parse_metrics(text[:cut])
    page = parse_metrics_lenient(text[:cut])
    assert len(page.problems) == 1
    assert [f.name for f in page.families][-1] == "nv_inference_exec_count"


def test_lenient_keeps_every_good_line_around_bad_ones() -> None:
    text = _read(CLEAN_PAGES[1])
    lines = text.split("\n")
    labelled = [i + 1 for i, line in enumerate(lines) if line[:1] not in ("#", "") and "{" in line]
    bad_numbers = [labelled[0], labelled[1], labelled[len(labelled) // 2], labelled[-1]]
    for n in bad_numbers:
        lines[n - 1] = lines[n - 1].replace('"', "", 1)
    page = parse_metrics_lenient("\n".join(lines))
    assert [p.line_number for p in page.problems] == bad_numbers
    good = parse_metrics(text)
    dropped = {text.split("\n")[n - 1] for n in bad_numbers}
    kept_lines = [line for line in text.split("\n") if line not in dropped]
    assert page.families == tuple(parse_metrics("\n".join(kept_lines)))
    assert sum(len(f.samples) for f in good) - len(bad_numbers) == sum(
        len(f.samples) for f in page.families
    )


def test_lenient_keeps_a_family_that_appears_twice() -> None:
    page = parse_metrics_lenient("# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\n# TYPE x gauge\nx 2\n")
    assert [f.name for f in page.families] == ["x", "y", "x"]
    assert len(page.problems) == 1


# --- property: identical to prometheus_client on valid pages ---------------------------

_LABEL_NAMES = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,6}", fullmatch=True).filter(
    lambda n: n not in ("le", "quantile")
)
_LABEL_VALUES = st.text(alphabet=st.sampled_from([*'ab z09"\\\n}{,=#.-_', "é", "☃"]), max_size=8)
_HELP = st.text(alphabet=st.sampled_from([*'ab z09"\\{}#=,.', "é", "\n"]), max_size=20).map(
    str.strip
)
_VALUE_TOKENS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["+Inf", "-Inf", "NaN", "Nan", "nan", "0", "1e3", "-0.5", ".5"]),
)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


@st.composite
def _page(draw: st.DrawFn) -> str:
    lines: list[str] = []
    n_families = draw(st.integers(0, 5))
    for i in range(n_families):
        name = draw(st.from_regex(r"[a-z_:][a-z0-9_:]{0,8}", fullmatch=True)) + f"_f{i}"
        typ = draw(st.sampled_from([t.value for t in MetricType]))
        help_text = draw(st.none() | _HELP)
        help_line = None if help_text is None else f"# HELP {name} {_escape_help(help_text)}"
        if help_line and draw(st.booleans()):
            lines.append(help_line)
            help_line = None
        lines.append(f"# TYPE {name} {typ}")
        if help_line:
            lines.append(help_line)
        for _ in range(draw(st.integers(0, 4))):
            names = draw(st.lists(_LABEL_NAMES, max_size=3, unique=True))
            pairs = [(k, draw(_LABEL_VALUES)) for k in names]
            if typ == "histogram":
                suffix, extra = draw(
                    st.sampled_from([("_bucket", "le"), ("_sum", None), ("_count", None)])
                )
            elif typ == "summary":
                suffix, extra = draw(
                    st.sampled_from([("", "quantile"), ("_sum", None), ("_count", None)])
                )
            else:
                suffix, extra = "", None
            if extra:
                pairs.append((extra, draw(st.sampled_from(["0.5", "1", "+Inf"]))))
            body = ",".join(f'{k}="{_escape_label(v)}"' for k, v in pairs)
            if body and draw(st.booleans()):
                body += ","
            head = f"{name}{suffix}" + (f"{{{body}}}" if pairs or draw(st.booleans()) else "")
            line = f"{head} {draw(_VALUE_TOKENS)}"
            if draw(st.booleans()):
                line += f" {draw(st.integers(-(10**13), 10**13))}"
            lines.append(line)
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_page())
def test_matches_prometheus_client_on_valid_pages(text: str) -> None:
    expected = canon_prometheus(text)
    assert canon_ours(parse_metrics(text)) == expected
    page = parse_metrics_lenient(text)
    assert page.problems == ()
    assert canon_ours(page.families) == expected
