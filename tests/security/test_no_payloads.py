"""No tensor contents anywhere we write: the store, the exported spans, our logs, our /metrics.

The security run (``conftest.py``) sends the demo pipeline inputs whose bytes spell a random
marker: ``RAW`` FP32 tensors (router, pipeline; gRPC, HTTP binary and HTTP JSON) and
``PROMPT_IDS`` INT64 tensors (generate, whose BLS loop hands them to ``decoder``). The demo
has no BYTES input, so the marker is the tensors' raw bytes. A leak could take another form
than those bytes, so each place is searched for every form a copy would take: the raw bytes,
hex, base64, and the numbers as text (int64 in decimal, float32 as numpy and Python print
them). A numeric form counts when two or more of the tensor's values show up in one place
(one coincidental number is not a tensor).

Request ids are allowed to be stored and never contain the marker; each place is also shown
to hold this run's request ids, so an empty or unrelated file cannot pass the test.
"""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from observability.store import Store
from tests.security.conftest import SecurityRun

pytestmark = pytest.mark.lab


def forms(marker: bytes) -> tuple[list[tuple[str, bytes]], list[tuple[str, list[bytes]]]]:
    """``(exact forms, numeric forms)``: one hit of an exact form is a leak; a numeric form
    is a list of per-value spellings, two of which must appear."""
    exact = [
        ("raw bytes", marker),
        ("hex", marker.hex().encode()),
        ("HEX", marker.hex().upper().encode()),
        ("base64", base64.b64encode(marker)[:40]),
    ]
    floats = np.frombuffer(marker, dtype="<f4")
    ints = np.frombuffer(marker, dtype="<i8")
    numeric = [
        ("int64 decimal", [str(int(v)).encode() for v in ints]),
        ("float32 numpy", [str(v).encode() for v in floats]),
        ("float32 as float64", [repr(float(v)).encode() for v in floats]),
        ("float32 %g", [f"{float(v):g}".encode() for v in floats]),
    ]
    return exact, numeric


def leaks(marker: bytes, haystack: bytes) -> list[str]:
    exact, numeric = forms(marker)
    found = [name for name, needle in exact if needle in haystack]
    for name, spellings in numeric:
        hits = sum(1 for s in set(spellings) if s in haystack)
        if hits >= 2:
            found.append(f"{name} ({hits} values)")
    return found


def _store_text(path: Path) -> bytes:
    """Every row of every table, as text, and every record decoded out of the compressed
    blocks (a search of the raw rows alone would not see inside them)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(row) for t in tables for row in con.execute(f'SELECT * FROM "{t}"')]
    finally:
        con.close()
    with Store(path, readonly=True) as store:
        rows += [repr(record) for record in store.records()]
    return "\n".join(rows).encode()


def test_the_marker_crossed_the_wire_and_the_search_finds_every_form(
    security_run: SecurityRun,
) -> None:
    """Positive controls: without them a search that finds nothing proves nothing."""
    run = security_run
    assert run.marker in run.echoed, "generate answered the marker back: it reached the stubs"
    dump = run.client_dump.read_bytes()
    found = leaks(run.marker, dump)
    assert "raw bytes" in found and "int64 decimal (4 values)" in found, found
    assert any(f.startswith("float32 as float64") for f in found), found
    assert any(f.startswith("float32 numpy") for f in found), found


def test_the_store_holds_ids_but_no_payload(security_run: SecurityRun) -> None:
    run = security_run
    files = [*run.store_copies]
    files += [p for p in run.store.parent.glob(run.store.name + "*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert not leaks(run.marker, data), (path.name, leaks(run.marker, data))
    text = _store_text(run.store)
    assert not leaks(run.marker, text), leaks(run.marker, text)
    stored_ids = [rid for rid in run.request_ids if rid.encode() in text]
    assert len(stored_ids) == len(run.request_ids), "the store really holds this run"
    for table in ("log_records", "otlp_spans", "trace_spans", "metric_samples", "model_stats"):
        assert _rows(run.store, table) > 0, f"collect stored no {table}"


def _rows(path: Path, table: str) -> int:
    with Store(path, readonly=True) as store:
        return store.count(table)


def test_exported_spans_describe_tensors_but_carry_none(security_run: SecurityRun) -> None:
    run = security_run
    assert run.otlp_bodies, "the BLS library exported spans"
    wire = b"\n".join(run.otlp_bodies)
    assert not leaks(run.marker, wire), leaks(run.marker, wire)
    # What they do carry: ids and tensor metadata (name, dtype, shape), so they were this run.
    assert any(rid.encode() in wire for rid in run.request_ids)
    assert b"TOKEN_IDS INT64 [4]" in wire and b"RAW FP32 [8]" in wire


def test_our_logs_and_metrics_pages_carry_no_payload(security_run: SecurityRun) -> None:
    run = security_run
    for name, text in (
        ("collect stdout", run.collect_stdout),
        ("collect stderr", run.collect_stderr),
        ("collect /metrics", run.collect_metrics),
        ("Triton /metrics (triton_obs_bls_* are ours)", run.triton_metrics),
    ):
        assert text or name == "collect stderr", name
        assert not leaks(run.marker, text.encode()), (name, leaks(run.marker, text.encode()))
    assert "triton_obs_bls_calls_total" in run.triton_metrics
    assert "triton_obs_otlp_spans_received_total" in run.collect_metrics


def test_tritons_own_log_and_trace_files(security_run: SecurityRun) -> None:
    """Triton 2.51 at ``--log-verbose 1`` logs request ids, input names, dtypes and shapes,
    never tensor contents (seen here, gRPC, HTTP binary and HTTP JSON alike); its trace files
    at ``level=TIMESTAMPS`` hold timestamps only. If a future Triton logged contents, that
    would be Triton's file, and the store test above still proves we never copy it."""
    run = security_run
    log = run.lab.log_path.read_bytes()
    assert any(rid.encode() in log for rid in run.request_ids)
    assert b"input: PROMPT_IDS, type: INT64" in log, "verbose 1 describes the inputs"
    assert not leaks(run.marker, log), leaks(run.marker, log)
    traces = b"".join(p.read_bytes() for p in run.lab.run_dir.glob("trace.json*"))
    assert traces and not leaks(run.marker, traces), leaks(run.marker, traces)
