"""Shapes: each output's response sizes over time; growth (x2 over all before) in red."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboards.app import state
from dashboards.app.data.shapes import GROWTH_FACTOR, shape_history
from dashboards.app.data.source import View
from dashboards.app.data.text import cell, chart_text
from dashboards.app.views.common import clock


def render(view: View) -> None:
    st.title("Shapes")
    history = shape_history(state.requests_for(view))
    if not history:
        st.info("No response shapes in this window (Triton logs them at verbose level 1+).")
        return
    keys = sorted(history, key=lambda k: (-sum(p.growth for p in history[k]), k))
    st.dataframe(
        {
            "model": [cell(k[0]) for k in keys],
            "output": [cell(k[1]) for k in keys],
            "responses": [len(history[k]) for k in keys],
            "largest": [str(max(history[k], key=lambda p: p.elements).shape) for k in keys],
            "growth steps": [sum(p.growth for p in history[k]) for k in keys],
        },
        hide_index=True,
        key="shapes_table",
    )
    key = st.selectbox(
        "Output", keys, key="shape_output", format_func=lambda k: cell(f"{k[0]} / {k[1]}")
    )
    points = history[key or keys[0]]
    fig = go.Figure()
    for is_growth, colour, name in ((False, "#1f77b4", "response"), (True, "#d62728", "growth")):
        sel = [p for p in points if p.growth == is_growth]
        fig.add_scatter(
            x=[clock(p.at_ns) for p in sel],
            y=[p.elements for p in sel],
            mode="markers",
            name=name,
            marker_color=colour,
            hovertext=[chart_text(f"{p.request_id} {list(p.shape)}") for p in sel],
        )
    fig.update_layout(
        title=f"Elements per response (growth: > {GROWTH_FACTOR:g}x all before)",
        yaxis_type="log",
        height=360,
        xaxis_type="category",
    )
    st.plotly_chart(fig, key="shape_chart")
    grown = [p for p in points if p.growth]
    if grown:
        st.dataframe(
            {
                "at": [clock(p.at_ns) for p in grown],
                "request": [cell(p.request_id) for p in grown],
                "shape": [str(list(p.shape)) for p in grown],
                "elements": [p.elements for p in grown],
            },
            hide_index=True,
            key="growth_table",
        )
