"""Streamlit glue shared by the pages: the data source, cached loaders and navigation.

The source comes from the environment (``triton-obs triage`` sets it) or from the Bundles
page (kept in the session). Expensive derivations (request lifecycles over the window, all
spans) are cached per store and newest-event time, so a finished store is read once and a
live one is re-read only when it has grown. Navigation lives in the URL's query parameters,
so every page (a finding, a request's timeline) has a link that can be pasted.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import streamlit as st

from dashboards.app.data.source import (
    DataSource,
    SourceError,
    View,
    analyze_bundle_to_store,
    estimate_clock_offset,
)
from observability import events as ev
from observability.detectors.requests import Requests, requests_of
from observability.detectors.signals import Coverage, coverage
from observability.detectors.work import ModelWork, in_flight
from observability.store import Store

__all__ = [
    "ENV_BUNDLE",
    "ENV_LOG",
    "ENV_STORE",
    "PAGES",
    "cached_clock_offset",
    "cached_now",
    "cached_requests",
    "cached_spans",
    "current_source",
    "go",
    "set_source",
]

ENV_STORE = "TRITON_OBS_TRIAGE_STORE"
ENV_BUNDLE = "TRITON_OBS_TRIAGE_BUNDLE"
ENV_LOG = "TRITON_OBS_TRIAGE_LOG"

PAGES = {
    "now": "Now",
    "finding": "Finding",
    "timeline": "Request timeline",
    "health": "Model health",
    "shapes": "Shapes",
    "bundles": "Bundles",
    "fleet": "Fleet",
}


@st.cache_resource(show_spinner="Analysing the bundle…")
def _bundle_source(bundle: str) -> DataSource:
    """A bundle given on the command line, analysed once per server process."""
    workdir = Path(tempfile.mkdtemp(prefix="triton-obs-triage-"))
    return analyze_bundle_to_store(Path(bundle), workdir)


def set_source(source: DataSource) -> None:
    st.session_state["source"] = source


def current_source() -> DataSource | None:
    """The Bundles page's choice, else ``--bundle``, else ``--store``; errors say why."""
    chosen = st.session_state.get("source")
    if isinstance(chosen, DataSource):
        return chosen
    log = os.environ.get(ENV_LOG)
    bundle = os.environ.get(ENV_BUNDLE)
    if bundle:
        try:
            return _bundle_source(bundle)
        except SourceError as err:
            st.error(f"The bundle cannot be opened: {err}")
            return None
    store = os.environ.get(ENV_STORE)
    if store:
        return DataSource(Path(store), log=Path(log) if log else None, label=f"store {store}")
    return None


@st.cache_resource(max_entries=4, show_spinner="Rebuilding request lifecycles…")
def cached_requests(store: str, since_ns: int, until_ns: int, newest_ns: int) -> Requests:
    """Lifecycles of the window; ``newest_ns`` is in the key so a growing store is re-read."""
    from observability.detectors import Window

    with Store(store, readonly=True) as db:
        window = Window(since_ns=since_ns, until_ns=until_ns, store=db)
        return requests_of(window)


@st.cache_resource(max_entries=4, show_spinner="Reading instance lifecycles…")
def cached_now(
    store: str, since_ns: int, until_ns: int, newest_ns: int, clock_offset_ns: int | None
) -> tuple[Coverage, list[ModelWork]]:
    """The window's signals and the work in flight per model and instance (no ids needed)."""
    from observability.detectors import Window

    with Store(store, readonly=True) as db:
        read = db.latest_log_ns() is not None  # a quiet log read before the window
        window = Window(since_ns, until_ns, db, clock_offset_ns=clock_offset_ns, log_read=read)
        return coverage(window), in_flight(window)


def now_for(view: View) -> tuple[Coverage, list[ModelWork]]:
    return cached_now(
        str(view.source.store), view.since_ns, view.until_ns, view.newest_ns, view.clock_offset_ns
    )


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_clock_offset(store: str, newest_ns: int) -> int | None:
    """``epoch - monotonic`` estimated from the store (``open_view``): it decodes every trace
    span and every request's state lines, and ran again on every click of every page (a
    ninth of the app tests' samples on the demo's recording, by py-spy)."""
    with Store(store, readonly=True) as db:
        return estimate_clock_offset(db)


@st.cache_resource(max_entries=4, show_spinner="Reading spans…")
def cached_spans(store: str, newest_ns: int) -> tuple[list[ev.TraceSpan], list[ev.OtlpSpan]]:
    with Store(store, readonly=True) as db:
        return list(db.trace_spans()), list(db.otlp_spans())


def requests_for(view: View) -> Requests:
    return cached_requests(str(view.source.store), view.since_ns, view.until_ns, view.newest_ns)


def spans_for(view: View) -> tuple[list[ev.TraceSpan], list[ev.OtlpSpan]]:
    return cached_spans(str(view.source.store), view.newest_ns)


def go(page: str, **params: str) -> None:
    """Switch page (a button callback): the URL changes, so the page can be linked."""
    st.query_params.clear()
    st.query_params["page"] = page
    for key, value in params.items():
        st.query_params[key] = value
    st.session_state["nav"] = page
