"""Where the app's data comes from: a store (live or finished) or a bundle analysed into one.

A collector's store is opened read-only (SQLite WAL readers never block the writer). A bundle
is ingested into a store of the app's own, its findings saved there, so every page reads one
kind of thing. "Now" is the wall clock while a collector is writing (the newest event is
recent), else the newest event: a finished recording is shown as it was at its end, where a
hung request is still open.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from observability.analyze import analyze_bundle
from observability.bundle import BundleError, open_bundle
from observability.detectors import Window
from observability.store import Store, StoreError

__all__ = [
    "LIVE_WITHIN_S",
    "WINDOW_S",
    "DataSource",
    "SourceError",
    "View",
    "analyze_bundle_to_store",
    "extract_tarball",
    "open_view",
]

LIVE_WITHIN_S = 30.0
"""A store whose newest event is younger than this is being written: follow the wall clock."""
WINDOW_S = 600.0
"""How far back the pages look from "now" (as ``watch``: the last 10 minutes)."""


class SourceError(RuntimeError):
    """The store or bundle cannot be read; the message says why, plainly."""


@dataclass(frozen=True)
class DataSource:
    """A store to read, with what the store itself does not know."""

    store: Path
    clock_offset_ns: int | None = None
    """``epoch - monotonic`` of the Triton host (a bundle's ``clock``); estimated if None."""
    log: Path | None = None
    """The Triton log the store's byte offsets point into, for exact evidence lines."""
    log_base_offset: int = 0
    """Where ``log`` starts in the original file (a bundle copied from mid-file)."""
    label: str = ""
    notes: tuple[str, ...] = ()


@dataclass
class View:
    """One read-only look at a store, bounded to the window the pages show."""

    source: DataSource
    store: Store
    since_ns: int
    until_ns: int
    """The evaluation instant: an open request is open until here."""
    live: bool
    clock_offset_ns: int | None
    log: Path | None
    newest_ns: int = 0
    log_base_offset: int = 0
    notes: list[str] = field(default_factory=list)

    def window(self) -> Window:
        return Window(
            since_ns=self.since_ns,
            until_ns=self.until_ns,
            store=self.store,
            clock_offset_ns=self.clock_offset_ns,
        )

    def close(self) -> None:
        self.store.close()


def open_view(
    source: DataSource,
    now_ns: int | None = None,
    window_s: float = WINDOW_S,
    clock_offset: Callable[[str, int], int | None] | None = None,
) -> View | None:
    """A view of the store, ``None`` when it holds nothing yet; :class:`SourceError` when it
    cannot be opened. ``clock_offset(store, newest_ns)`` stands in for
    :func:`estimate_clock_offset` on the open store (the app's cached one: the estimate
    decodes every trace span of the store)."""
    try:
        store = Store(source.store, readonly=True)
        span = store.time_range()
    except StoreError as err:
        raise SourceError(str(err)) from None
    if span is None:
        store.close()
        return None
    wall = time.time_ns() if now_ns is None else now_ns
    newest = span[1]
    live = 0 <= wall - newest <= LIVE_WITHIN_S * 1e9
    until = wall if live else newest
    since = max(span[0], until - int(window_s * 1e9))
    log, base = source.log, source.log_base_offset
    if log is None:
        log, base = _log_of_collector(source.store), 0
    offset = source.clock_offset_ns
    view = View(source, store, since, until, live, offset, log, newest, base, list(source.notes))
    if offset is None and clock_offset is not None:
        view.clock_offset_ns = clock_offset(str(source.store), newest)
    elif offset is None:
        view.clock_offset_ns = estimate_clock_offset(store)
    return view


def _log_of_collector(store_path: Path) -> Path | None:
    """The log a live collector tails, from its checkpoint beside the store (collect writes
    ``<store>.tail.json``): the file the stored byte offsets point into."""
    checkpoint = store_path.with_name(store_path.name + ".tail.json")
    try:
        files = json.loads(checkpoint.read_text()).get("files", [])
    except (OSError, ValueError, AttributeError):
        return None
    for entry in files:
        path = Path(str(entry.get("path", "")))
        if path.is_file():
            return path
    return None


def estimate_clock_offset(store: Store, limit: int = 200) -> int | None:
    """``epoch - monotonic`` from requests seen in both the trace file and the log.

    A live store does not record the Triton host's clock; the same request's queue start is
    in both (the log in epoch µs, the trace in monotonic ns), so the median difference puts
    trace stages on the log's time axis within about a millisecond.
    """
    starts: dict[str, int] = {}
    for span in store.trace_spans():
        queued = span.timestamp("QUEUE_START")
        if span.request_id and queued is not None and span.request_id not in starts:
            starts[span.request_id] = queued
        if len(starts) >= limit:
            break
    diffs = []
    seen: set[str] = set()
    for rec in store.log_records(kinds=["RequestStateChange"]):  # one pass, not one per id
        rid = getattr(rec, "request_id", "")
        if rid in starts and rid not in seen and getattr(rec, "to_state", "") == "PENDING":
            seen.add(rid)
            diffs.append(rec.header.at_ns - starts[rid])  # type: ignore[attr-defined]
    return int(statistics.median(diffs)) if diffs else None


def analyze_bundle_to_store(bundle: Path, workdir: Path) -> DataSource:
    """Ingest and analyse a bundle into ``workdir/store.db``; the findings are saved there.

    Raises :class:`SourceError` with a plain reason when the folder is not a bundle or holds
    no signals.
    """
    try:
        meta = open_bundle(bundle).meta
    except (BundleError, OSError, ValueError) as err:
        raise SourceError(f"{bundle} is not a readable bundle: {err}") from None
    workdir.mkdir(parents=True, exist_ok=True)
    store_path = workdir / "store.db"
    try:
        result = analyze_bundle(bundle, store_path=store_path)
        with Store(store_path) as store:
            store.save_findings(result.findings)
    except (BundleError, StoreError, OSError, ValueError) as err:
        raise SourceError(f"analysing {bundle} failed: {err}") from None
    log = bundle / "triton.log"
    return DataSource(
        store=store_path,
        clock_offset_ns=meta.epoch_minus_monotonic_ns,
        log=log if log.is_file() else None,
        log_base_offset=_int(meta.sources.get("log_start_offset")),
        label=f"bundle {bundle}",
        notes=tuple(result.notes),
    )


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def extract_tarball(data: bytes, dest: Path) -> Path:
    """Unpack an uploaded bundle archive with the bundle reader's own checks (no traversal,
    no links, no bombs: see ``observability.bundle.archive``); returns the folder holding
    meta.json."""
    from observability.bundle import BundleError, extract_archive

    dest.mkdir(parents=True, exist_ok=True)
    upload = dest.with_name(dest.name + ".upload")
    try:
        upload.write_bytes(data)
        extract_archive(upload, dest)
    except (BundleError, OSError) as err:
        raise SourceError(f"the upload is not a readable bundle archive: {err}") from None
    finally:
        upload.unlink(missing_ok=True)
    metas = sorted(dest.rglob("meta.json"), key=lambda p: len(p.parts))
    if not metas:
        raise SourceError("the archive holds no meta.json: it is not a bundle")
    return metas[0].parent
