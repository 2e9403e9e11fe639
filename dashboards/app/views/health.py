"""Model health: one model at a time over a chosen window, every signal on one time axis."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboards.app.data import health
from dashboards.app.data.source import View
from dashboards.app.data.text import cell
from dashboards.app.views.common import clock
from observability import events as ev

WINDOWS = {"1 min": 60, "5 min": 300, "15 min": 900, "1 h": 3600, "whole window": None}


def _line(title: str, series: dict[str, list[tuple[int, float]]], unit: str) -> go.Figure:
    fig = go.Figure()
    for name, pts in series.items():
        fig.add_scatter(
            x=[clock(t) for t, _ in pts], y=[v for _, v in pts], mode="lines", name=name
        )
    fig.update_layout(
        title=title, height=260, margin={"t": 40, "b": 0}, yaxis_title=unit, xaxis_type="category"
    )
    return fig


def render(view: View) -> None:
    st.title("Model health")
    span = st.select_slider(
        "Window (back from now)", list(WINDOWS), value="whole window", key="health_window"
    )
    seconds = WINDOWS[span]
    since = (
        view.since_ns if seconds is None else max(view.since_ns, view.until_ns - seconds * 10**9)
    )
    until, db = view.until_ns, view.store
    rates = health.throughput(db, since, until)
    latency = health.latency_by_stage(db, since, until)
    queued = health.pending(db, since, until)
    bls = health.bls_capacity(db, since, until)
    models = sorted(set(rates) | set(latency) | set(queued) | set(bls) - {""})
    if not models:
        st.info("No Triton metrics in this window: is the collector scraping /metrics?")
        return
    model = st.selectbox("Model", models, key="health_model", format_func=cell)
    if model is None:  # only with index=None: models is not empty
        return
    charts = [
        _line("Throughput", {"inferences/s": rates.get(model, [])}, "per s"),
        _line("Latency per request by stage", latency.get(model, {}), "ms"),
        _line("Pending requests", {"pending": queued.get(model, [])}, "requests"),
    ]
    records = db.log_records(
        kinds=["InstanceExecuting", "InstanceReleased"], since_ns=since, until_ns=until + 1
    )
    busy = health.busy_ratio(
        (r for r in records if isinstance(r, (ev.InstanceExecuting, ev.InstanceReleased))),
        since,
        until,
    )
    charts.append(_line("Instance busy ratio (from the log)", {"busy": busy.get(model, [])}, ""))
    if model in bls:
        charts.append(_line("BLS calls in flight vs thread-pool capacity", bls[model], "calls"))
    cols = st.columns(2)
    for i, fig in enumerate(charts):
        cols[i % 2].plotly_chart(fig, key=f"health_{i}")
