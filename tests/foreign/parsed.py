"""The foreign recordings parsed once per source change, for the tests that analyse them.

Why: three test modules analyse the seventy-odd checked-in recordings, and parsing their logs
was two thirds of that work (loading the parsed events back is a tenth of parsing them). The
analysis itself runs every time, through :func:`observability.analyze.analyze_events`, the
code ``analyze`` runs after parsing. The events are kept in ``.test-cache/foreign/`` under a
key of the archive's bytes and every source that decides what parsing gives (the recordings'
``INGEST_SOURCES`` and ``observability/analyze.py``), so a parser change parses again.

What ``analyze`` reports, and what the detectors find in the log alone, are kept by
:func:`tests.judged.judged`, under a key of the archive and every source of the package.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
import re
from collections.abc import Callable
from functools import cache, lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Any

from observability import events as ev
from observability.analyze import (
    AnalysisResult,
    ParsedBundle,
    _bounds,
    _event_range,
    _time_of,
    analyze_events,
    parse_bundle,
)
from observability.bundle import open_bundle
from observability.detectors import run_detectors
from observability.detectors.live import LiveWindow
from observability.detectors.registry import default_detectors
from observability.detectors.window import Window
from observability.findings import Finding
from observability.gcpause import gc_paused
from tests.fixtures.recordings import REPO, ingest_fingerprint
from tests.judged import judged, keep

__all__ = ["analysis", "log_findings", "log_window", "parsed", "sliding_window"]

FIXTURES = REPO / "tests" / "fixtures" / "foreign"


def _cache_root() -> Path:
    return Path(os.environ.get("TRITON_OBS_TEST_CACHE") or REPO / ".test-cache") / "foreign"


_FORMAT = b"events-by-init-1"
"""The cached pickle's form (:class:`_EventPickler`): a new form is a new key."""


def _key(archive: Path) -> str:
    digest = hashlib.sha256(ingest_fingerprint().encode() + _FORMAT)
    digest.update((REPO / "observability" / "analyze.py").read_bytes())
    digest.update(archive.read_bytes())
    return digest.hexdigest()[:20]


def _event_reducers() -> dict[type, Callable[[Any], tuple[type, tuple[Any, ...]]]]:
    """Each event class (a frozen, slotted dataclass of ``observability.events``) pickled as a
    call of the class with its fields, as the parser made it. Pickle's default for such a
    class restores each field through the dataclass's ``__setstate__``, one Python call per
    field: loading the corpus's 1.1 million events took 13 s, 3 times what the constructors
    take. A dispatch table, not ``reducer_override``: that hook runs for every object pickled
    and made writing the cold cache 1.6 times slower."""
    table: dict[type, Callable[[Any], tuple[type, tuple[Any, ...]]]] = {}
    for cls in vars(ev).values():
        if not (isinstance(cls, type) and cls.__module__ == ev.__name__):
            continue
        if dataclasses.is_dataclass(cls):
            first, *rest = (f.name for f in dataclasses.fields(cls))
            if rest:
                table[cls] = lambda obj, cls=cls, get=attrgetter(first, *rest): (cls, get(obj))
            else:
                table[cls] = lambda obj, cls=cls, name=first: (cls, (getattr(obj, name),))
    return table


_REDUCERS = _event_reducers()


def _dumps(result: ParsedBundle) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _REDUCERS
    pickler.dump(result)
    return buffer.getvalue()


@lru_cache(maxsize=4)
def parsed(name: str) -> ParsedBundle:
    """Scenario ``name``'s bundle parsed, from the cache when its key is there. Only the last
    few stay in memory: the parsed events of 131 recordings made a heap every full garbage
    collection walked and the worker took seconds to free at exit (analyses stay cached)."""
    archive = _archive(name)
    path = _cache_root() / f"{name}-{_key(archive)}.pickle"
    if path.exists():
        # Hundreds of thousands of new objects, none in a cycle: the collector's passes over
        # them were a third of the corpus's loading time (gcpause.py).
        with path.open("rb") as fh, gc_paused():
            return pickle.load(fh)  # type: ignore[no-any-return]
    with open_bundle(archive, workdir=_scratch()) as bundle:
        result = parse_bundle(bundle)
    keep(path, _dumps(result), rf"{re.escape(name)}-[0-9a-f]{{20}}\.pickle")
    return result


@cache
def analysis(name: str) -> AnalysisResult:
    """What ``triton-obs analyze`` reports on scenario ``name``'s bundle."""
    return judged(f"{name}-analysis", [_archive(name)], lambda: analyze_events(parsed(name)))


@cache
def _scratch() -> Path | None:
    """Where a recording is unpacked: in memory (``/dev/shm``) when it has room. Creating a
    file under ``/tmp`` takes 0.48 ms here against 0.02 ms in memory, and the corpus unpacks
    26,603 files: 14 CPU-seconds of a cold run, in a suite of two cores."""
    shm = Path("/dev/shm")
    try:
        free = os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize
    except OSError:
        return None
    return shm if free >= 2 << 30 and os.access(shm, os.W_OK) else None


def _archive(name: str) -> Path:
    return FIXTURES / name / "bundle.tar.gz"


def window(name: str) -> Window:
    """The window ``analyze`` judges scenario ``name``'s bundle in, over its parsed events."""
    p = parsed(name)
    span = _event_range(p.events, p.meta.epoch_minus_monotonic_ns)
    since, until = _bounds(p.meta.started_at, p.meta.ended_at, span)
    assert since is not None and until is not None, name
    offset = p.meta.epoch_minus_monotonic_ns
    return Window(since, until, events=p.events, clock_offset_ns=offset, log_read=p.log_read)


def sliding_window(name: str, at_s: float, evidence_s: float = 20) -> Window:
    """What ``watch`` detects over ``at_s`` seconds into scenario ``name``'s recording: the
    events written by then through the tap (``LiveWindow``), with ``evidence_s`` of evidence
    and a 2 s lookback."""
    whole = window(name)
    at = whole.since_ns + int(at_s * 1e9)
    live = LiveWindow(evidence_s=evidence_s, lookback_s=2)
    live.add("triton.log", [e for e in whole.events if _time_of(e) <= at])
    return live.window(at)


def log_window(name: str) -> Window:
    """Scenario ``name``'s log alone (no /metrics, stats or traces), judged at its last line:
    what ``analyze`` reads when a user hands over only ``triton.log`` (``bundle/loose.py``)."""
    lines = [
        e
        for e in parsed(name).events
        if getattr(e, "header", None) is not None or isinstance(e, ev.StubOutput)
    ]
    stamps = [e.header.at_ns for e in lines if not isinstance(e, ev.StubOutput)]
    assert stamps, name
    return Window(min(stamps), max(stamps), events=lines)


@cache
def log_findings(name: str) -> list[Finding]:
    """What every detector finds in scenario ``name``'s log alone (:func:`log_window`)."""
    return judged(
        f"{name}-log-findings",
        [_archive(name)],
        lambda: run_detectors(default_detectors(), log_window(name)),
    )
