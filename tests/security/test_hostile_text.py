"""Hostile text in the store is shown as text on every page of the triage app, never as markup.

Log lines, request ids, model names and exception text come from clients and models. A store
is filled with all of them carrying HTML, script, entities, Markdown, Plotly's own label
markup, ANSI and OSC 8 escapes, NULs, bidi overrides and a 1 MB line; every page is rendered
through ``streamlit.testing`` and each element is checked by what it does with its text:

* Markdown-rendering elements (titles, captions, alerts, Markdown) never receive data and
  never allow HTML; no ``st.html``, iframe or ``unsafe_allow_html`` exists in the app's source;
* code blocks show the text with controls made visible and long lines cut;
* table cells and choices show one cut line with controls visible;
* Plotly figures get ``&lt;``/``&gt;`` entities where the data had ``<``/``>`` (Plotly reads
  ``<a href>``, ``<b>``, ``<span style>`` in labels and hover text as markup).

Then a real browser (headless Chromium, as ``tests/app`` uses) opens the hostile Finding
page: no script element or ``onerror`` attribute comes from the data, the text is visible as
text, and no dialog fires (an ``alert()`` would block the page and the capture with it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dashboards.app.data.findings import finding_id, load_findings
from dashboards.app.data.text import MAX_CELL_CHARS, MAX_LINE_CHARS
from observability import events as ev
from observability.findings import Evidence, Finding, Severity
from observability.store import Store
from tests.app.browser import CHROMIUM, app_server, capture
from tests.app.helpers import run_page, skip_without_the_app_extra

skip_without_the_app_extra()

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
ENTITIES = "&lt;b&gt;entity&lt;/b&gt; &amp;amp; &#60;script&#62;"
ANSI = "\x1b[31mRED\x1b[0m"
OSC8 = "\x1b]8;;http://evil.example/osc\x07click\x1b]8;;\x07"
NUL = "nul\x00byte"
BIDI = "\u202eexe.txt\u202c \u2066isolate\u2069 zero\u200bwidth"
MARKDOWN = "**bold** [link](http://evil.example/md) :red[colour] $x^2$"
PLOTLY = '<a href="http://evil.example/plotly">plotly link</a><b>bold</b><br>'
HOSTILE = " ".join([SCRIPT, IMG, ENTITIES, ANSI, OSC8, NUL, BIDI, MARKDOWN, PLOTLY])
LONG = "L" * 1_000_000
READY = "HOSTILE-SUMMARY"

RID = f"req-{SCRIPT}{IMG}\u202e{ANSI}"
MODEL = f"model{IMG}{PLOTLY}\u202e"
CHILD = f"{RID}.child{IMG}"

# What must never reach the page unchanged: raw controls and markup that a renderer acts on.
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b]")
LIVE_MARKUP = ("<script", "<img", "onerror=", '<a href="http://evil', "<b>", "<br>")


@dataclass(frozen=True)
class HostileStore:
    store: Path
    log: Path
    finding: str
    related: str


def _header(at: int, offset: int) -> ev.LogRecord:
    return ev.LogRecord(at, ev.LogLevel.INFO, "infer_request.cc", 132, offset)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileStore:
    """Every kind of record the pages read, each carrying the hostile text."""
    root = tmp_path_factory.mktemp("hostile")
    log = root / "triton.log"
    first = "I1122 04:41:30.000000 1 server.cc:1 started\n"
    log.write_text(first + f"E1122 04:41:31.000000 1 model.cc:2 {HOSTILE} {LONG}\n")
    at = 1_795_322_490_000_000_000
    ms = 1_000_000
    offset = iter(range(10_000, 20_000))
    events: list[object] = [
        ev.ErrorLine(
            ev.LogRecord(at + ms, ev.LogLevel.ERROR, "model.cc", 2, len(first)),
            f"{HOSTILE} {LONG}",
        ),
        ev.StubOutput(at + 2 * ms, next(offset), f"Traceback (most recent call last):\n{HOSTILE}"),
    ]
    # Three requests of the hostile model: two answered (shapes grow), one hung with an open
    # BLS child.
    for n, rid in enumerate([f"{RID}-a", f"{RID}-b", RID]):
        t = at + (10 + 10 * n) * ms
        events += [
            ev.RequestPrepared(_header(t, next(offset)), rid, MODEL, 1, 0, 0),
            ev.RequestStateChange(_header(t + 1, next(offset)), rid, "INITIALIZED", "PENDING"),
            ev.RequestStateChange(_header(t + 2, next(offset)), rid, "PENDING", "EXECUTING"),
            ev.InstanceExecuting(_header(t + 3, next(offset)), MODEL, f"{MODEL}_0_0", 1),
        ]
        if rid != RID:
            events += [
                ev.ResponseOutput(
                    _header(t + 4, next(offset)), "", f"OUT{SCRIPT}", "FP32", (16 * 4**n,)
                ),
                ev.RequestStateChange(_header(t + 5, next(offset)), rid, "EXECUTING", "RELEASED"),
            ]
    t = at + 40 * ms
    events += [
        ev.RequestPrepared(_header(t, next(offset)), CHILD, f"child{IMG}", 1, 0, 0),
        ev.RequestStateChange(_header(t + 1, next(offset)), CHILD, "INITIALIZED", "PENDING"),
    ]
    for k, scrape_at in enumerate((at, at + 60 * ms, at + 120 * ms)):
        samples = []
        for name, value in (
            ("nv_inference_count", 10.0 * k),
            ("nv_inference_request_success", 10.0 * k),
            ("nv_inference_queue_duration_us", 500.0 * k),
            ("nv_inference_pending_request_count", 1.0),
        ):
            labels = (("model", MODEL), ("version", "1"))
            samples.append(ev.MetricSample(name, labels, value, name))
        labels = (("model", MODEL), ("instance", f"{MODEL}_0_0"))
        samples.append(ev.MetricSample("triton_obs_bls_inflight", labels, 1.0, "x"))
        target = "metrics http://127.0.0.1:8002/metrics"
        events.append(ev.MetricsScrape(scrape_at, target, tuple(samples)))
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    events.append(
        ev.OtlpSpan(
            trace_id=trace_id, span_id="b7ad6b7169203331", parent_span_id="", name=f"bls {MODEL}",
            service=f"svc{SCRIPT}", start_ns=at + 31 * ms, end_ns=at + 35 * ms, status="ERROR",
            status_message=HOSTILE,
            attributes=(
                ("triton.bls.parent.request_id", RID), ("triton.bls.child.request_id", CHILD),
                ("triton.bls.child.model", MODEL), ("triton.bls.parent.model", MODEL),
            ),
        )
    )  # fmt: skip
    path = root / "store.db"
    main = Finding(
        kind="callback_error", severity=Severity.CRITICAL, model=MODEL,
        summary=f"{READY} {HOSTILE} {LONG}", advice=f"advice {HOSTILE}",
        first_seen_ns=at + 30 * ms, last_seen_ns=at + 40 * ms, instance=f"{MODEL}_0_0",
        request_id=RID, trace_id=trace_id,
        evidence=(
            Evidence("log", at + ms, f"triton.log@{len(first)}", f"{HOSTILE} {LONG}"),
            Evidence("otlp", at + 31 * ms, f"trace {trace_id} {HOSTILE}", HOSTILE),
        ),
    )  # fmt: skip
    related = Finding(
        kind="hung_request", severity=Severity.WARNING, model=MODEL, summary=HOSTILE,
        advice=HOSTILE, first_seen_ns=at + 30 * ms, last_seen_ns=at + 40 * ms,
        request_id=f"{RID}-a",
    )  # fmt: skip
    with Store(path) as store:
        store.write(events, source=f"hostile{SCRIPT}")
        store.save_findings([main, related])
    with Store(path, readonly=True) as store:
        assert {f.request_id for f in load_findings(store)} == {RID, f"{RID}-a"}
    return HostileStore(path, log, finding_id(main), finding_id(related))


# -- what each element did with the text ---------------------------------------------------------


def elements(at) -> Iterator:
    """Every element of the rendered page, sidebar included."""
    for node in at._tree:
        if hasattr(node, "proto") and not hasattr(node, "children"):
            yield node


MARKDOWN_ELEMENTS = {
    "markdown", "caption", "title", "header", "subheader", "divider", "latex", "error",
    "warning", "info", "success", "alert", "exception", "help",
}  # fmt: skip
"""Element types whose text Streamlit renders as Markdown."""


def _markdown_protos(at) -> list:
    return [node.proto for node in elements(at) if node.type in MARKDOWN_ELEMENTS]


def check_page(at, name: str) -> str:
    """Assert every element of the page kept the hostile text as text; returns the code."""
    kinds = {node.type for node in elements(at)}
    assert not kinds & {"html", "iframe", "unknown"}, (name, kinds)
    for proto in _markdown_protos(at):
        body = getattr(proto, "body", "") or getattr(proto, "value", "")
        assert not getattr(proto, "allow_html", False), (name, body[:200])
        for needle in (*LIVE_MARKUP, "evil.example", "alert(1)", "\x1b", "\u202e"):
            assert needle not in body, (name, needle, body[:300])
    code = "\n".join(c.value for c in at.code)
    for line in code.split("\n"):
        assert len(line) <= MAX_LINE_CHARS + 40, (name, len(line))
        assert not RAW_CONTROLS.search(line), (name, line[:200])
    for frame in at.dataframe:
        for value in frame.value.astype(str).to_numpy().ravel():
            assert len(value) <= MAX_CELL_CHARS + 40, (name, len(value))
            assert not RAW_CONTROLS.search(value), (name, value[:200])
    for box in at.selectbox:
        for option in box.options:
            assert len(option) <= MAX_CELL_CHARS + 40 and not RAW_CONTROLS.search(option)
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for text in _strings([spec.get("data"), spec.get("layout")]):
            for needle in ("<script", "<img", "<a ", "<b>", "<br>", "<span"):
                assert needle not in text, (name, needle, text[:200])
            assert not RAW_CONTROLS.search(text), (name, text[:200])
    return code


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_no_page_can_receive_html(hostile: HostileStore) -> None:
    """The source has no door for HTML: no unsafe_allow_html, st.html or components."""
    for path in (ROOT / "dashboards" / "app").rglob("*.py"):
        source = path.read_text()
        for door in ("unsafe_allow_html", "st.html", "components.v1", "st.components"):
            assert door not in source, (path.name, door)


def test_now_page(monkeypatch, hostile: HostileStore) -> None:
    at = run_page(monkeypatch, hostile.store, "now", hostile.log)
    check_page(at, "now")
    table = at.dataframe[0].value
    assert any("\\u202e" in m for m in table["model"]), "bidi override shown, not obeyed"
    assert any(SCRIPT in r for r in table["request"]), "the id is shown as text"
    assert any("more characters]" in s for s in table["summary"]), "the 1 MB summary is cut"
    by_model = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]["x"]
    assert any("&lt;img src=x onerror=alert(1)&gt;" in x for x in by_model), by_model


def test_finding_page(monkeypatch, hostile: HostileStore) -> None:
    at = run_page(monkeypatch, hostile.store, "finding", hostile.log, finding=hostile.finding)
    code = check_page(at, "finding")
    assert SCRIPT in code and IMG in code and ENTITIES in code and MARKDOWN in code
    assert "\\x1b[31mRED\\x1b[0m" in code and "\\x1b]8;;http://evil.example/osc\\x07" in code
    assert "nul\\x00byte" in code and "\\u202eexe.txt\\u202c" in code
    assert code.count("more characters]") >= 2, "the 1 MB summary and log line are cut"
    assert any("\\u202e" in o for o in at.selectbox[0].options)


def test_related_finding_page(monkeypatch, hostile: HostileStore) -> None:
    at = run_page(monkeypatch, hostile.store, "finding", hostile.log, finding=hostile.related)
    check_page(at, "related finding")
    assert at.dataframe, "the related findings table is drawn (with the hostile summary)"


def test_timeline_page(monkeypatch, hostile: HostileStore) -> None:
    at = run_page(monkeypatch, hostile.store, "timeline", hostile.log, request=RID)
    code = check_page(at, "timeline")
    assert "still open" in at.error[0].value
    assert SCRIPT in code
    lanes = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["yaxis"]["categoryarray"]
    assert any("req-&lt;script&gt;alert(1)&lt;/script&gt;" in lane for lane in lanes), lanes


def test_health_and_shapes_pages(monkeypatch, hostile: HostileStore) -> None:
    at = run_page(monkeypatch, hostile.store, "health", hostile.log)
    check_page(at, "health")
    assert any("\\u202e" in o for o in at.selectbox[0].options), "the hostile model is listed"
    at = run_page(monkeypatch, hostile.store, "shapes", hostile.log)
    check_page(at, "shapes")
    assert any(SCRIPT in o for o in at.dataframe[0].value["output"])


# -- one real browser ---------------------------------------------------------------------------


@pytest.mark.lab  # a live browser: with the other live tests, out of the quick run
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_real_browser_runs_no_script_from_the_data(hostile: HostileStore, tmp_path: Path) -> None:
    with app_server(hostile.store, hostile.log, tmp_path / "server.log") as base:
        query = urllib.parse.urlencode({"page": "finding", "finding": hostile.finding})
        dom = capture(f"{base}/?{query}", READY, tmp_path / "finding.png", tmp_path / "chrome")
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", dom, re.S | re.I)
    assert not [s for s in scripts if "alert(" in s], "a script element from the data"
    assert not re.search(r"<img\b[^>]*onerror", dom, re.I), "a live img from the data"
    assert not re.search(r'<a\b[^>]*href="http://evil', dom, re.I), "a live link from the data"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom, "shown as text instead"


# -- the terminal -------------------------------------------------------------------------------


def test_watch_prints_hostile_findings_as_text(tmp_path: Path) -> None:
    """``triton-obs watch`` prints each finding with Rich: neither Rich markup nor a terminal
    escape in a request id or model name may act on the user's terminal."""
    from datetime import datetime, timedelta, timezone

    at = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(seconds=30)
    rid = f"req{ANSI}[bold red]markup[/]\u202eevil"
    model = "m[link=http://evil.example/rich]x[/link]"

    def line(text: str) -> str:
        return f"I{at:%m%d %H:%M:%S.%f} 4403 {text}\n"

    log = tmp_path / "triton.log"
    log.write_text(
        line(f'infer_request.cc:905] "[request id: {rid}] prepared: [0x0x7f] request id: {rid}, '
             f"model: {model}, requested version: -1, actual version: 1, flags: 0x0, "
             'correlation id: 0, batch size: 0, priority: 0, timeout (us): 0\\n"')
        + line(f'infer_request.cc:132] "[request id: {rid}] Setting state from INITIALIZED to '
               'PENDING"')
        + line(f'infer_request.cc:132] "[request id: {rid}] Setting state from PENDING to '
               'EXECUTING"')
    )  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "observability.cli", "watch", "--log", str(log),
         "--store", str(tmp_path / "store.db"), "--port", "0", "--deadline", "1",
         "--duration", "2.5"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=dict(os.environ, COLUMNS="300"),
    )  # fmt: skip
    out = result.stdout
    assert "hung_request" in out, out + result.stderr
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[31mRED\\x1b[0m[bold red]markup[/]\\u202eevil" in out
    assert "m[link=http://evil.example/rich]x[/link]" in out
