"""The quick suite's sample of the corpus (``tests/foreign/sample.py``) keeps every finding
kind a recording expects, and healthy recordings to show a false positive on."""

from __future__ import annotations

import json

from tests.foreign.parsed import FIXTURES
from tests.foreign.sample import HEALTHY, PER_KIND, quick_sample


def _expected() -> dict[str, dict[str, object]]:
    return {
        p.parent.name: json.loads(p.read_text())
        for p in FIXTURES.glob("*/expected.json")
        if (p.parent / "bundle.tar.gz").is_file()
    }


def test_the_sample_judges_every_expected_kind_and_healthy_recordings() -> None:
    expected, sample = _expected(), quick_sample(FIXTURES)
    assert sample <= expected.keys()
    for kind in {k for e in expected.values() for k, _m in e["findings"]}:  # type: ignore[attr-defined]
        having = {n for n, e in expected.items() if kind in {k for k, _m in e["findings"]}}  # type: ignore[attr-defined]
        assert len(having & sample) >= min(PER_KIND, len(having)), kind
    assert len({n for n in sample if expected[n]["healthy"]}) == HEALTHY


def test_the_sample_is_a_small_part_of_the_corpus() -> None:
    """What the quick suite saves: a sample near the whole corpus would save nothing."""
    assert len(quick_sample(FIXTURES)) * 4 < len(_expected())
