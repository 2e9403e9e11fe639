"""Fuzz what the parsers make of garbage into a Store that already holds good data.

The store is where "no input may corrupt what was already stored" is decided: a garbage
batch reaches it whenever a parser accepts something odd. The store here is first filled
from the recorded fixtures of every source (log, /metrics, stats, trace file, OTLP). Then
each example takes garbage of one source (the other fuzz modules' inputs), runs it through
that source's lenient parser exactly as the collectors do, and writes the events under
the same identities as the good data (same log source and offsets, same scrape target and
instant, same trace file, ids reused by mutated recordings), so that every natural key can
collide. After each write:

* every row stored before is still there, byte for byte;
* the write succeeded (a record SQLite cannot hold, such as a time past 2262, rejected
  alone and counted) or raised ``StoreError``, nothing else;
* the store still takes a new batch and gives it back.

Run longer: ``TRITON_OBS_FUZZ_EXAMPLES=20000 pytest -q tests/fuzz/test_fuzz_store.py --timeout=0``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.logs import parse_bytes
from collectors.metrics.parser import parse_metrics_lenient
from collectors.otlp.decode import OtlpDecodeError, spans_from_otlp_json
from collectors.stats.parser import StatsParseError, parse_model_stats_lenient
from collectors.traces.parser import parse_trace_file_lenient
from observability.events import MetricSample, MetricsScrape, StubOutput
from observability.store import Store, StoreError
from observability.store.codec import encode
from tests.fuzz import (
    test_fuzz_logs,
    test_fuzz_metrics,
    test_fuzz_otlp,
    test_fuzz_stats,
    test_fuzz_traces,
)
from tests.fuzz._support import FIXTURES, INT64_MAX, INT64_MIN, fuzz_settings, regression_files

_LOG_SOURCE = "triton.log@fuzz"
_TRACE_SOURCE = "trace.json.0"
_TARGET = "metrics http://127.0.0.1:8002/metrics"
_AT_NS = 1_795_319_601_349_000_000


def _log_events(data: bytes) -> list[object]:
    return list(parse_bytes(data, year=2026))


def _metrics_events(text: str) -> list[object]:
    page = parse_metrics_lenient(text)
    samples = tuple(s for f in page.families for s in f.samples)
    return [MetricsScrape(_AT_NS, _TARGET, samples)]


def _stats_events(body: bytes) -> list[object]:
    try:
        return list(parse_model_stats_lenient(body, _AT_NS).stats)
    except StatsParseError:
        return []


def _trace_events(text: str) -> list[object]:
    return list(parse_trace_file_lenient(text, _TRACE_SOURCE).spans)


def _otlp_events(body: bytes) -> list[object]:
    try:
        return list(spans_from_otlp_json(json.loads(body)))
    except (OtlpDecodeError, ValueError, RecursionError):
        return []


_GOOD_LOG = (FIXTURES / "logs" / "glog_2.51_session.log").read_bytes()
_HEAD = _GOOD_LOG[: _GOOD_LOG.index(b"\n", 16_384) + 1]


def _overwrite(data: bytes, edits: list[tuple[int, bytes]]) -> bytes:
    for pos, blob in edits:
        at = pos % len(data)
        data = data[:at] + blob[: len(data) - at] + data[at + len(blob) :]
    return data


_EDITED_LOG = st.builds(
    _overwrite,
    st.just(_HEAD),
    st.lists(st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=4)), min_size=1),
)
"""The start of the stored log with bytes overwritten: every record keeps its offset, so
an edited line is a record of the same identity with other contents."""


_GOOD_STATS = json.loads((FIXTURES / "stats" / "triton_2.51_stats_after.json").read_bytes())


@st.composite
def _edited_stats(draw: st.DrawFn) -> bytes:
    """The stored stats answer with one count changed: same model, version and instant."""
    answer = json.loads(json.dumps(_GOOD_STATS))
    entry = draw(st.sampled_from(answer["model_stats"]))
    key = draw(st.sampled_from(["inference_count", "execution_count", "last_inference"]))
    entry[key] = draw(st.integers(0, 2**40))
    return json.dumps(answer).encode()


_SOURCES: dict[str, tuple[Any, Any, str]] = {
    # name: (garbage strategy, parser as the collector runs it, write source)
    "logs": (st.one_of(test_fuzz_logs._log(), _EDITED_LOG), _log_events, _LOG_SOURCE),
    "metrics": (test_fuzz_metrics._ANY_PAGE, _metrics_events, ""),
    "stats": (st.one_of(test_fuzz_stats._BODIES, _edited_stats()), _stats_events, ""),
    "traces": (test_fuzz_traces._mutated_text(), _trace_events, _TRACE_SOURCE),
    "otlp": (test_fuzz_otlp._JSON_BODIES, _otlp_events, ""),
}


def _good_batches() -> list[tuple[list[object], str]]:
    """Every source's recorded fixture, parsed: the data that must survive."""
    page = (FIXTURES / "metrics" / "triton_2.51_summary_latencies.prom").read_text()
    trace = next((FIXTURES / "traces").glob("*/trace.json.0")).read_text()
    post = next((FIXTURES / "otlp").glob("*/post_01.json")).read_bytes()
    return [
        (_log_events(_GOOD_LOG), _LOG_SOURCE),
        (_metrics_events(page), ""),
        (_stats_events(json.dumps(_GOOD_STATS).encode()), ""),
        (_trace_events(trace), _TRACE_SOURCE),
        (_otlp_events(post), ""),
    ]


def _tables(db: sqlite3.Connection) -> list[str]:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    return [name for (name,) in rows if not name.startswith("sqlite_")]


def _snapshot(path: Path) -> dict[str, set[tuple[Any, ...]]]:
    """Every record of every stream, decoded by a separate read-only connection (records
    move from ``staged`` into blocks as batches arrive: rows are not what must stay), and
    every other table's rows read with sqlite3 itself."""
    out: dict[str, set[tuple[Any, ...]]] = {}
    with Store(path, readonly=True) as reader:
        for stream, source, record in reader.records():
            out.setdefault(stream, set()).add((source, encode(record)))
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for t in _tables(db):
            if t not in ("blocks", "staged"):
                out[t] = set(db.execute(f"SELECT * FROM {t}"))
    finally:
        db.close()
    return out


class _Filled:
    def __init__(self, folder: Path) -> None:
        self.store = Store(folder / "fuzz.db")
        for events, source in _good_batches():
            assert events, "every fixture gives events"
            self.store.write(events, source=source)
        self.before = _snapshot(self.store.path)
        assert all(self.before[t] for t in ("log", "metrics", "stats", "traces", "otlp"))
        self.fresh = 0


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Filled]:
    f = _Filled(tmp_path_factory.mktemp("store"))
    yield f
    f.store.close()


def _ints(value: object) -> Iterator[int]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _ints(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _ints(getattr(value, f.name))


def _past_int64(events: list[object]) -> bool:
    """Whether an event holds an integer SQLite cannot bind (see the 2262 test below)."""
    return any(not INT64_MIN <= i <= INT64_MAX for e in events for i in _ints(e))


def check_store(filled: _Filled, events: list[object], source: str) -> None:
    """Write one garbage batch; what was stored stays, and the store keeps working."""
    try:
        result = filled.store.write(events, source=source)
    except StoreError as err:
        assert str(err)
    else:
        assert result.rejected == 0 or _past_int64(events), "rejected a storable record"
    after = _snapshot(filled.store.path)
    for table, rows in filled.before.items():
        if table == "setup":
            continue
        lost = rows - after.get(table, set())
        assert not lost, f"{table}: {len(lost)} stored rows changed or vanished"
    # ``setup`` holds the newest setup line of each log, kind and name: a later line of the
    # same log (a reload's config, or garbage that parses as one) replaces it, an older never.
    newest = {row[:3]: row[3] for row in after.get("setup", set())}
    for source, kind, name, at_ns, _body in filled.before.get("setup", set()):
        assert newest.get((source, kind, name), -1) >= at_ns, f"setup: {kind} {name} went back"
    filled.fresh += 1
    marker = StubOutput(filled.fresh, filled.fresh, "still writable")
    assert filled.store.write([marker], source="fuzz-marker").inserted == 1


@fuzz_settings(150)
@given(st.sampled_from(sorted(_SOURCES)).flatmap(lambda n: st.tuples(st.just(n), _SOURCES[n][0])))
def test_garbage_batches_leave_stored_rows_alone(filled: _Filled, drawn: tuple[str, Any]) -> None:
    name, garbage = drawn
    _, parse, source = _SOURCES[name]
    check_store(filled, parse(garbage), source)


_REPLAY = {
    "logs": _log_events,
    "metrics": lambda b: _metrics_events(b.decode("utf-8")),
    "stats": _stats_events,
    "traces": lambda b: _trace_events(b.decode("utf-8", "surrogatepass")),
    "otlp": lambda b: _otlp_events(b) if b[:1] in (b"{", b"[") else [],
}


@pytest.mark.parametrize(
    ("name", "path"),
    [(name, p) for name in sorted(_REPLAY) for p in regression_files(name)],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_every_kept_input_into_the_store(filled: _Filled, name: str, path: Path) -> None:
    """The inputs that once broke a parser, written where the good data lives."""
    source = {"logs": _LOG_SOURCE, "traces": _TRACE_SOURCE}.get(name, "")
    check_store(filled, _REPLAY[name](path.read_bytes()), source)


@pytest.mark.parametrize("path", regression_files("store"), ids=lambda p: p.name)
def test_regression(filled: _Filled, path: Path) -> None:
    """Kept store inputs: a log chunk written under the good log's identity."""
    check_store(filled, _log_events(path.read_bytes()), _LOG_SOURCE)


# ------------------------------------------------------- gaps this fuzzing found, closed


def test_a_nan_sample_is_stored(tmp_path: Path) -> None:
    """Once a gap: NaN bound as NULL into a NOT NULL column was dropped as a duplicate."""
    with Store(tmp_path / "nan.db") as store:
        sample = MetricSample("nv_gpu_utilization", (("gpu_uuid", "GPU-0"),), math.nan, "x")
        result = store.write([MetricsScrape(_AT_NS, _TARGET, (sample,))])
        assert result.inserted == 1
        ((_, _, got),) = store.metric_samples("nv_gpu_utilization")
        assert math.isnan(got.value)


_YEAR_3000 = b'3000-01-01T00:00:00Z E 1 x.cc:1] "a log line from the year 3000"\n'


def test_a_time_past_2262_is_rejected_alone(tmp_path: Path) -> None:
    """Once a gap: a year-3000 line raised OverflowError and lost its whole batch (and the
    collector retried the batch forever). Now that record alone is rejected and counted."""
    events = _log_events(_YEAR_3000)
    assert events and events[0].header.at_ns > INT64_MAX  # type: ignore[attr-defined]
    good = _log_events(b'2026-01-01T00:00:00Z I 1 x.cc:1] "a line from 2026"\n')
    with Store(tmp_path / "y3000.db") as store:
        result = store.write([*events, *good], source="triton.log")
        assert (result.rejected, result.inserted) == (len(events), len(good))
        assert store.count("log_records") == len(good)
