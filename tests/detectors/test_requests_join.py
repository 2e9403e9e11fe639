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
