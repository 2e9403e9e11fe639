"""Request timeline: one request's waterfall, BLS children under it, open calls in red.

Searching by a request id, an OTLP trace id (32 hex digits) or a Triton trace id (an
integer) all land on the client request. Times are milliseconds from the request's first
event; an open call is drawn to "now" so a hang is the longest red bar on the page.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboards.app import state
from dashboards.app.data.source import View
from dashboards.app.data.text import cell, chart_text
from dashboards.app.data.timeline import Timeline, build_timeline, resolve
from dashboards.app.views.common import clock, show_text

STAGE_COLOURS = {
    "queue": "#bdbdbd",
    "execute": "#1f77b4",
    "compute input": "#9ecae1",
    "compute infer": "#3182bd",
    "compute output": "#08519c",
    "execute (model)": "#6baed6",
    "bls call": "#9467bd",
    "callback": "#ff7f0e",
}
OPEN_COLOUR = "#d62728"


def render(view: View) -> None:
    st.title("Request timeline")
    if "request_query" not in st.session_state:
        st.session_state["request_query"] = st.query_params.get("request", "")
    query = st.text_input(
        "Request id or trace id",
        key="request_query",
        placeholder="demo-hang-0, an OTLP trace id or a Triton trace id",
    )
    if not query:
        st.info("Enter a request id or a trace id, or open one from the Now page.")
        return
    requests = state.requests_for(view)
    trace_spans, otlp_spans = state.spans_for(view)
    root = resolve(query, requests, trace_spans, otlp_spans)
    if root is None:
        st.warning("No request or trace with that id in the store's window.")
        show_text(query)
        return
    if st.query_params.get("request") != query:
        st.query_params["request"] = query
    tl = build_timeline(
        root, requests, trace_spans, otlp_spans, view.until_ns, view.clock_offset_ns
    )
    if not tl.bars:
        st.warning("The request is known but none of its stages is in the window.")
        return
    st.caption(
        f"Request (ids are shown as text below), from {clock(tl.start_ns)} UTC to now "
        f"{clock(tl.now_ns)} UTC."
    )
    show_text(root)
    _open_calls(tl)
    st.plotly_chart(_figure(tl), key="waterfall")
    if view.clock_offset_ns is None:
        st.caption("Trace-file stages are not drawn: the Triton host's clock is unknown.")
    _table(tl)
    _ids(tl)


def _open_calls(tl: Timeline) -> None:
    opened = tl.open_bars
    if not opened:
        st.success("Every call of this request finished.")
        return
    st.error(f"{len(opened)} call(s) still open at now, drawn in red to now:")
    show_text(
        "\n".join(
            f"{b.request_id} → {b.model} ({b.stage}, {b.source}): "
            f"open for {(tl.now_ns - b.start_ns) / 1e9:.1f} s. {b.note}"
            for b in opened
        )
    )


def _figure(tl: Timeline) -> go.Figure:
    t0 = tl.start_ns
    lanes = tl.lanes()
    fig = go.Figure()
    groups: dict[str, list] = {}
    for bar in tl.bars:
        groups.setdefault("open (now)" if bar.open else bar.stage, []).append(bar)
    for name, bars in groups.items():
        colour = OPEN_COLOUR if name == "open (now)" else STAGE_COLOURS.get(name, "#7f7f7f")
        fig.add_bar(
            y=[chart_text(b.lane) for b in bars],
            x=[max((b.end_ns - b.start_ns) / 1e6, 0.05) for b in bars],
            base=[(b.start_ns - t0) / 1e6 for b in bars],
            orientation="h",
            name=chart_text(name),
            marker_color=colour,
            hovertext=[
                chart_text(f"{b.stage} {(b.end_ns - b.start_ns) / 1e6:.2f} ms {b.note}")
                for b in bars
            ],
        )
    fig.add_vline(
        x=(tl.now_ns - t0) / 1e6, line_dash="dot", line_color=OPEN_COLOUR, annotation_text="now"
    )
    fig.update_layout(
        barmode="overlay",
        height=120 + 28 * len(lanes),
        margin={"t": 30, "b": 30, "l": 10},
        xaxis_title="ms since the request's first event",
        yaxis={
            "categoryorder": "array",
            "categoryarray": [chart_text(lane) for lane in lanes[::-1]],
            "type": "category",
        },
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    return fig


def _table(tl: Timeline) -> None:
    t0 = tl.start_ns
    bars = sorted(tl.bars, key=lambda b: (b.start_ns, b.depth))
    st.dataframe(
        {
            "request": [cell(b.request_id) for b in bars],
            "model": [cell(b.model) for b in bars],
            "stage": [cell(b.stage) for b in bars],
            "source": [b.source for b in bars],
            "start (ms)": [round((b.start_ns - t0) / 1e6, 3) for b in bars],
            "duration (ms)": [round((b.end_ns - b.start_ns) / 1e6, 3) for b in bars],
            "open": ["OPEN" if b.open else "" for b in bars],
            "note": [cell(b.note) for b in bars],
        },
        hide_index=True,
        key="timeline_table",
    )


def _ids(tl: Timeline) -> None:
    if tl.otlp_trace_ids or tl.triton_trace_ids:
        st.markdown("**Trace ids**")
        lines = [f"otlp   {t}" for t in tl.otlp_trace_ids]
        lines += [f"triton {t}" for t in tl.triton_trace_ids]
        show_text("\n".join(lines))
