"""Golden tests over trace files recorded from the lab Triton, and an invalid-input table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.traces import (
    TraceParseError,
    build_trace_tree,
    parse_trace_file,
    parse_trace_file_lenient,
    parser,
    trace_files,
)
from observability.events import TraceSpan
from tests.hypothesis_profiles import examples

DEMO = Path(__file__).parents[2] / "fixtures" / "traces" / "demo_2.51"


def demo_spans() -> list[TraceSpan]:
    return [
        s for f in trace_files(DEMO / "trace.json") for s in parse_trace_file(f.read_text(), f.name)
    ]


def test_rollover_files_are_found_in_numeric_order() -> None:
    assert [p.name for p in trace_files(DEMO / "trace.json")] == [
        "trace.json.0",
        "trace.json.1",
        "trace.json.2",
    ]


def test_golden_first_span_merges_header_and_timestamp_records() -> None:
    first = parse_trace_file((DEMO / "trace.json.0").read_text(), "trace.json.0")[0]
    assert first == TraceSpan(
        trace_id=4,
        parent_id=1,
        model="detector",
        version="1",
        request_id="tr0.detector",
        timestamps=(
            ("REQUEST_START", 2088295164937),
            ("QUEUE_START", 2088295188770),
            ("COMPUTE_START", 2088296156845),
            ("COMPUTE_INPUT_END", 2088296195487),
            ("COMPUTE_OUTPUT_START", 2088380080552),
            ("COMPUTE_END", 2088380095108),
            ("REQUEST_END", 2088380136889),
        ),
        source="trace.json.0",
    )


def test_golden_root_keeps_frontend_timestamps() -> None:
    root = next(s for s in demo_spans() if s.request_id == "tr0")
    assert (root.trace_id, root.parent_id, root.model) == (1, None, "router")
    names = [n for n, _ in root.timestamps]
    assert names[:7] == [
        "REQUEST_START",
        "QUEUE_START",
        "COMPUTE_START",
        "COMPUTE_INPUT_END",
        "COMPUTE_OUTPUT_START",
        "COMPUTE_END",
        "REQUEST_END",
    ]
    assert {"GRPC_WAITREAD_START", "GRPC_SEND_END", "INFER_RESPONSE_COMPLETE"} <= set(names)


def test_golden_bls_tree_of_the_demo_pipeline() -> None:
    spans = demo_spans()
    assert len(spans) == 42 and len({s.trace_id for s in spans}) == 42
    tree = build_trace_tree(spans)
    assert not tree.orphans and not tree.duplicates
    shape = {
        (r.model, r.request_id): sorted(c.model for c in tree.children_of(r.trace_id))
        for r in tree.roots
    }
    for i in range(8):
        assert shape[("router", f"tr{i}")] == ["classifier", "detector", "preprocess"]
        kids = tree.children_of(next(r.trace_id for r in tree.roots if r.request_id == f"tr{i}"))
        assert {c.request_id for c in kids} == {
            f"tr{i}.{m}" for m in ("preprocess", "classifier", "detector")
        }
    assert shape[("pipeline", "tp0")] == ["classifier", "preprocess"]  # ensemble steps
    assert shape[("generate", "tg0")] == ["decoder", "decoder"]
    assert shape[("router", "")] == ["classifier", "detector", "preprocess"]  # no request id
    router = next(r for r in tree.roots if r.request_id == "tr3")
    walked = list(tree.walk(router.trace_id))
    assert walked[0] == (0, router) and {d for d, _ in walked[1:]} == {1}
    child = tree.children_of(router.trace_id)[0]
    assert tree.root_of(child.trace_id) == router


def test_child_without_parent_is_an_orphan() -> None:
    """A hung BLS parent is never written: its children stay orphans."""
    spans = [s for s in demo_spans() if s.request_id != "tr2"]
    tree = build_trace_tree(spans)
    assert sorted(o.request_id for o in tree.orphans) == [
        "tr2.classifier",
        "tr2.detector",
        "tr2.preprocess",
    ]


def test_a_stage_never_reached_is_left_out() -> None:
    """Triton 2.51 writes ``HTTP_SEND_START`` as 0 for an HTTP generate_stream response
    (recorded in tests/fixtures/foreign/gen_llm_stall_http): a monotonic 0, which the host's
    clock offset turned into the host's boot, a day before the capture, widening analyze's
    window to it."""
    records = [
        {"id": 1, "model_name": "gen_ensemble", "model_version": 1},
        {"id": 1, "timestamps": [{"name": "HTTP_RECV_START", "ns": 84002001476889}]},
        {"id": 1, "timestamps": [{"name": "INFER_RESPONSE_COMPLETE", "ns": 84002129705263}]},
        {"id": 1, "timestamps": [{"name": "HTTP_SEND_START", "ns": 0}]},
    ]
    (span,) = parse_trace_file(json.dumps(records), "f")
    assert [name for name, _ in span.timestamps] == ["HTTP_RECV_START", "INFER_RESPONSE_COMPLETE"]


def test_every_truncation_of_a_real_file_keeps_complete_records() -> None:
    text = (DEMO / "trace.json.1").read_text()
    full = {s.trace_id: s for s in parse_trace_file(text, "f")}
    for cut in range(0, len(text), 7):
        parsed = parse_trace_file_lenient(text[:cut], "f")
        assert parsed.truncated, cut
        assert not parsed.skipped_records
        for span in parsed.spans:
            if span.trace_id != parsed.maybe_incomplete:
                assert span == full[span.trace_id], cut
    assert parse_trace_file_lenient(text, "f").spans == tuple(full.values())


def test_lenient_keeps_records_before_garbage_and_skips_tensor_records() -> None:
    records = [
        {"id": 1, "model_name": "m", "model_version": 1, "request_id": "a"},
        {"id": 1, "activity": "TENSOR_QUEUE_INPUT", "tensor": {"name": "X"}},
        {"id": 1, "timestamps": [{"name": "REQUEST_START", "ns": 5}]},
        {"id": "bad"},
    ]
    parsed = parse_trace_file_lenient(json.dumps(records), "f")
    assert parsed.skipped_records == 2 and not parsed.truncated
    assert parsed.spans[0].timestamps == (("REQUEST_START", 5),)
    assert "record 3" in parsed.problems[0]
    garbage = json.dumps(records[:1])[:-1] + ", xyz]"
    parsed = parse_trace_file_lenient(garbage, "f")
    assert len(parsed.spans) == 1 and not parsed.truncated and "xyz" in parsed.problems[0]


INVALID = [
    ("", "not valid JSON"),
    ("{}", "expected a JSON array"),
    ("[1]", "must be an object"),
    ('[{"model_name": "m"}]', "'id' must be an integer"),
    ('[{"id": true, "model_name": "m"}]', "'id' must be an integer"),
    ('[{"id": 1}]', "neither model_name nor timestamps"),
    ('[{"id": 1, "model_name": 3}]', "'model_name' must be a string"),
    ('[{"id": 1, "timestamps": {}}]', "'timestamps' must be a list"),
    ('[{"id": 1, "timestamps": [{"ns": 1}]}]', "needs a name"),
    ('[{"id": 1, "timestamps": [{"name": "X", "ns": "1"}]}]', "timestamp 'ns'"),
    ('[{"id": 1, "model_name": "m", "parent_id": "7"}]', "'parent_id'"),
    ('[{"id": 1, "model_name": "m"}', "not valid JSON"),
    ('[{"id": 1, "model_name": "m"}] trailing', "not valid JSON"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_input_raises_a_value_error_quoting_it(text: str, message: str) -> None:
    with pytest.raises(TraceParseError, match=message) as info:
        parse_trace_file(text, "bad.json")
    assert isinstance(info.value, ValueError)
    assert "bad.json" in str(info.value)
    # The lenient parser never raises on the same input.
    parse_trace_file_lenient(text, "bad.json")


# -- the whole-file fast path reads what the element-by-element reading reads ---------------

_REAL_TRACES = sorted(
    Path(__file__).resolve().parents[2].glob("fixtures/traces/demo_2.51/trace.json.*")
)


@pytest.mark.parametrize("path", _REAL_TRACES, ids=lambda p: p.name)
def test_a_whole_file_reads_the_same_in_one_decode_and_element_by_element(path: Path) -> None:
    text = path.read_text()
    fast = parse_trace_file_lenient(text, path.name)
    assert fast.spans and not fast.problems
    assert fast == parser._lenient(text, path.name)


@given(
    cut=st.integers(0, 10**9),
    junk=st.sampled_from(["", "x", ",", "]", "{}", '{"id": 1}', '{"id": "a"}', "[", "\x00"]),
    at=st.integers(0, 10**9),
)
@settings(max_examples=examples(200), deadline=None)
def test_any_damage_reads_the_same_both_ways(cut: int, junk: str, at: int) -> None:
    """A cut, or a bad record or byte put anywhere: the fast path gives way to the reading
    that words the problem, and both give the same spans, counts and problems."""
    text = _REAL_TRACES[0].read_text()
    text = text[: cut % (len(text) + 1)]
    k = at % (len(text) + 1)
    text = text[:k] + junk + text[k:]
    assert parse_trace_file_lenient(text, "t") == parser._lenient(text, "t")
