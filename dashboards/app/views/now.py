"""Now: what is wrong at this moment, most severe first, and which requests are stuck.

While a collector writes to the store the page re-reads it every few seconds (a fragment,
so the rest of the app is not re-run); a finished store or bundle is shown as of its end.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboards.app import state
from dashboards.app.data import findings as fd
from dashboards.app.data.inflight import oldest_in_flight
from dashboards.app.data.source import DataSource, SourceError, View, open_view
from dashboards.app.data.text import cell, chart_text
from dashboards.app.views.common import SEVERITY_COLOURS, clock, show_text
from observability.detectors.signals import Coverage
from observability.detectors.work import ModelWork
from observability.report import WORK_COLUMNS, work_rows

REFRESH_S = 5


def render(view: View) -> None:
    st.title("Now")
    if view.live and st.sidebar.toggle("Auto-refresh", value=True, key="auto_refresh"):
        _live(view.source)
    else:
        _body(view)


@st.fragment(run_every=REFRESH_S)
def _live(source: DataSource) -> None:
    """Re-open the store on every tick: a read-only snapshot that never blocks the writer."""
    try:
        view = open_view(source, clock_offset=state.cached_clock_offset)
    except SourceError as err:
        st.error(f"The store cannot be opened: {err}")
        return
    if view is None:
        st.info("The store is empty: no signals have been collected yet.")
        return
    try:
        _body(view)
    finally:
        view.close()


def _body(view: View) -> None:
    mode = "live, refreshed every 5 s" if view.live else "as of the newest event in the store"
    st.caption(f"Now is {clock(view.until_ns)} UTC ({mode}); window from {clock(view.since_ns)}.")
    findings = fd.load_findings(view.store)
    signals, work = state.now_for(view)
    _findings(findings, signals)
    _work(work, signals)
    _in_flight(view)
    if findings:
        _charts(findings)


def _open_finding(key: str, ids: list[str]) -> None:
    rows = st.session_state[key].selection.rows
    if rows:
        state.go("finding", finding=ids[rows[0]])


def _findings(findings: list, signals: Coverage) -> None:
    st.subheader("Findings")
    caveats = signals.lines()
    if caveats:
        st.warning("What these signals cannot show:\n\n" + "\n".join(f"- {c}" for c in caveats))
    if not findings:
        if signals.blind:
            st.info("No findings among the kinds these signals can show (see above).")
        else:
            st.success("No findings: the detectors see nothing wrong in this store.")
        return
    sev = fd.counts(findings, "severity")
    cols = st.columns(3)
    for col, name in zip(cols, ("critical", "warning", "info"), strict=True):
        col.metric(name.capitalize(), sev.get(name, 0))
    rows = fd.rows(findings)
    ids = [r.id for r in rows]
    table = {
        "severity": [r.severity for r in rows],
        "kind": [r.kind for r in rows],
        "model": [cell(r.model) for r in rows],
        "request": [cell(r.request_id) for r in rows],
        "first seen": [r.first_seen[11:23] for r in rows],
        "last seen": [r.last_seen[11:23] for r in rows],
        "summary": [cell(r.summary) for r in rows],
    }
    st.caption("Click a row to open the finding.")
    st.dataframe(
        table,
        hide_index=True,
        key="findings_table",
        on_select=lambda: _open_finding("findings_table", ids),
        selection_mode="single-row",
    )
    pick = st.selectbox(
        "Or choose a finding",
        range(len(rows)),
        key="finding_pick",
        format_func=lambda i: cell(
            f"{rows[i].severity} · {rows[i].kind} · {rows[i].model} · {rows[i].request_id or '-'}"
        ),
    )
    st.button(
        "Open finding",
        key="open_finding",
        on_click=state.go,
        args=("finding",),
        kwargs={"finding": ids[pick or 0]},
    )


def _charts(findings: list) -> None:
    st.subheader("Findings by kind and model")
    by_kind: dict[tuple[str, str], int] = {}
    for f in findings:
        by_kind[(f.kind, f.severity.value)] = by_kind.get((f.kind, f.severity.value), 0) + 1
    left, right = st.columns(2)
    fig = go.Figure()
    for severity, colour in SEVERITY_COLOURS.items():
        kinds = [k for (k, s) in by_kind if s == severity]
        if kinds:
            fig.add_bar(
                x=kinds,
                y=[by_kind[(k, severity)] for k in kinds],
                name=severity,
                marker_color=colour,
            )
    fig.update_layout(barmode="stack", title="By kind", height=300, margin={"t": 40, "b": 0})
    left.plotly_chart(fig, key="by_kind")
    models = fd.counts(findings, "model")
    fig = go.Figure(
        go.Bar(x=[chart_text(m) for m in models], y=list(models.values()), marker_color="#7f7f7f")
    )
    fig.update_layout(title="By model", height=300, margin={"t": 40, "b": 0})
    right.plotly_chart(fig, key="by_model")


def _open_request(key: str, ids: list[str]) -> None:
    rows = st.session_state[key].selection.rows
    if rows:
        state.go("timeline", request=ids[rows[0]])


def _work(work: list[ModelWork], signals: Coverage) -> None:
    """Per model and instance, from instance lifecycles and the pending gauge: shown whether
    or not the requests carry ids."""
    st.subheader("Work in flight per model and instance")
    rows = work_rows(work)
    if rows:
        st.dataframe(
            {col: [cell(r[i]) for r in rows] for i, col in enumerate(WORK_COLUMNS)},
            hide_index=True,
            key="work_table",
        )
        st.caption(
            "From the verbose log's instance lines (requests need no id) and "
            "nv_inference_pending_request_count on /metrics."
        )
    elif signals.state("verbose_log") == "missing" and signals.state("metrics") == "missing":
        st.warning("Work in flight cannot be seen: neither the verbose log nor /metrics is read.")
    else:
        st.success("Nothing is executing or queued at this moment.")


def _in_flight(view: View) -> None:
    oldest = oldest_in_flight(state.requests_for(view), view.until_ns)
    if not oldest:
        return  # requests without ids are in the table above
    st.subheader("Oldest in-flight requests")
    ids = [r.request_id for r in oldest]
    show_text(
        "\n".join(
            f"{r.request_id} → {r.model}: {r.state} for {r.age_s:.1f} s, "
            f"{r.open_children} open BLS call(s)"
            for r in oldest[:3]
        )
    )
    st.caption("Click a row to open the request's timeline.")
    st.dataframe(
        {
            "request": [cell(i) for i in ids],
            "model": [cell(r.model) for r in oldest],
            "state": [r.state for r in oldest],
            "instance": [cell(r.instance) for r in oldest],
            "age (s)": [round(r.age_s, 1) for r in oldest],
            "open BLS calls": [r.open_children for r in oldest],
            "since": [clock(r.started_ns) for r in oldest],
        },
        hide_index=True,
        key="inflight_table",
        selection_mode="single-row",
        on_select=lambda: _open_request("inflight_table", ids),
    )
    pick = st.selectbox("Or choose a request", ids, key="request_pick", format_func=cell)
    st.button(
        "Open timeline",
        key="open_timeline",
        on_click=state.go,
        args=("timeline",),
        kwargs={"request": pick or ids[0]},
    )
