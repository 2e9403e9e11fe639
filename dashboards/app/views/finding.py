"""Finding: what was found, why it matters, and the evidence to check it yourself.

Evidence from the log is shown as the exact lines read back from the log file at the cited
byte offset (the detector's one-line excerpt when the file is not at hand), always as text.
"""

from __future__ import annotations

import re

import plotly.graph_objects as go
import streamlit as st

from dashboards.app import state
from dashboards.app.data import findings as fd
from dashboards.app.data.metrics import gauge
from dashboards.app.data.source import View
from dashboards.app.data.text import cell, chart_text
from dashboards.app.views.common import clock, show_text
from observability.findings import Finding

AROUND_S = 60
_TRACE_REF = re.compile(r"\btrace ([0-9a-f]{32})\b")


def render(view: View) -> None:
    st.title("Finding")
    findings = fd.load_findings(view.store)
    if not findings:
        st.info("The store holds no findings.")
        return
    by_id = {fd.finding_id(f): f for f in findings}
    wanted = st.query_params.get("finding", "")
    finding = by_id.get(wanted)
    if finding is None:
        if wanted:
            st.warning("That finding is not in this store (any more); choose another.")
        ids = list(by_id)
        pick = st.selectbox(
            "Finding", ids, key="finding_choice", format_func=lambda i: _label(by_id[i])
        )
        finding = by_id[pick or ids[0]]
    _header(finding)
    _evidence(view, finding)
    _chart(view, finding)
    _traces(finding)
    _related(findings, finding)


def _label(f: Finding) -> str:
    return cell(f"{f.severity.value} · {f.kind} · {f.model} · {f.request_id or '-'}")


def _header(f: Finding) -> None:
    st.subheader(
        f":{'red' if f.severity.value == 'critical' else 'orange'}[{f.severity.value}] {f.kind}"
    )
    st.caption(f"first seen {clock(f.first_seen_ns)} UTC, last seen {clock(f.last_seen_ns)} UTC")
    facts = [f"model:    {f.model}"]
    if f.instance:
        facts.append(f"instance: {f.instance}")
    if f.request_id:
        facts.append(f"request:  {f.request_id}")
    if f.trace_id:
        facts.append(f"trace:    {f.trace_id}")
    show_text("\n".join(facts))
    st.markdown("**Summary**")
    show_text(f.summary)
    st.markdown("**Advice**")
    show_text(f.advice)
    if f.request_id:
        st.button(
            "Open the request timeline",
            key="to_timeline",
            on_click=state.go,
            args=("timeline",),
            kwargs={"request": f.request_id},
        )


def _evidence(view: View, f: Finding) -> None:
    st.markdown("**Evidence**")
    if not f.evidence:
        st.caption("The detector cited no evidence.")
    for i, ev in enumerate(f.evidence):
        st.caption(f"{i + 1}. {ev.source} at {clock(ev.at_ns)} UTC")
        show_text(ev.ref)
        offset = fd.log_offset(ev.ref) if ev.source == "log" else None
        exact = fd.log_excerpt(view.log, offset, view.log_base_offset) if offset else None
        if exact is not None:
            st.caption("the log at this offset:")
            show_text(exact)
            if ev.detail and not exact.startswith(ev.detail[:40]):
                show_text(ev.detail)
        else:
            show_text(ev.detail)


def _chart(view: View, f: Finding) -> None:
    since = f.first_seen_ns - AROUND_S * 10**9
    until = max(f.last_seen_ns, f.first_seen_ns) + AROUND_S * 10**9
    fig = go.Figure()
    for name in fd.metric_names_for(f):
        for model, points in gauge(view.store, name, since, until, model=f.model).items():
            if points:
                fig.add_scatter(
                    x=[clock(t) for t, _ in points],
                    y=[v for _, v in points],
                    mode="lines",
                    name=chart_text(f"{name} {model}"),
                )
    if not fig.data:
        st.caption("No metric samples for this model around the finding.")
        return
    for at in {f.first_seen_ns, f.last_seen_ns}:
        fig.add_vline(x=clock(at), line_dash="dot", line_color="#d62728")
    fig.update_layout(
        title=f"Metrics around the finding (±{AROUND_S} s)",
        height=320,
        margin={"t": 40, "b": 0},
        xaxis_type="category",
    )
    st.plotly_chart(fig, key="finding_metrics")


def _traces(f: Finding) -> None:
    ids = {f.trace_id} if f.trace_id else set()
    for ev in f.evidence:
        ids.update(_TRACE_REF.findall(ev.ref))
    if not ids:
        return
    st.markdown("**Trace ids**")
    for tid in sorted(ids):
        left, right = st.columns([4, 1])
        with left:
            show_text(tid)
        right.button(
            "Timeline",
            key=f"trace_{tid}",
            on_click=state.go,
            args=("timeline",),
            kwargs={"request": tid},
        )


def _related(findings: list[Finding], f: Finding) -> None:
    others = fd.related(findings, f)
    st.markdown("**Related findings**")
    if not others:
        st.caption("None: no other finding about this request or this model at this time.")
        return
    st.dataframe(
        {
            "severity": [o.severity.value for o in others],
            "kind": [o.kind for o in others],
            "model": [cell(o.model) for o in others],
            "request": [cell(o.request_id or "") for o in others],
            "summary": [cell(o.summary) for o in others],
        },
        hide_index=True,
        key="related_table",
    )
    ids = [fd.finding_id(o) for o in others]
    pick = st.selectbox(
        "Related finding",
        range(len(others)),
        key="related_pick",
        format_func=lambda i: _label(others[i]),
    )
    st.button(
        "Open related finding",
        key="open_related",
        on_click=state.go,
        args=("finding",),
        kwargs={"finding": ids[pick or 0]},
    )
