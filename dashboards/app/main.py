"""The script ``streamlit run`` executes: pick the source, open a read-only view, route.

Run through ``triton-obs triage``; the source is passed in the environment (see
``dashboards.app.state``) because ``streamlit run`` owns the command line.
"""

from __future__ import annotations

import streamlit as st

from dashboards.app import state
from dashboards.app.data.source import SourceError, open_view
from dashboards.app.views import bundles, finding, fleet, health, now, shapes, timeline

RENDERERS = {
    "now": now.render,
    "finding": finding.render,
    "timeline": timeline.render,
    "health": health.render,
    "shapes": shapes.render,
}


def _page() -> str:
    """The page from the URL (a pasted link), kept in the sidebar's radio."""
    if "nav" not in st.session_state:
        wanted = st.query_params.get("page", "now")
        st.session_state["nav"] = wanted if wanted in state.PAGES else "now"
    page = str(
        st.sidebar.radio("Page", list(state.PAGES), format_func=state.PAGES.__getitem__, key="nav")
    )
    if st.query_params.get("page") != page:
        st.query_params["page"] = page
    return page


def main() -> None:
    st.set_page_config(page_title="Triton triage", layout="wide")
    page = _page()
    if page == "bundles":
        bundles.render()
        return
    if page == "fleet":  # Prometheus and the pods' watch APIs: no store
        fleet.render()
        return
    source = state.current_source()
    if source is None:
        st.warning(
            "No data source: start the app with `triton-obs triage --store FILE` or "
            "`--bundle DIR`, or open a bundle on the Bundles page."
        )
        return
    st.sidebar.caption("Source")
    st.sidebar.text(source.label or str(source.store))
    try:
        view = open_view(source, clock_offset=state.cached_clock_offset)
    except SourceError as err:
        st.error(f"The store cannot be opened: {err}")
        return
    if view is None:
        st.info(
            "The store is empty: no signals have been collected yet. Start `triton-obs "
            "collect` (or `watch`) against this store, or open a bundle."
        )
        return
    try:
        RENDERERS[page](view)
    finally:
        view.close()


main()
