"""The join of response outputs to requests (observability.detectors.requests.build)."""

from __future__ import annotations

from observability import events as ev
from observability.detectors.requests import build

MS = 1_000_000


def _log(steps: list[tuple[type, tuple[object, ...]]]) -> list[object]:
    return [
        cls(ev.LogRecord((i + 1) * MS, ev.LogLevel.INFO, "x.cc", 1, i), *args)
        for i, (cls, args) in enumerate(steps)
    ]


def _request(rid: str, model: str, output: str) -> list[tuple[type, tuple[object, ...]]]:
    return [
        (ev.RequestPrepared, (rid, model, 1, 0, 0)),
        (ev.RequestStateChange, (rid, "INITIALIZED", "PENDING")),
        (ev.RequestStateChange, (rid, "PENDING", "EXECUTING")),
        (ev.InstanceExecuting, (model, f"{model}_0_0", 1)),
        (ev.ResponseOutput, ("", output, "FP32", (4,))),
        (ev.RequestStateChange, (rid, "EXECUTING", "RELEASED")),
    ]


def _interleaved(rid: str) -> list[tuple[type, tuple[object, ...]]]:
    """A decoder and a classifier executing together; the classifier writes its output and is
    released between the decoder's output and the decoder's release (a loaded machine)."""
    d, c = f"{rid}.decoder", f"{rid}.classifier"
    return [
        (ev.RequestPrepared, (d, "decoder", 1, 0, 0)),
        (ev.RequestStateChange, (d, "INITIALIZED", "PENDING")),
        (ev.RequestStateChange, (d, "PENDING", "EXECUTING")),
        (ev.InstanceExecuting, ("decoder", "decoder_0_0", 1)),
        (ev.RequestPrepared, (c, "classifier", 1, 0, 0)),
        (ev.RequestStateChange, (c, "INITIALIZED", "PENDING")),
        (ev.RequestStateChange, (c, "PENDING", "EXECUTING")),
        (ev.InstanceExecuting, ("classifier", "classifier_0_0", 1)),
        (ev.ResponseOutput, ("", "TOKEN_IDS", "INT64", (5,))),
        (ev.ResponseOutput, ("", "SCORES", "FP32", (4,))),
        (ev.RequestStateChange, (c, "EXECUTING", "RELEASED")),
        (ev.RequestStateChange, (d, "EXECUTING", "RELEASED")),
    ]


def _outputs(records: list[object], rid: str) -> list[str]:
    (cycle,) = build(records).by_id[rid]
    return [o.output for o in cycle.outputs]


def test_a_model_that_has_answered_keeps_to_its_output_names() -> None:
    warm = [
        s
        for i in range(8)
        for m, o in (("decoder", "TOKEN_IDS"), ("classifier", "SCORES"))
        for s in _request(f"w{i}.{m}", m, o)
    ]
    records = _log(warm + _interleaved("r"))
    assert _outputs(records, "r.classifier") == ["SCORES"]
    assert _outputs(records, "r.decoder") == ["TOKEN_IDS"]


def test_before_a_model_is_known_the_next_release_takes_the_output() -> None:
    """The order-only join that the learning corrects (and what it falls back on)."""
    records = _log(_interleaved("r"))
    assert _outputs(records, "r.classifier") == ["TOKEN_IDS", "SCORES"]
    assert _outputs(records, "r.decoder") == []


def _start(rid: str, model: str) -> list[tuple[type, tuple[object, ...]]]:
    return [
        (ev.RequestPrepared, (rid, model, 1, 0, 0)),
        (ev.RequestStateChange, (rid, "INITIALIZED", "PENDING")),
        (ev.RequestStateChange, (rid, "PENDING", "EXECUTING")),
    ]


def test_an_ensemble_step_that_overlaps_the_next_is_released_by_its_output() -> None:
    """The ensemble's classifier step starts before its preprocess step's release is logged
    (a recorded run, 2026-11-23): the release ends preprocess, whose FEATURES were just
    written, not the newest step."""
    release = (ev.RequestStateChange, ("e", "EXECUTING", "RELEASED"))
    warm = [
        s
        for i in range(8)
        for m, o in (("preprocess", "FEATURES"), ("classifier", "SCORES"), ("pipeline", "SCORES"))
        for s in _request(f"w{i}.{m}", m, o)
    ]
    steps = [
        *_start("e", "pipeline"),
        *_start("e", "preprocess"),
        (ev.ResponseOutput, ("", "FEATURES", "FP32", (16,))),
        *_start("e", "classifier"),
        release,
        (ev.ResponseOutput, ("", "SCORES", "FP32", (10,))),
        release,
        (ev.ResponseOutput, ("", "SCORES", "FP32", (10,))),
        release,
    ]
    cycles = {c.model: c for c in build(_log(warm + steps)).by_id["e"]}
    assert [o.output for o in cycles["preprocess"].outputs] == ["FEATURES"]
    assert [o.output for o in cycles["classifier"].outputs] == ["SCORES"]
    assert [o.output for o in cycles["pipeline"].outputs] == ["SCORES"]
    assert cycles["preprocess"].released_ns < cycles["classifier"].released_ns


def test_an_ensembles_copy_of_a_steps_output_belongs_to_no_request() -> None:
    """2.51 logs a step's output (``infer_response.cc:174``) and, 0.1 ms later, the ensemble's
    copy of it for the BLS caller (``:148``). Without the rule the gateway, released next,
    took the copy as its own output (``fr_features_growth``: a false shape_growth of an
    output the gateway does not have)."""
    rows = [
        (0.0, 1, ev.RequestPrepared, ("g", "gateway", 1, 0, 0)),
        (0.05, 1, ev.RequestStateChange, ("g", "INITIALIZED", "PENDING")),
        (0.1, 1, ev.RequestStateChange, ("g", "PENDING", "EXECUTING")),
        (0.2, 1, ev.InstanceExecuting, ("gateway", "gateway_0_0", 1)),
        (1.0, 1, ev.RequestPrepared, ("g.s", "enrich", 1, 0, 0)),
        (1.05, 1, ev.RequestStateChange, ("g.s", "INITIALIZED", "PENDING")),
        (1.1, 1, ev.RequestStateChange, ("g.s", "PENDING", "EXECUTING")),
        (1.2, 1, ev.InstanceExecuting, ("enrich", "enrich_0_0", 1)),
        (2.0, 174, ev.ResponseOutput, ("", "SIGNALS", "FP32", (1, 16))),
        (2.1, 148, ev.ResponseOutput, ("", "SIGNALS", "FP32", (1, 16))),
        (2.3, 1, ev.RequestStateChange, ("g.s", "EXECUTING", "RELEASED")),
        (3.0, 174, ev.ResponseOutput, ("", "RISK", "FP32", (1, 1))),
        (3.2, 1, ev.RequestStateChange, ("g", "EXECUTING", "RELEASED")),
    ]
    records = [
        cls(ev.LogRecord(int(ms * MS), ev.LogLevel.INFO, "infer_response.cc", line, i), *args)
        for i, (ms, line, cls, args) in enumerate(rows)
    ]
    assert _outputs(records, "g.s") == ["SIGNALS"]
    assert _outputs(records, "g") == ["RISK"]


def test_a_batchs_outputs_of_one_shape_from_one_line_are_each_a_requests() -> None:
    """Two responses of one batch write the same name and shape from the same line within
    microseconds: not a copy, each request keeps its own."""
    rows = [
        *[(0.0, 1, ev.RequestPrepared, (r, "enrich", 1, 0, 0)) for r in ("a", "b")],
        *[(0.1, 1, ev.RequestStateChange, (r, "INITIALIZED", "PENDING")) for r in ("a", "b")],
        *[(0.2, 1, ev.RequestStateChange, (r, "PENDING", "EXECUTING")) for r in ("a", "b")],
        (0.3, 1, ev.InstanceExecuting, ("enrich", "enrich_0_0", 2)),
        (1.0, 174, ev.ResponseOutput, ("", "SIGNALS", "FP32", (1, 16))),
        (1.01, 174, ev.ResponseOutput, ("", "SIGNALS", "FP32", (1, 16))),
        *[(1.1, 1, ev.RequestStateChange, (r, "EXECUTING", "RELEASED")) for r in ("a", "b")],
    ]
    records = [
        cls(ev.LogRecord(int(ms * MS), ev.LogLevel.INFO, "infer_response.cc", line, i), *args)
        for i, (ms, line, cls, args) in enumerate(rows)
    ]
    assert _outputs(records, "a") == ["SIGNALS"]
    assert _outputs(records, "b") == ["SIGNALS"]
