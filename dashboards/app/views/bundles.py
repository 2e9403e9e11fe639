"""Bundles: open a bundle folder or upload a .tar.gz, analyse it, then use the other pages.

The bundle is ingested into a store of its own in a temporary folder (never the collector's
store), its findings saved there; the choice lasts for this browser session.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from dashboards.app import state
from dashboards.app.data.source import SourceError, analyze_bundle_to_store, extract_tarball
from dashboards.app.views.common import show_text


def _open(root: Path, workdir: Path) -> None:
    try:
        with st.spinner("Ingesting and analysing the bundle…"):
            source = analyze_bundle_to_store(root, workdir)
    except SourceError as err:
        st.error("The bundle could not be analysed:")
        show_text(str(err))
        return
    state.set_source(source)
    st.success("Bundle analysed: the other pages now show it.")
    if source.notes:
        st.caption("Notes from reading the bundle:")
        show_text("\n".join(source.notes))


def render() -> None:
    st.title("Bundles")
    folder = st.text_input("Bundle folder on this machine", key="bundle_dir")
    if st.button("Analyse folder", key="analyse_dir") and folder:
        path = Path(folder).expanduser()
        if not path.is_dir():
            st.error("That folder does not exist on the machine running the app.")
        else:
            _open(path, Path(tempfile.mkdtemp(prefix="triton-obs-triage-")))
    upload = st.file_uploader("Or upload a bundle (.tar.gz)", type=["gz", "tgz"], key="upload")
    if upload is not None and st.button("Analyse upload", key="analyse_upload"):
        workdir = Path(tempfile.mkdtemp(prefix="triton-obs-triage-"))
        try:
            root = extract_tarball(upload.getvalue(), workdir / "bundle")
        except SourceError as err:
            st.error("The upload could not be opened:")
            show_text(str(err))
            return
        _open(root, workdir)
    current = st.session_state.get("source")
    if current is not None:
        st.caption("Showing:")
        show_text(current.label)
