"""Real-world Triton artifacts that users published (``tests/fixtures/wild/``, with each
one's source and what its issue says happened): every one goes through ``analyze`` as a user
would hand it over — a pasted log, a /metrics page, stats or a trace file — and must give the
finding its ``source.yaml`` expects (kind, and model where the artifact names it, warning or
above), or nothing of warning or above where nothing detectable was wrong. Nothing may raise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from observability.analyze import analyze_bundle
from observability.findings import Severity
from tests import yamlfast

WILD = Path(__file__).resolve().parent / "fixtures" / "wild"
ARTIFACTS = sorted(p.name for p in WILD.iterdir() if (p / "source.yaml").is_file())


def _expected(name: str) -> set[tuple[str, str | None]]:
    source = yamlfast.load((WILD / name / "source.yaml").read_text())
    out: set[tuple[str, str | None]] = set()
    for item in source.get("expected") or []:
        if isinstance(item, dict):
            out.add((item["kind"], item.get("model")))
        else:
            out.add((str(item), None))
    return out


def test_the_corpus_is_wide() -> None:
    """Issue 15: at least 30 artifacts over at least 8 releases."""
    releases = {
        str(yamlfast.load((WILD / n / "source.yaml").read_text()).get("release")) for n in ARTIFACTS
    }
    assert len(ARTIFACTS) >= 30
    assert len(releases - {"unknown", "None"}) >= 8


@pytest.mark.parametrize("name", ARTIFACTS)
def test_artifact(name: str) -> None:
    result = analyze_bundle(WILD / name)
    found = {(f.kind, f.model) for f in result.findings if f.severity.rank >= Severity.WARNING.rank}
    expected = _expected(name)
    missing = {
        (kind, model)
        for kind, model in expected
        if not any(k == kind and (model is None or m == model) for k, m in found)
    }
    assert not missing, f"{name}: expected {sorted(missing, key=str)}, found {sorted(found)}"
    if not expected:
        assert not found, f"{name}: nothing was wrong, found {sorted(found)}"
