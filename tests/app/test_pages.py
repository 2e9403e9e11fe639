"""Every page of the triage app against the real faulty recording, through AppTest."""

from __future__ import annotations

import re

from dashboards.app.data.findings import finding_id, load_findings
from observability.store import Store
from tests.app.conftest import AppStore
from tests.app.helpers import run_page, texts

HUNG = "demo-hang-0"


def _finding(store: AppStore, kind: str, request_id: str) -> str:
    with Store(store.store, readonly=True) as db:
        found = [f for f in load_findings(db) if f.kind == kind and f.request_id == request_id]
    assert found, f"no {kind} finding for {request_id}"
    return finding_id(found[0])


def test_now_shows_the_hung_request_first(monkeypatch, faulty_store: AppStore) -> None:
    at = run_page(monkeypatch, faulty_store.store, "now", faulty_store.log)
    findings, work, inflight = (d.value for d in at.dataframe[:3])
    assert HUNG in set(findings["request"])
    assert HUNG in work.loc[work["model"] == "router", "requests"].iloc[0]
    assert set(findings["severity"]) <= {"critical", "warning", "info"}
    assert inflight["request"].iloc[0] == HUNG  # the oldest open request
    assert inflight["open BLS calls"].iloc[0] >= 1
    assert len(at.get("plotly_chart")) == 2


def test_now_without_request_ids_shows_what_holds_each_instance(
    monkeypatch, faulty_none_store: AppStore
) -> None:
    """The id-less outage: the page used to say "No request is in flight at this moment"
    while router, detector and generate each had an instance held."""
    at = run_page(monkeypatch, faulty_none_store.store, "now", faulty_none_store.log)
    work = at.dataframe[1].value
    held = work[work["state"].str.startswith("executing")]
    assert {"router", "detector", "generate"} <= set(held["model"])
    assert all("without id" in r for r in held["requests"])
    generate = work[work["model"] == "generate"].iloc[0]
    assert generate["queued (log)"] == "3" and generate["pending"] == "3"
    assert "No request is in flight" not in texts(at)
    assert "carry no request id" in " ".join(w.value for w in at.warning)
    assert len(at.dataframe) == 2  # no id-based request table: there are no ids


def test_one_click_opens_a_finding(monkeypatch, faulty_store: AppStore) -> None:
    at = run_page(monkeypatch, faulty_store.store, "now", faulty_store.log)
    at.button(key="open_finding").click().run()
    assert not at.exception
    assert at.query_params["page"] in ("finding", ["finding"])
    assert at.title[0].value == "Finding"


def test_finding_shows_exact_log_lines_chart_and_links(monkeypatch, faulty_store) -> None:
    fid = _finding(faulty_store, "hung_request", HUNG)
    at = run_page(monkeypatch, faulty_store.store, "finding", faulty_store.log, finding=fid)
    shown = texts(at)
    assert f"[request id: {HUNG}] Setting state from PENDING to EXECUTING" in shown
    code = "\n".join(c.value for c in at.code)
    # The glog header of the recorded line ("I1123 21:11:55.789665 4980 ..."), whatever the day.
    assert re.search(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} ", code, re.M), (
        "the exact log line, read from the log"
    )
    assert "bls_call_hung" in shown, "the related hung BLS call finding"
    assert at.get("plotly_chart"), "metric values around the finding"
    at.button(key="to_timeline").click().run()
    assert not at.exception
    assert at.title[0].value == "Request timeline"
    assert f"{HUNG}.detector" in texts(at)


def _hung_trace_id(store: AppStore) -> str:
    """The OTLP trace id of the hung BLS call, as this recording's watchdog reported it."""
    with Store(store.store, readonly=True) as db:
        found = [
            f for f in load_findings(db)
            if f.kind == "bls_call_hung" and f.request_id == HUNG and f.trace_id
        ]  # fmt: skip
    assert found, "the recording has no bls_call_hung finding with a trace id"
    return str(found[0].trace_id)


def test_finding_trace_ids(monkeypatch, faulty_store: AppStore) -> None:
    fid = _finding(faulty_store, "bls_call_hung", HUNG)
    at = run_page(monkeypatch, faulty_store.store, "finding", faulty_store.log, finding=fid)
    assert _hung_trace_id(faulty_store) in texts(at)


def test_timeline_draws_the_open_child_call(monkeypatch, faulty_store: AppStore) -> None:
    at = run_page(monkeypatch, faulty_store.store, "timeline", faulty_store.log, request=HUNG)
    table = at.dataframe[0].value
    open_rows = table[table["open"] == "OPEN"]
    assert f"{HUNG}.detector" in set(open_rows["request"])
    assert HUNG in set(open_rows["request"])
    assert f"{HUNG}.classifier" in set(table["request"]), "finished children are drawn too"
    assert "call(s) still open" in at.error[0].value
    assert f"{HUNG}.detector" in at.code[1].value
    fig = at.get("plotly_chart")[0].proto.spec
    assert f"{HUNG}.detector" in fig and "open (now)" in fig


def test_timeline_of_a_finished_request_has_triton_stages(monkeypatch, faulty_store) -> None:
    at = run_page(monkeypatch, faulty_store.store, "timeline", request="demo-slow-0")
    table = at.dataframe[0].value
    assert {"queue", "compute input", "compute infer", "compute output"} <= set(table["stage"])
    assert {"demo-slow-0.detector", "demo-slow-0.classifier"} <= set(table["request"])
    assert not (table["open"] == "OPEN").any()


def test_timeline_search_by_trace_id(monkeypatch, faulty_store: AppStore) -> None:
    at = run_page(monkeypatch, faulty_store.store, "timeline", request=_hung_trace_id(faulty_store))
    assert at.code[0].value == HUNG
    at.text_input(key="request_query").set_value("no-such-request").run()
    assert "No request or trace" in at.warning[0].value


def test_model_health(monkeypatch, faulty_store: AppStore) -> None:
    at = run_page(monkeypatch, faulty_store.store, "health")
    assert "router" in at.selectbox(key="health_model").options
    at.selectbox(key="health_model").set_value("router").run()
    assert not at.exception
    titles = " ".join(c.proto.spec for c in at.get("plotly_chart"))
    for title in ("Throughput", "Latency per request", "Pending", "busy ratio", "thread-pool"):
        assert title in titles


def test_shapes_highlight_growth(monkeypatch, faulty_store: AppStore) -> None:
    at = run_page(monkeypatch, faulty_store.store, "shapes")
    table = at.dataframe[0].value
    top = table.iloc[0]
    assert (top["model"], top["output"]) == ("decoder", "TOKEN_IDS")
    assert top["growth steps"] >= 5
    assert "65536" in top["largest"]
    assert "demo-shape_growth-0" in at.dataframe[1].value.to_csv(), "growth steps listed"


def test_empty_store_says_so(monkeypatch, empty_store) -> None:
    at = run_page(monkeypatch, empty_store, "now")
    assert "The store is empty" in at.info[0].value


def test_missing_store_says_so(monkeypatch, tmp_path) -> None:
    at = run_page(monkeypatch, tmp_path / "nope.db", "now")
    assert "cannot be opened" in at.error[0].value


def test_no_source_says_so(monkeypatch) -> None:
    at = run_page(monkeypatch, None, "now")
    assert "No data source" in at.warning[0].value


def test_hostile_log_text_is_shown_as_text(monkeypatch, hostile_store: AppStore) -> None:
    with Store(hostile_store.store, readonly=True) as db:
        fid = finding_id(load_findings(db)[0])
    at = run_page(monkeypatch, hostile_store.store, "finding", hostile_store.log, finding=fid)
    code = "\n".join(c.value for c in at.code)
    assert "<script>alert('x')</script> <img src=x onerror=alert(1)> **bold**" in code
    assert "\\x1b[31mRED\\x1b[0m" in code and "\x1b" not in code
    assert "more characters]" in code, "a 5000-character line is cut"
    markdown = "\n".join(m.value for m in at.markdown) + "\n".join(c.value for c in at.caption)
    assert "<script" not in markdown and "evil" not in markdown


def test_bundles_page_analyses_the_real_bundle(monkeypatch, faulty_run) -> None:
    at = run_page(monkeypatch, None, "bundles")
    at.text_input(key="bundle_dir").set_value(str(faulty_run.bundle))
    at.button(key="analyse_dir").click().run(timeout=300)
    assert not at.exception
    assert "Bundle analysed" in at.success[0].value
    at.radio(key="nav").set_value("now").run(timeout=300)
    assert not at.exception
    assert HUNG in set(at.dataframe[0].value["request"])


def test_bundles_page_says_a_folder_is_not_a_bundle(monkeypatch, tmp_path) -> None:
    at = run_page(monkeypatch, None, "bundles")
    at.text_input(key="bundle_dir").set_value(str(tmp_path))
    at.button(key="analyse_dir").click().run()
    assert "could not be analysed" in at.error[0].value
