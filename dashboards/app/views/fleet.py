"""Fleet: which pods have findings now (from Prometheus), then one pod from its ``watch``.

Needs no store: the Prometheus URL comes from ``TRITON_OBS_TRIAGE_PROMETHEUS`` (or the box on
the page), the watch of a pod from ``TRITON_OBS_TRIAGE_WATCH``: one URL (one watch for all),
a template (``http://{pod}.triton.{namespace}.svc:9464``) or a map
(``ns/pod=URL,ns/pod=URL``). Both can be changed on the page; the choices live in the URL.
"""

from __future__ import annotations

import os
import urllib.parse

import streamlit as st

from dashboards.app.data import fleet as fl
from dashboards.app.data.text import cell
from dashboards.app.views.common import show_text

ENV_PROMETHEUS = "TRITON_OBS_TRIAGE_PROMETHEUS"
ENV_WATCH = "TRITON_OBS_TRIAGE_WATCH"


def _columns(rows: list[dict[str, object]]) -> dict[str, list[object]]:
    """Rows as the column table ``st.dataframe`` takes (the other pages' form)."""
    return {name: [r[name] for r in rows] for name in (rows[0] if rows else {})}


def _setting(key: str, env: str, label: str, help_: str) -> str:
    if key not in st.session_state:
        st.session_state[key] = str(st.query_params.get(key, os.environ.get(env, "")))
    value = str(st.text_input(label, key=key, help=help_)).strip()
    if value and st.query_params.get(key) != value:
        st.query_params[key] = value
    return value


def render() -> None:
    st.title("Fleet")
    prom = _setting(
        "prometheus", ENV_PROMETHEUS, "Prometheus URL",
        "The Prometheus that scrapes every watch (its triton_obs_findings)",
    )  # fmt: skip
    spec = _setting(
        "watch", ENV_WATCH, "watch API: one URL, a template with {namespace} and {pod}, or "
        "ns/pod=URL,…", "Where each pod's findings, timelines and health are read",
    )  # fmt: skip
    if not prom:
        st.info(
            f"Give the Prometheus URL above (or start the app with {ENV_PROMETHEUS} set): the "
            "fleet's findings are read from it."
        )
        return
    got = fl.fleet_findings(prom)
    if not got.ok:
        st.error("Prometheus cannot be read:")
        show_text(got.error)
        return
    pods: list[fl.PodFindings] = got.data
    st.text(cell(f"From {prom}: {fl.FINDINGS_QUERY}"))
    if not pods:
        st.success("No pod has an active finding now.")
        return
    st.subheader(f"Pods with findings now ({len(pods)})")
    st.dataframe(
        _columns(
            [
                {
                    "namespace": cell(p.namespace),
                    "pod": cell(p.pod),
                    "findings": p.findings,
                    "critical": p.critical,
                    "warning": p.warning,
                    "kinds": cell(", ".join(p.kinds)),
                    "models": cell(", ".join(p.models)),
                }
                for p in pods
            ]
        ),
        hide_index=True,
        key="fleet_pods",
    )
    labels = [f"{p.namespace}/{p.pod}" if p.namespace else p.pod for p in pods]
    wanted = str(st.query_params.get("pod", ""))
    index = labels.index(wanted) if wanted in labels else 0
    choice = st.selectbox("Open a pod", labels, index=index, key="fleet_pod", format_func=cell)
    if choice is None:
        return
    if st.query_params.get("pod") != choice:
        st.query_params["pod"] = choice
    _pod(pods[labels.index(choice)], spec)


def _pod(pod: fl.PodFindings, spec: str) -> None:
    st.header("One pod")
    st.text(cell(f"{pod.namespace}/{pod.pod}"))
    base = fl.watch_url_for(pod.namespace, pod.pod, spec)
    if base is None:
        st.warning("No watch URL for this pod: give one above (a URL, template or map).")
        return
    target = fl.pod_target(base, pod.namespace, pod.pod)
    if not target.ok:
        st.error("The pod's watch cannot be read:")
        show_text(target.error)
        return
    name = str(target.data)
    st.text(cell(f"from the watch at {base}, its target {name}"))
    found = fl.watch_get(base, "findings", target=name, limit="100")
    if not found.ok:
        st.error("The pod's findings cannot be read:")
        show_text(found.error)
        return
    findings = sorted(
        found.data.get("findings", []), key=lambda f: fl.severity_rank(str(f.get("severity")))
    )
    st.subheader("Findings")
    if found.data.get("truncated"):
        st.text(cell(f"The newest 100 of {found.data.get('total')}."))
    if findings:
        st.dataframe(
            _columns(
                [
                    {
                        "severity": cell(f.get("severity")),
                        "kind": cell(f.get("kind")),
                        "model": cell(f.get("model")),
                        "request": cell(f.get("request_id") or ""),
                        "last seen": cell(f.get("last_seen")),
                        "summary": cell(f.get("summary")),
                    }
                    for f in findings
                ]
            ),
            hide_index=True,
            key="fleet_findings",
        )
        first = findings[0]
        st.caption("The most severe, in full:")
        show_text(f"{first.get('summary', '')}\n\n{first.get('advice', '')}")
    else:
        st.info("The watch holds no active finding for this pod now (Prometheus lags a scrape).")
    _timeline(base, name, findings)
    _health(base, name)


def _timeline(base: str, target: str, findings: list[dict]) -> None:
    ids = sorted({str(f["request_id"]) for f in findings if f.get("request_id")})
    st.subheader("Request timeline")
    if not ids:
        st.caption("No finding names a request.")
        return
    rid = st.selectbox("Request", ids, key="fleet_request", format_func=cell)
    if rid is None:
        return
    path = "requests/" + urllib.parse.quote(rid, safe="")
    got = fl.watch_get(base, path, target=target, limit="200")
    if not got.ok:
        st.error("The request's timeline cannot be read:")
        show_text(got.error)
        return
    records = got.data.get("records", [])
    st.dataframe(
        _columns(
            [
                {
                    "at": cell(r.get("at")),
                    "event": cell(r.get("event")),
                    "model": cell(r.get("model") or ""),
                    "from": cell(r.get("from_state") or ""),
                    "to": cell(r.get("to_state") or ""),
                    "log offset": r.get("offset"),
                }
                for r in records
            ]
        ),
        hide_index=True,
        key="fleet_timeline",
    )


def _health(base: str, target: str) -> None:
    st.subheader("Model health (at the watch's last pass)")
    got = fl.watch_get(base, "health", target=target, limit="100")
    if not got.ok:
        st.error("The pod's health cannot be read:")
        show_text(got.error)
        return
    models = got.data.get("models", [])
    if not models:
        st.caption("The watch's window holds no model yet.")
        return
    st.dataframe(
        _columns(
            [
                {
                    "model": cell(m.get("model")),
                    "in flight": m.get("in_flight"),
                    "busy instances": m.get("busy_instances"),
                    "queued": m.get("queued"),
                    "pending": m.get("pending"),
                    "oldest (s)": m.get("oldest_s"),
                    "last seen": cell(m.get("last_seen") or ""),
                }
                for m in models
            ]
        ),
        hide_index=True,
        key="fleet_health",
    )
