"""What the package judged on a recording, kept on disk until the package or the recording
changes.

Why: twenty-odd test modules read what ``analyze`` (or every detector) reports on the same
checked-in recordings, and each pytest-xdist worker judged them again in every session: with
300 recordings, more than the whole quick suite's minute. The answer is kept in
``.test-cache/judged/`` under a key of every source of the package (``observability/`` and
``collectors/``) and the bytes of every input, so any change to a detector, the window or a
parser judges again; a session with no source change reads the answer back.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import TypeVar

from tests.fixtures.recordings import REPO, sources_digest

__all__ = ["judged", "keep", "package_fingerprint"]

_FORMAT = b"judged-1"
_T = TypeVar("_T")


def _cache_root() -> Path:
    return Path(os.environ.get("TRITON_OBS_TEST_CACHE") or REPO / ".test-cache") / "judged"


@cache
def package_fingerprint() -> bytes:
    """Every source of the package, by path and bytes: what a judgement may depend on."""
    return sources_digest(("observability", "collectors")).digest()


def judged(name: str, inputs: Iterable[Path], judge: Callable[[], _T]) -> _T:
    """``judge()``'s answer, from the cache when neither the package nor any of ``inputs``
    changed since it was kept under ``name`` (letters, digits, ``-`` and ``_``); an input
    that is a folder stands for every file under it."""
    if not re.fullmatch(r"[\w-]+", name):
        raise ValueError(f"not a cache name: {name!r}")
    digest = hashlib.sha256(package_fingerprint() + _FORMAT + name.encode())
    for top in inputs:
        files = sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else [top]
        for path in files:
            digest.update(path.relative_to(top).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    path = _cache_root() / f"{name}-{digest.hexdigest()[:20]}.pickle"
    if path.exists():
        with path.open("rb") as fh:
            return pickle.load(fh)  # type: ignore[no-any-return]
    answer = judge()
    keep(path, pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL),
         rf"{re.escape(name)}-[0-9a-f]{{20}}\.pickle")  # fmt: skip
    return answer


def keep(path: Path, data: bytes, pattern: str) -> None:
    """Write ``path`` whole, and remove the older keys' files of the same name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)  # a reader never sees half a file; two writers, the same bytes
    for stale in path.parent.glob("*.pickle"):
        if re.fullmatch(pattern, stale.name) and stale != path:
            stale.unlink(missing_ok=True)
