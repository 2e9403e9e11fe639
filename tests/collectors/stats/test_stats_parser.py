"""Golden tests over /v2/models/stats answers recorded from the lab Triton; invalid inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.stats import StatsParseError, parse_model_stats, parse_model_stats_lenient
from observability.events import BatchStats, ModelStats

FIX = Path(__file__).parents[2] / "fixtures" / "stats"
MODELS = ["classifier", "decoder", "detector", "generate", "pipeline", "preprocess", "router"]


def load(name: str) -> str:
    return (FIX / f"triton_2.51_stats_{name}.json").read_text()


def test_golden_router_entry() -> None:
    assert parse_model_stats(load("router_v1"), at_ns=7) == [
        ModelStats(
            at_ns=7,
            model="router",
            version="1",
            last_inference_ms=1795319601377,
            inference_count=9,
            execution_count=9,
            success_count=9,
            success_ns=450792894,
            fail_count=0,
            fail_ns=0,
            queue_count=9,
            queue_ns=1219624,
            compute_input_ns=762866,
            compute_infer_ns=444879681,
            compute_output_ns=3699637,
            batch_stats=(BatchStats(1, 9, 762866, 9, 444879681, 9, 3699637),),
        )
    ]


def test_idle_server_has_no_last_inference_and_no_batches() -> None:
    stats = parse_model_stats(load("idle"), at_ns=1)
    assert [s.model for s in stats] == MODELS
    assert all(s.last_inference_ms == 0 and s.inference_count == 0 for s in stats)
    assert all(s.batch_stats == () for s in stats)


def test_raw_http_and_tritonclient_answers_parse_alike() -> None:
    raw = {s.model: s for s in parse_model_stats(load("after").encode(), at_ns=1)}
    client = {s.model: s for s in parse_model_stats(json.loads(load("tritonclient")), at_ns=1)}
    assert list(raw) == list(client) == MODELS
    assert raw["router"].inference_count == 9 and raw["classifier"].inference_count == 10
    assert all(s.last_inference_ms > 1_700_000_000_000 for s in raw.values())
    assert raw["pipeline"].success_count == 1  # the ensemble has its own entry


def test_grpc_json_form_strings_and_omitted_zeroes() -> None:
    """tritonclient.grpc ``as_json=True``: int64 as strings, zero fields left out."""
    answer = {
        "model_stats": [
            {
                "name": "m",
                "version": "2",
                "last_inference": "1700000000123",
                "inference_count": "4",
                "execution_count": "2",
                "inference_stats": {"success": {"count": "4", "ns": "900"}, "fail": {}},
                "batch_stats": [{"batch_size": "2", "compute_infer": {"count": "2", "ns": "50"}}],
            }
        ]
    }
    (stats,) = parse_model_stats(answer, at_ns=1)
    assert (stats.last_inference_ms, stats.success_count, stats.fail_count) == (1700000000123, 4, 0)
    assert stats.batch_stats == (BatchStats(2, 0, 0, 2, 50, 0, 0),)


INVALID = [
    (b"\xff\xfe", "not JSON"),
    ("<html>", "not JSON"),
    ("[]", "expected an object"),
    ('{"model_stats": {}}', "must be a list"),
    ('{"model_stats": [1]}', r"model_stats\[0\]: expected an object"),
    ('{"model_stats": [{"version": "1"}]}', "no model name"),
    ('{"model_stats": [{"name": "m", "inference_count": -1}]}', "'m'.*inference_count"),
    ('{"model_stats": [{"name": "m", "inference_count": 1.5}]}', "non-negative integer"),
    ('{"model_stats": [{"name": "m", "inference_count": true}]}', "expected a count"),
    ('{"model_stats": [{"name": "m", "inference_stats": []}]}', "inference_stats"),
    ('{"model_stats": [{"name": "m", "inference_stats": {"queue": {"ns": "x"}}}]}', "queue.ns"),
    ('{"model_stats": [{"name": "m", "batch_stats": {}}]}', "batch_stats"),
    ('{"model_stats": [{"name": "m", "batch_stats": [{"batch_size": "a"}]}]}', "batch_size"),
    # The whole path of the bad value, exactly (the parser joins it only when it raises).
    (
        '{"model_stats": [{"name": "m", "version": "2", "inference_stats": '
        '{"fail": {"count": 1, "ns": -5}}}]}',
        r"^model 'm' version '2' inference_stats\.fail\.ns: expected a non-negative integer",
    ),
    (
        '{"model_stats": [{"name": "m", "inference_stats": {"cache_hit": 3}}]}',
        r"^model 'm' version '' inference_stats\.cache_hit: expected an object, got 3",
    ),
    (
        '{"model_stats": [{"name": "m", "batch_stats": [{"batch_size": 1}, '
        '{"batch_size": 2, "compute_infer": {"count": false}}]}]}',
        r"^model 'm' version '' batch_stats\[1\]\.compute_infer\.count: expected a count",
    ),
    (
        '{"model_stats": [{"name": "m", "last_inference": "9x"}]}',
        r"^model 'm' version '' last_inference:",
    ),
]


@pytest.mark.parametrize(("answer", "message"), INVALID)
def test_invalid_input_raises_quoting_it(answer: str | bytes, message: str) -> None:
    with pytest.raises(StatsParseError, match=message) as info:
        parse_model_stats(answer, at_ns=1)
    assert isinstance(info.value, ValueError)


def test_lenient_skips_only_the_bad_entry() -> None:
    good = json.loads(load("router_v1"))["model_stats"][0]
    answer = {"model_stats": [good, {"name": "bad", "execution_count": "x"}, good]}
    parsed = parse_model_stats_lenient(answer, at_ns=1)
    assert [s.model for s in parsed.stats] == ["router", "router"]
    assert len(parsed.problems) == 1 and "'bad'" in parsed.problems[0]
