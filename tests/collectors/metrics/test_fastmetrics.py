"""The optional ``_fastmetrics`` extension gives exactly what the pure-Python path gives.

Every comparison runs the parser twice, with the extension and with it switched off
(``parser._build = None``, which is what an install without a compiler has), and compares
families, samples, value bits (NaN and -0.0 included), problems and error lines.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from promcompare import FIXTURES
from test_metrics_parser import INVALID, _page

from collectors.metrics import parser
from collectors.metrics.parser import MetricsParseError, parse_metrics, parse_metrics_lenient
from observability.events import MetricSample
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.skipif(not parser.ACCELERATED, reason="_fastmetrics not built")

PAGES = sorted(p.name for p in FIXTURES.glob("*.prom"))


def _exact(families: object) -> list[object]:
    """Everything a family holds, with each value as its bits and its type."""
    out: list[object] = []
    for f in families:  # type: ignore[attr-defined]
        samples = [
            (
                type(s),
                s.name,
                s.labels,
                type(s.value),
                struct.pack("<d", s.value),
                s.family,
                s.timestamp_ms,
            )
            for s in f.samples
        ]
        out.append((f.name, f.type, f.help, type(f.samples), samples))
    return out


def _outcome(text: str, *, cold: bool) -> tuple[object, ...]:
    if cold:
        parser._clear_caches()
    try:
        strict: object = _exact(parse_metrics(text))
    except MetricsParseError as exc:
        strict = (exc.line_number, exc.line, exc.reason)
    if cold:
        parser._clear_caches()
    lenient = parse_metrics_lenient(text)
    return strict, _exact(lenient.families), lenient.problems


def _assert_same(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = (_outcome(text, cold=True), _outcome(text, cold=False))
    with monkeypatch.context() as m:
        m.setattr(parser, "_build", None)
        slow = (_outcome(text, cold=True), _outcome(text, cold=False))
    assert fast == slow


@pytest.mark.parametrize("name", PAGES)
def test_recorded_pages(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same((FIXTURES / name).read_text(encoding="utf-8"), monkeypatch)


def test_hundred_model_page(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.metrics_parse import TEMPLATE, synthesise_page

    _assert_same(synthesise_page(TEMPLATE.read_text(encoding="utf-8")), monkeypatch)


@pytest.mark.parametrize(("text", "line_number", "reason"), INVALID)
def test_invalid_pages(
    text: str, line_number: int, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _assert_same(text, monkeypatch)
    _assert_same(f"# TYPE x gauge\nx 1\nx -0.0\nx NaN\n{text}\n", monkeypatch)


@pytest.mark.parametrize(
    "value", ["1", "-0.0", "NaN", "nan", "-nan", "+Inf", "-inf", "infinity", "1e308", "1e309"]
)
def test_special_values(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same(f'# TYPE x gauge\nx{{a="b"}} {value}\nx{{a="c"}} 2\n', monkeypatch)


_GARBAGE = st.sampled_from([" ", "_", "x", "e", "}", '"', "{", ",", "\\", "é", "\x0b", "\x0c"])


@st.composite
def _damaged_page(draw: st.DrawFn) -> str:
    text = draw(_page())
    for _ in range(draw(st.integers(0, 3))):
        if text:
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(_GARBAGE) + text[at:]
    return text


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_page())
def test_generated_pages(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _assert_same(text, monkeypatch)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_damaged_page())
def test_damaged_generated_pages(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _assert_same(text, monkeypatch)


def test_build_directly() -> None:
    from collectors.metrics import _fastmetrics  # type: ignore[attr-defined]

    built = _fastmetrics.build(["x", "x"], [(), (("a", "b"),)], ["1", "NaN"], "x")
    assert isinstance(built, tuple)
    assert built[0] == MetricSample("x", (), 1.0, "x", None)
    assert built[1].labels == (("a", "b"),)
    assert built[1].value != built[1].value
    assert _fastmetrics.build(["x"], [()], ["1x"], "x") is None  # not handled
    assert _fastmetrics.build([], [], [], "x") == ()
    with pytest.raises(ValueError, match="different lengths"):
        _fastmetrics.build(["x"], [], ["1"], "x")
    with pytest.raises(TypeError):
        _fastmetrics.setup(int)
