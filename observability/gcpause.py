"""The cyclic garbage collector paused while a bundle's records are made in bulk.

Why: reading a bundle makes hundreds of thousands of short-lived objects (records, the tuples
and lists that carry them into blocks), none of them in a reference cycle, so the collector's
passes over them find nothing; its full passes also walk every object the process holds. An
ingest of 1,000,000 log lines spent 15-25 % of its time there (``benchmarks.ingest_log``).
Reference counting still frees everything at once; only cycles wait, and the collector runs
as soon as the last pause ends.

The collector's switch is one per process: pauses nest and may overlap across threads (the
triage app analyses a bundle in a thread beside Streamlit's), so the first pause turns it
off, if it was on, and the last one to end turns it back on.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
