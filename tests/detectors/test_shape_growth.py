"""shape_growth on the recorded real run (the decoder's state doubling TOKEN_IDS) and its
healthy twin (the same generate calls: +1 token per step, reset per request)."""

from __future__ import annotations

import random

from observability import events as ev
from observability.detectors import Window
from observability.detectors.shape_growth import ShapeGrowthDetector
from observability.findings import Severity
from tests.foreign.parsed import analysis

S = 1_000_000_000


def test_doubling_decoder_output_is_found_with_its_shapes(faulty: Window) -> None:
    findings = ShapeGrowthDetector().detect(faulty)
    assert [(f.kind, f.model, f.instance) for f in findings] == [
        ("shape_growth", "decoder", "decoder_0_0")
    ]
    (f,) = findings
    assert f.severity is Severity.CRITICAL
    assert f.request_id is not None and f.request_id.startswith("demo-shape_growth-")
    shapes = f.evidence[0].detail
    assert shapes.startswith("TOKEN_IDS shapes in response order: [5] [11] [23] [47]")
    assert "[65536]" in shapes


def test_healthy_decode_loop_growth_is_not_a_finding(healthy: Window) -> None:
    assert ShapeGrowthDetector().detect(healthy) == []


def _responses(sizes_per_request: list[list[int]]) -> Window:
    """A decoder answering each client request's steps, one response per step."""
    events: list[object] = []
    at = 1_000 * S
    for r, sizes in enumerate(sizes_per_request):
        for step, size in enumerate(sizes):
            rid = f"c{r}.decoder.{step}"
            records = (
                (ev.RequestPrepared, (rid, "decoder", 1, 0, 0)),
                (ev.RequestStateChange, (rid, "INITIALIZED", "PENDING")),
                (ev.RequestStateChange, (rid, "PENDING", "EXECUTING")),
                (ev.InstanceExecuting, ("decoder", "decoder_0_0", 1)),
                (ev.ResponseOutput, ("", "TOKEN_IDS", "INT64", (size,))),
                (ev.RequestStateChange, (rid, "EXECUTING", "RELEASED")),
            )
            for cls, args in records:
                at += 1_000_000
                header = ev.LogRecord(at, ev.LogLevel.INFO, "x.cc", 1, len(events))
                events.append(cls(header, *args))
    return Window(0, at, events=events)


def test_a_fixed_chunk_that_is_never_reset_between_requests_is_a_warning() -> None:
    window = _responses([[4, 8], [12, 16], [20, 24]])
    (f,) = ShapeGrowthDetector().detect(window)
    assert (f.model, f.severity) == ("decoder", Severity.WARNING)
    assert "not reset between client requests" in f.summary


def test_per_request_growth_that_resets_is_normal() -> None:
    window = _responses([[5, 6, 7, 8, 9, 10, 11, 12]] * 3)
    assert ShapeGrowthDetector().detect(window) == []


class _IdlessLog:
    """A log of requests without ids: ``prepared:`` lines, instance batches, stream lines
    and ``add response output`` lines, 1 ms apart, as 2.51 writes them."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self.at = 1_000 * S

    def add(self, cls: type, *args: object) -> None:
        self.at += 1_000_000
        header = ev.LogRecord(self.at, ev.LogLevel.INFO, "x.cc", 1, len(self.events))
        self.events.append(cls(header, *args))

    def begin(self, model: str, instance: str) -> None:
        """A caller's batch of one request (a BLS parent holding its instance)."""
        self.add(ev.RequestPrepared, "", model, 1, 0, 0)
        self.add(ev.InstanceExecuting, model, instance, 1)

    def end(self, instance: str) -> None:
        self.add(ev.InstanceReleased, instance, 1)

    def step(self, rows: list[int], instance: str = "kv_decoder_0_0") -> None:
        """One kv_decoder batch: one request per entry, PRESENT of that many rows."""
        for _ in rows:
            self.add(ev.RequestPrepared, "", "kv_decoder", 1, 0, 0)
        self.add(ev.InstanceExecuting, "kv_decoder", instance, len(rows))
        for n in rows:
            self.add(ev.ResponseOutput, "", "PRESENT", "FP32", (2, n, 8))
        self.add(ev.InstanceReleased, instance, len(rows))

    def window(self) -> Window:
        return Window(0, self.at, events=self.events)


def _bls_requests(rows_per_request: list[list[int]]) -> Window:
    """A BLS generate model driving kv_decoder, one client request per list, no ids."""
    log = _IdlessLog()
    for rows in rows_per_request:
        log.begin("generate", "generate_0_0")
        for n in rows:
            log.step([n])
        log.end("generate_0_0")
    return log.window()


LEAK = [list(range(1 + 8 * r, 9 + 8 * r)) for r in range(8)]
"""8 client requests of 8 decode steps each, the cache never reset: 1 to 64 rows."""
SAWTOOTH = [list(range(1, 9))] * 8
"""The same 8 requests of 8 steps, the cache reset per request: 1 to 8 rows, 8 times."""


def test_an_id_less_cache_that_rises_across_requests_is_a_warning() -> None:
    (f,) = ShapeGrowthDetector().detect(_bls_requests(LEAK))
    assert (f.model, f.instance, f.severity) == ("kv_decoder", "kv_decoder_0_0", Severity.WARNING)
    assert f.request_id is None
    assert "grows by 16 elements at each of 64 successive executions" in f.summary
    assert "never reset" in f.summary
    assert f.evidence[0].detail.startswith("PRESENT shapes in response order: [2,1,8] [2,2,8]")
    assert f.evidence[-1].detail.endswith("shape: [2,64,8] (request without an id)")


def test_an_id_less_sawtooth_of_the_same_lengths_is_normal() -> None:
    assert ShapeGrowthDetector().detect(_bls_requests(SAWTOOTH)) == []


def test_one_long_id_less_loop_inside_the_request_driving_it_is_normal() -> None:
    """64 steps rising in one request: its BLS parent's batch was open throughout."""
    assert ShapeGrowthDetector().detect(_bls_requests([[n for r in LEAK for n in r]])) == []


def test_id_less_growth_inside_one_stream_is_normal_across_streams_a_leak() -> None:
    """A decoupled caller returns from execute at once: its gRPC stream, from READ to its
    final response, is the request that drives the loop."""

    def streams(rows_per_stream: list[list[int]]) -> Window:
        log = _IdlessLog()
        for rows in rows_per_stream:
            log.add(ev.StreamRequestRead)
            log.begin("llm_bls", "llm_bls_0_0")
            log.end("llm_bls_0_0")
            for i, n in enumerate(rows, 1):
                log.step([n])
                log.add(ev.StreamResponse, i, False, False, "ISSUED")
            log.add(ev.StreamResponse, len(rows) + 1, True, True, "ISSUED")
        return log.window()

    assert ShapeGrowthDetector().detect(streams([[n for r in LEAK for n in r]])) == []
    assert ShapeGrowthDetector().detect(streams(SAWTOOTH)) == []
    (f,) = ShapeGrowthDetector().detect(streams(LEAK))
    assert "6 gRPC stream requests began and ended meanwhile" in f.summary  # not the ends


def test_an_id_less_leak_is_found_past_a_request_stuck_alongside() -> None:
    """A generate batch hung on another instance is open throughout, but it is not what
    drove the growth: 8 other generate batches began and ended meanwhile."""
    log = _IdlessLog()
    log.begin("generate", "generate_0_1")
    for rows in LEAK:
        log.begin("generate", "generate_0_0")
        for n in rows:
            log.step([n])
        log.end("generate_0_0")
    (f,) = ShapeGrowthDetector().detect(log.window())
    assert f.model == "kv_decoder"


def test_each_instance_keeps_its_own_cache_even_when_the_join_swaps_their_outputs() -> None:
    """Two instances, each with its own leaking cache (kv_decoder_0_1 1,000 rows ahead),
    executing together; at every other step both outputs come before either release, so the
    join hands each instance the other's output: one spike or dip per two steps."""
    log = _IdlessLog()
    for k in range(1, 81):
        for _ in range(2):
            log.add(ev.RequestPrepared, "", "kv_decoder", 1, 0, 0)
        log.add(ev.InstanceExecuting, "kv_decoder", "kv_decoder_0_0", 1)
        log.add(ev.InstanceExecuting, "kv_decoder", "kv_decoder_0_1", 1)
        log.add(ev.ResponseOutput, "", "PRESENT", "FP32", (2, k, 8))
        if k % 2:
            log.add(ev.ResponseOutput, "", "PRESENT", "FP32", (2, 1000 + k, 8))
            log.add(ev.InstanceReleased, "kv_decoder_0_0", 1)
        else:
            log.add(ev.InstanceReleased, "kv_decoder_0_0", 1)
            log.add(ev.ResponseOutput, "", "PRESENT", "FP32", (2, 1000 + k, 8))
        log.add(ev.InstanceReleased, "kv_decoder_0_1", 1)
    findings = ShapeGrowthDetector().detect(log.window())
    assert sorted((f.model, f.instance) for f in findings) == [
        ("kv_decoder", "kv_decoder_0_0"),
        ("kv_decoder", "kv_decoder_0_1"),
    ]


def test_dynamic_batches_are_compared_as_wholes() -> None:
    """Batches of 3 requests: a leaking cache grows by 3 rows a batch; 3 healthy loops in
    lockstep return the same rows in each batch and reset together."""
    leak = _IdlessLog()
    for b in range(40):
        leak.step([3 * b + 1, 3 * b + 2, 3 * b + 3])
    (f,) = ShapeGrowthDetector().detect(leak.window())
    assert "at each of 40 successive executions" in f.summary

    lockstep = _IdlessLog()
    for _request in range(12):
        lockstep.begin("generate", "generate_0_0")
        for n in range(1, 11):
            lockstep.step([n, n, n])
        lockstep.end("generate_0_0")
    assert ShapeGrowthDetector().detect(lockstep.window()) == []


def test_id_less_sizes_that_follow_the_input_length_are_noise() -> None:
    rng = random.Random(7)
    log = _IdlessLog()
    for _ in range(2_000):
        log.step([rng.randint(1, 512)])
    assert ShapeGrowthDetector().detect(log.window()) == []


def test_two_versions_on_one_instance_name_are_split_into_their_trails() -> None:
    """st_state_growth (tests/fixtures/foreign, Triton 2.51): both served versions of
    sess_tracker leak a trail on instances named alike, out of step in the log."""
    found = [f for f in analysis("st_state_growth").findings if f.kind == "shape_growth"]
    assert {(f.model, f.instance) for f in found} == {
        ("sess_tracker", "sess_tracker_0_0"),
        ("sess_tracker", "sess_tracker_0_1"),
    }
    assert all("never reset" in f.summary for f in found)
    assert [f for f in analysis("st_healthy").findings if f.kind == "shape_growth"] == []


def test_a_caller_relaying_its_childs_growing_output_is_named_in_the_childs_finding() -> None:
    """xl_detok_leak: xl_detok's TEXT_IDS doubles per response; xl_gateway returns it as TGT
    1-4 ms later (the same infer_response.cc line, another output name). One finding, the
    child's, naming the relay; none on the gateway, which keeps no state."""
    found = [f for f in analysis("xl_detok_leak").findings if f.kind == "shape_growth"]
    assert [(f.model, f.severity) for f in found] == [("xl_detok", Severity.CRITICAL)]
    assert "Relayed by: xl_gateway as TGT" in found[0].summary


def test_an_ensemble_output_copying_a_steps_growth_is_one_finding() -> None:
    """gen_postprocessing_leak: gen_postprocessing's OUTPUT grows at each call and the
    decoupled ensemble returns it as text_output, which the join gives the step. One finding
    on the step, which names the copy; no thread_pool_exhaustion on gen_bls from the
    ensemble's step requests read as its calls."""
    found = [f for f in analysis("gen_postprocessing_leak").findings if f.severity.rank]
    assert [(f.kind, f.model) for f in found] == [("shape_growth", "gen_postprocessing")]
    assert "The same sizes come back as text_output" in found[0].summary
