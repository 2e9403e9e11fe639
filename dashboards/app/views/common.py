"""Small rendering helpers the pages share: times, and text that stays text."""

from __future__ import annotations

from datetime import datetime, timezone

import streamlit as st

from dashboards.app.data.text import plain

__all__ = ["SEVERITY_COLOURS", "clock", "show_text"]

SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#1f77b4"}


def clock(at_ns: int) -> str:
    """UTC wall time to the millisecond: what Triton's log shows, so lines can be found."""
    return datetime.fromtimestamp(at_ns / 1e9, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def show_text(text: str) -> None:
    """Untrusted text (log lines, ids, messages) as a plain code block: never markdown or
    HTML, controls made visible, long lines cut."""
    st.code(plain(text), language=None, wrap_lines=True)
