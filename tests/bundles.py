"""Every recorded bundle the suite reads whole, by name: the foreign corpus's by its folder
name (a sweep over them is sampled by the quick suite, ``tests/conftest.py``) and the demo's
recordings by their path. All are real Triton 2.51 recordings (their PROVENANCE.md)."""

from __future__ import annotations

import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["BUNDLES", "members"]

REPO = Path(__file__).resolve().parents[1]

BUNDLES: dict[str, Path] = {
    **{p.parent.name: p for p in sorted((REPO / "tests/fixtures/foreign").glob("*/bundle.tar.gz"))},
    **{
        p.parent.relative_to(REPO).as_posix(): p
        for p in sorted((REPO / "tests/fixtures/recordings").glob("*/bundle.tar.gz"))
    },
}


def members(archive: Path, wanted: Callable[[str], bool]) -> Iterator[bytes]:
    """The bytes of each regular file of ``archive`` whose member name ``wanted`` accepts."""
    with tarfile.open(archive) as tar:
        for member in tar:
            data = tar.extractfile(member) if member.isfile() and wanted(member.name) else None
            if data is not None:
                yield data.read()
