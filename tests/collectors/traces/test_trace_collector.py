"""Rollover discovery and the collector: numeric order, settling truncated files, no repeats."""

from __future__ import annotations

import shutil
from pathlib import Path

from collectors.traces import TraceFileCollector, rollover_index, trace_files

DEMO = Path(__file__).parents[2] / "fixtures" / "traces" / "demo_2.51"


def test_rollover_index_and_numeric_order(tmp_path: Path) -> None:
    for name in ("t.json", "t.json.10", "t.json.2", "t.json.x", "t.json.2.tmp", "t.jsonx.1"):
        (tmp_path / name).write_text("[]")
    assert [p.name for p in trace_files(tmp_path / "t.json")] == ["t.json.2", "t.json.10", "t.json"]
    assert rollover_index("t", "t.07") == 7
    assert rollover_index("t", "t.-1") is None and rollover_index("t", "t.\u0661") is None
    assert trace_files(tmp_path / "missing" / "t.json") == []


def test_collector_reads_each_file_once_in_order(tmp_path: Path) -> None:
    collector = TraceFileCollector(tmp_path / "trace.json")
    assert collector.collect() == []
    shutil.copy(DEMO / "trace.json.0", tmp_path)
    first = collector.spans()
    assert {s.source for s in first} == {"trace.json.0"} and len(first) == 20
    assert collector.spans() == []
    for name in ("trace.json.1", "trace.json.2"):
        shutil.copy(DEMO / name, tmp_path)
    ((source, rest),) = collector.collect()
    assert source == str(tmp_path / "trace.json")  # the store keys spans by file family
    assert len(first) + len(rest) == 42
    assert collector.counters.files_read == 3 and collector.counters.truncated_files == 0
    assert collector.health().read == 3 and not collector.health().skipped


def test_truncated_file_is_held_until_it_settles(tmp_path: Path) -> None:
    text = (DEMO / "trace.json.0").read_text()
    (tmp_path / "trace.json.0").write_text(text[: len(text) // 2])
    collector = TraceFileCollector(tmp_path / "trace.json")
    assert collector.spans() == []  # may still be being written
    spans = collector.spans()  # unchanged: the writer is gone
    assert spans and collector.counters.truncated_files == 1
    assert "truncated" in collector.counters.problems[0]
    (tmp_path / "trace.json.0").write_text(text)  # it was not dead after all
    more = collector.spans()
    ids = [s.trace_id for s in spans + more]
    assert len(ids) == len(set(ids)) == 20


def test_truncated_file_followed_by_a_later_one_is_read_at_once(tmp_path: Path) -> None:
    text = (DEMO / "trace.json.0").read_text()
    (tmp_path / "trace.json.0").write_text(text[:3000])
    shutil.copy(DEMO / "trace.json.1", tmp_path)
    collector = TraceFileCollector(tmp_path / "trace.json")
    spans = collector.spans()
    assert {s.source for s in spans} == {"trace.json.0", "trace.json.1"}
    assert collector.counters.truncated_files == 1
