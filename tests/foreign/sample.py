"""The foreign recordings the quick suite sweeps: every finding kind's two smallest
recordings and the ten smallest healthy ones.

Why: two tests sweep the whole corpus (``test_foreign_scenario`` and the output contract's
"no other recording breaks its config"), and judging 315 recordings is most of what a run
after a detector change costs on two cores (each recording's parsed events read back and
analysed again: 34 CPU-seconds). The quick suite (``-m "not lab ..."``) is the loop a
developer runs after each edit; it keeps one sweep item per recording of this sample, chosen
from the recordings' own ``expected.json`` so that every kind a recording expects stays
judged and a new kind joins the sample with its first recording. The full suite (``pytest``,
what ``.ci/run`` runs) sweeps every recording, and so does the quick one with
``TRITON_OBS_CORPUS=all``. Tests that name a recording read it in either.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from functools import cache
from pathlib import Path

__all__ = ["HEALTHY", "PER_KIND", "quick_sample", "sweeps_everything"]

PER_KIND = 2
"""Faulty recordings kept per expected finding kind."""

HEALTHY = 10
"""Healthy recordings kept: where a false positive would show."""


def sweeps_everything() -> bool:
    """``TRITON_OBS_CORPUS=all``: the quick suite sweeps every recording too."""
    return os.environ.get("TRITON_OBS_CORPUS", "") == "all"


@cache
def quick_sample(fixtures: Path) -> frozenset[str]:
    """The recordings under ``fixtures`` the quick suite sweeps; the smallest archives first,
    since a recording's cost follows its size."""
    by_kind: dict[str, list[tuple[int, str]]] = defaultdict(list)
    healthy: list[tuple[int, str]] = []
    for folder in fixtures.iterdir():
        archive = folder / "bundle.tar.gz"
        if not archive.is_file():
            continue
        expected = json.loads((folder / "expected.json").read_text())
        size = archive.stat().st_size
        if expected["healthy"]:
            healthy.append((size, folder.name))
        for kind, _model in expected["findings"]:
            by_kind[kind].append((size, folder.name))
    chosen = {name for _size, name in sorted(healthy)[:HEALTHY]}
    for recordings in by_kind.values():
        chosen.update(name for _size, name in sorted(recordings)[:PER_KIND])
    return frozenset(chosen)
