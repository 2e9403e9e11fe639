"""stream_stalled on the recorded real runs: the demo's ``stall`` fault stops a gRPC token
stream of the decoupled ``stream`` model after 3 responses, and it is still stalled at the
window's end. Found twice: from the in-model library (``bls.response_sender``), and from the
verbose log's gRPC stream lines alone (the same recording with every signal of the library
taken out). The healthy twin streams too, and must give nothing either way.

The log-matching unit tests replay lines as Triton 2.51 wrote them in the lab (gRPC stream
handler, healthy, stalled and cancelled streams; see docs/triton-behaviour.md)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import cached_property

import pytest

from collectors.logs.parser import parse_bytes
from observability import events as ev
from observability.detectors import Window
from observability.detectors.stream_stalled import StreamStalled
from observability.detectors.streams import log_streams
from observability.findings import Severity
from tests.detectors.recording import RecordedRun
from tests.foreign.parsed import analysis


@dataclass
class WithoutLibrary(Window):
    """The same recording as Triton alone shows it: no stub line of the library, none of its
    spans, none of its series on /metrics."""

    def samples(self, name: str) -> list[tuple[str, int, ev.MetricSample]]:
        return [] if name.startswith("triton_obs_") else super().samples(name)

    @cached_property
    def otlp_spans(self) -> list[ev.OtlpSpan]:
        return []

    @cached_property
    def _logs(self) -> list[object]:
        return [
            e
            for e in Window._logs.func(self)  # type: ignore[attr-defined]
            if not (isinstance(e, ev.StubOutput) and "triton-obs bls:" in e.text)
        ]


def without_library(window: Window) -> Window:
    return WithoutLibrary(
        since_ns=window.since_ns,
        until_ns=window.until_ns,
        store=window.store,
        clock_offset_ns=window.clock_offset_ns,
    )


def test_the_library_reports_the_stalled_stream_while_it_is_stalled(faulty: Window) -> None:
    [finding] = StreamStalled().detect(faulty)
    assert (finding.model, finding.severity) == ("stream", Severity.CRITICAL)
    assert "stalled now" in finding.summary and "in-model library" in finding.summary
    assert "'demo-stall-0'" in finding.summary
    assert any(e.source == "log" and "STALLED stream" in e.detail for e in finding.evidence)


def test_the_verbose_log_alone_finds_the_stalled_stream(faulty: Window) -> None:
    [finding] = StreamStalled().detect(without_library(faulty))
    assert (finding.model, finding.severity) == ("stream", Severity.CRITICAL)
    assert "gRPC response stream(s) of stream stalled now" in finding.summary
    assert "after 3 response(s)" in finding.summary
    assert [e.detail.split(" (")[0] for e in finding.evidence][:1] == ["stream read for stream"]


def test_nothing_before_the_stall_has_lasted_its_deadline(
    faulty: Window, faulty_run: RecordedRun
) -> None:
    stall_at = next(float(i["at_s"]) for i in faulty_run.injections if i["fault"] == "stall")
    early = replace(faulty, until_ns=faulty.since_ns + int((stall_at + 1.0) * 1e9))
    assert StreamStalled().detect(early) == []
    assert StreamStalled().detect(without_library(early)) == []


def test_healthy_streams_give_nothing(healthy: Window) -> None:
    assert StreamStalled().detect(healthy) == []
    assert StreamStalled().detect(without_library(healthy)) == []


# -- matching responses to streams, on lines as Triton 2.51 writes them ----------------------

_HEAD = "I1125 08:21:{s} 411 "
_READ = (
    _HEAD + 'stream_infer_handler.cc:155] "Process for ModelStreamInferHandler, rpc_ok=1, '
    'context 0, 0 step READ"'
)
_PREPARED = (
    _HEAD + 'infer_request.cc:905] "[request id: {rid}] prepared: [0x0x7f05b8005e50] request '
    "id: {rid}, model: {model}, requested version: -1, actual version: 1, flags: 0x0, "
    'correlation id: 0, batch size: 0, priority: 0, timeout (us): 0"'
)
_RESPONSE = (
    _HEAD + 'stream_infer_handler.cc:632] "ModelStreamInferHandler::StreamInferComplete, '
    'context 0, 0 step {step}, callback index {n}, flags {f}, response is nullptr {null}"'
)


def _lines(*rows: str) -> list[object]:
    text = "\n".join(rows) + "\n"
    return [e for e in parse_bytes(text.encode(), year=2026) if not isinstance(e, ev.StubOutput)]


def _resp(s: str, n: int, final: bool = False, step: str = "ISSUED") -> str:
    return _RESPONSE.format(s=s, n=n, f=int(final), null=int(final), step=step)


def test_interleaved_streams_are_told_apart_by_their_response_count() -> None:
    records = _lines(
        _READ.format(s="05.000100"),
        _PREPARED.format(s="05.000150", rid="a", model="llm"),
        _resp("05.010000", 1),
        _READ.format(s="05.011000"),
        _PREPARED.format(s="05.011050", rid="", model="llm"),
        _resp("05.020000", 2),
        _resp("05.021000", 1),
        _resp("05.030000", 3),
        _resp("05.031000", 2, final=True),
    )
    first, second = log_streams(records)
    assert (first.request_id, first.responses, first.open) == ("a", 3, True)
    assert (second.request_id, second.responses, second.open) == ("", 1, False)
    assert second.final_ns is not None and first.last_ns < second.final_ns
    assert [g // 1_000_000 for g in first.gaps_ns] == [9, 10, 10]


def test_a_cancelled_stream_is_closed_and_marked() -> None:
    records = _lines(
        _READ.format(s="17.051831"),
        _PREPARED.format(s="17.051881", rid="s-cancel", model="stream"),
        _resp("17.063023", 1),
        _resp("17.073956", 2),
        _resp("17.324470", 3, final=True, step="CANCELLATION_ISSUED"),
    )
    [stream] = log_streams(records)
    assert (stream.responses, stream.open, stream.cancelled) == (2, False, True)


def test_a_stream_whose_prepared_line_is_missing_is_left_out() -> None:
    assert log_streams(_lines(_READ.format(s="05.000100"), _resp("05.010000", 1))) == []


def _at(t: float) -> str:
    """Seconds into the test minute (08:21), as the log writes them."""
    return f"{t:09.6f}"


def _in_minute_ns(ns: int) -> int:
    return ns % 60_000_000_000


def test_a_stalled_stream_keeps_its_stall_while_healthy_streams_overtake_it() -> None:
    # The llm_stream_stall shape (tests/fixtures/foreign): a stream stops after 3 responses,
    # then healthy streams, two of them interleaved, pass index 4 long after it. Giving index
    # 4 to the oldest stream at 3 handed the stall on to each of them in turn: the open stream
    # looked quiet since the last healthy stream's third response.
    rows = [
        _READ.format(s=_at(5.0)),
        _PREPARED.format(s=_at(5.00005), rid="", model="llm"),
        _resp(_at(5.01), 1),
        _resp(_at(5.02), 2),
        _resp(_at(5.03), 3),
    ]
    for start, lag in ((10.0, 0.0), (10.002, 0.001), (20.0, 0.0)):
        rows += [
            _READ.format(s=_at(start)),
            _PREPARED.format(s=_at(start + 5e-5), rid="", model="llm"),
        ]
        rows += [_resp(_at(start + lag + 0.004 * n), n, final=n == 6) for n in range(1, 7)]
    rows.sort(key=lambda row: row.split()[1])
    records = _lines(*rows)
    streams = log_streams(records)
    assert len(streams) == 4 and [s.open for s in streams] == [True, False, False, False]
    stalled = streams[0]
    assert (stalled.responses, stalled.callbacks) == (3, 3)
    assert _in_minute_ns(stalled.last_ns) == 5_030_000_000
    until = stalled.last_ns + 25 * 10**9
    [finding] = StreamStalled().detect(Window(since_ns=0, until_ns=until, events=records))
    assert (finding.model, finding.severity) == ("llm", Severity.CRITICAL)
    assert "quiet for 25.0 s after 3 response(s)" in finding.summary


def _stream_rows(
    rng: random.Random,
    opened: float,
    first: tuple[float, float],
    gaps: tuple[float, float],
    length: int,
) -> list[tuple[float, str]]:
    """One stream's lines, timed: its read, its request's ``prepared:`` line, then
    ``length`` responses, the last one final or followed by an empty final send."""
    rows = [
        (opened, _READ.format(s=_at(opened))),
        (opened + 5e-5, _PREPARED.format(s=_at(opened + 5e-5), rid="", model="llm")),
    ]
    empty_final = rng.random() < 0.5
    callbacks = length + 1 if empty_final else length
    t = opened + rng.uniform(*first)
    for n in range(1, callbacks + 1):
        final = n == callbacks
        null = int(final and empty_final)
        rows.append((t, _RESPONSE.format(s=_at(t), n=n, f=int(final), null=null, step="ISSUED")))
        t += rng.uniform(*gaps) if n < length else 2e-5
    return rows


@pytest.mark.parametrize("seed", range(20))
def test_no_interleaving_of_healthy_streams_shortens_a_stall(seed: int) -> None:
    # Streams opened 5 a second, 1 to 20 responses 3-30 ms apart, half of them ending with an
    # empty final send, so several are open at once and their responses interleave; one stops
    # at a random count (0: before any response; after its last response: before the empty
    # final send). Whatever the order, the one stream left open is at that count and quiet
    # at least as long as the stalled one.
    rng = random.Random(seed)
    stalled = rng.randrange(40)
    timed: list[tuple[float, str]] = []
    stop, stop_s = -1, 0.0
    for i in range(40):
        rows = _stream_rows(
            rng, rng.uniform(1.0, 9.0), (0.003, 0.03), (0.003, 0.03), rng.randint(1, 20)
        )
        if i == stalled:
            stop = rng.randrange(len(rows) - 2)
            rows = rows[: 2 + stop]
            stop_s = rows[-1][0]
        timed += rows
    timed.sort(key=lambda pair: pair[0])
    streams = log_streams(_lines(*(row for _, row in timed)))
    assert len(streams) == 40
    [left] = [s for s in streams if s.open]
    assert left.callbacks == stop
    assert _in_minute_ns(left.last_ns) <= round(float(_at(stop_s)) * 1e6) * 1000


@pytest.mark.parametrize("seed", range(3))
def test_streams_crowding_a_count_are_not_read_as_stalled(seed: int) -> None:
    # A loaded LLM: 40 streams a second wait 0.3-1.5 s in a queue for their first token,
    # then stream 20-60 tokens 20-40 ms apart: a dozen streams are at the same count at any
    # moment. Taking the most recently active stream at each count would leave the first
    # ones of such a crowd waiting, read as stalled, until the crowd thins out.
    rng = random.Random(seed)
    timed: list[tuple[float, str]] = []
    for _ in range(400):
        opened, length = rng.uniform(1.0, 11.0), rng.randint(20, 60)
        timed += _stream_rows(rng, opened, (0.3, 1.5), (0.02, 0.04), length)
    timed.sort(key=lambda pair: pair[0])
    streams = log_streams(_lines(*(row for _, row in timed)))
    assert len(streams) == 400 and not [s for s in streams if s.open]
    assert max(g for s in streams for g in s.gaps_ns) <= 1.5e9


_CANCEL = (
    _HEAD + 'infer_handler.h:850] "Cancellation notification received for '
    'ModelStreamInferHandler, rpc_ok=1, context 0, 0 step ISSUED"'
)


def _healthy(start: float, model: str = "caption", n: int = 3) -> list[tuple[float, str]]:
    """A stream alone at each count: its responses 30 ms apart, then the final one."""
    rows = [
        (start, _READ.format(s=_at(start))),
        (start + 5e-5, _PREPARED.format(s=_at(start + 5e-5), rid="", model=model)),
    ]
    rows += [
        (start + 0.01 + 0.03 * i, _resp(_at(start + 0.01 + 0.03 * i), i + 1)) for i in range(n)
    ]
    end = start + 0.01 + 0.03 * n
    return [*rows, (end, _resp(_at(end), n + 1, final=True))]


def test_streams_stalled_together_keep_their_stall_while_others_pass_them() -> None:
    """bg_pool_exhausted's shape: four streams of one model send one response each and stop
    (their worker pool is full of them), while another model's streams pass that count one
    by one. In arrival order each passing stream's second response would go to a stalled one
    and each would look as if it had waited seconds; with the four left out, each has its own
    30 ms gaps."""
    timed: list[tuple[float, str]] = []
    for start in (1.0, 1.5, 2.0, 2.5):  # alone at every count: what a lone stream takes
        timed += _healthy(start)
    for i in range(4):
        t = 5.0 + 0.001 * i
        timed += [
            (t, _READ.format(s=_at(t))),
            (t + 5e-5, _PREPARED.format(s=_at(t + 5e-5), rid="", model="search")),
            (t + 0.01, _resp(_at(t + 0.01), 1)),
        ]
    for start in (6.0, 7.1, 8.2, 9.3, 10.4):
        timed += _healthy(start)
    timed.sort(key=lambda pair: pair[0])
    streams = log_streams(_lines(*(row for _, row in timed)))
    stalled = [s for s in streams if s.open]
    assert [(s.model, s.callbacks) for s in stalled] == [("search", 1)] * 4
    passing = [s for s in streams if s.model == "caption"]
    assert len(passing) == 9 and max(g for s in passing for g in s.gaps_ns) < 50_000_000


def test_a_client_that_gave_up_on_its_first_response_leaves_its_count() -> None:
    """A request its model never answered gets no callback, not even a cancellation one: its
    client's deadline leaves only the handler's cancellation lines, naming no stream. The
    stream waiting longest for a first response ends there, instead of taking the next
    stream's first response (another model's) and charging it 10 s."""
    timed: list[tuple[float, str]] = []
    for start in (1.0, 1.5, 2.0):
        timed += _healthy(start)
    timed += [
        (5.0, _READ.format(s=_at(5.0))),
        (5.00005, _PREPARED.format(s=_at(5.00005), rid="", model="search")),
        (15.0, _CANCEL.format(s=_at(15.0))),
    ]
    timed += _healthy(16.0)
    timed.sort(key=lambda pair: pair[0])
    streams = log_streams(_lines(*(row for _, row in timed)))
    [gave_up] = [s for s in streams if s.model == "search"]
    assert (gave_up.open, gave_up.cancelled, gave_up.callbacks) == (False, True, 0)
    assert [g // 10**9 for g in gave_up.gaps_ns] == [10]
    last = [s for s in streams if s.model == "caption"][-1]
    assert not last.open and max(last.gaps_ns) < 50_000_000


def test_a_cancellation_beside_fresh_streams_takes_none_of_them() -> None:
    """A client that cancels a stream in the middle (its model answers that with a
    CANCELLATION_ISSUED callback, or not at all) must not end a stream that has waited a few
    milliseconds for its first response."""
    timed = _healthy(1.0) + _healthy(1.5) + _healthy(2.0)
    timed += [
        (3.0, _READ.format(s=_at(3.0))),
        (3.00005, _PREPARED.format(s=_at(3.00005), rid="", model="caption")),
    ]
    timed += [
        (3.002, _CANCEL.format(s=_at(3.002))),
        (3.01, _resp(_at(3.01), 1)),
        (3.04, _resp(_at(3.04), 2, final=True)),
    ]
    streams = log_streams(_lines(*(row for _, row in sorted(timed))))
    assert not [s for s in streams if s.open or s.cancelled]


def test_a_read_is_paired_with_a_streamed_models_line_not_a_bls_childs() -> None:
    # The handler's thread issues the request it has read at once, but a BLS child of another
    # stream (the tokenizer each llm stream calls first, 3 ms after its READ) can be prepared
    # in between. A READ whose request failed before it was prepared has no line of its own.
    child = "tokenizer"
    rows = []
    for t in (1.0, 2.0, 3.0, 4.0, 5.0):
        rows += [
            _READ.format(s=_at(t)),
            _PREPARED.format(s=_at(t + 5e-5), rid="", model="llm"),
            _PREPARED.format(s=_at(t + 0.003), rid="", model=child),
            _resp(_at(t + 0.01), 1, final=True),
        ]
    rows += [
        _READ.format(s=_at(6.0)),
        _PREPARED.format(s=_at(6.00002), rid="", model=child),  # another stream's child
        _PREPARED.format(s=_at(6.00005), rid="", model="llm"),
        _PREPARED.format(s=_at(6.003), rid="", model=child),
        _resp(_at(6.01), 1),
        _READ.format(s=_at(7.0)),  # failed: nothing of its own follows
        _PREPARED.format(s=_at(7.003), rid="", model=child),
        _resp(_at(8.0), 2),
    ]
    streams = log_streams(_lines(*rows))
    assert [s.model for s in streams] == ["llm"] * 6
    assert [(s.responses, s.open) for s in streams[-1:]] == [(2, True)]


def _stalled(name: str) -> str:
    (finding,) = [f for f in analysis(name).findings if f.kind == "stream_stalled"]
    return finding.summary


def test_a_stall_on_a_decoupled_childs_stream_names_the_child() -> None:
    """sum_lm_hang (tests/fixtures/foreign): sum_router's decoupled execute returns at once, so
    no batch of it stays open; the stream's next step after its last response was a call to
    sum_lm, decoupled (its config says so), whose generator stopped after 1 of 3 tokens."""
    summary = _stalled("sum_lm_hang")
    assert "first BLS call admitted after its last response went to sum_lm, 1.1 ms after" in (
        summary
    )
    assert "as a decoupled model's request is when its execute returns" in summary


def test_a_stall_in_the_streams_own_code_says_its_last_call_was_answered() -> None:
    """llm_stream_stall: llm_bls's worker called kv_decoder (not decoupled, answered), then
    raised in its own code and swallowed it: the callee is named, and not blamed."""
    summary = _stalled("llm_stream_stall")
    assert "went to kv_decoder" in summary
    assert "answered (kv_decoder is not decoupled)" in summary
    assert "its own code stopped after that call" in summary


def test_a_whole_second_log_lists_the_calls_of_that_second() -> None:
    summary = _stalled("sum_lm_hang_iso")
    assert "in the second of its last activity" in summary and "sum_lm (" in summary


def test_a_stream_sent_from_inside_execute_names_the_decoupled_call_feeding_it() -> None:
    """gen_llm_stall_bls: gen_bls forwards a decoupled gen_llm call's responses from inside
    its execute; gen_llm stopped after 4 tokens. gen_bls's batch is still executing, and the
    decoupled call it made is the stream's source (four answered postprocessing calls came
    after it)."""
    summary = _stalled("gen_llm_stall_bls")
    assert "its batch on gen_bls_0_1 has been executing since it was read" in summary
    assert "the last decoupled call it made before its last response went to gen_llm" in summary
    hung = [f for f in analysis("gen_llm_stall_bls").findings if f.kind == "hung_request"]
    assert [f.model for f in hung] == ["gen_bls"] and "to gen_llm" in hung[0].summary


def test_a_stall_charged_to_a_model_that_streams_inside_execute_goes_to_the_other() -> None:
    """gen_llm_stall: the stream lines name no model, and the stall at 4 responses was
    charged to the oldest stream at that count, a gen_bls one. gen_bls forwards its streams
    from inside execute and had released that stream's batch: the stall is gen_ensemble's,
    whose decoupled step gen_llm stopped after 4 tokens."""
    found = [f for f in analysis("gen_llm_stall").findings if f.kind == "stream_stalled"]
    assert [f.model for f in found] == ["gen_ensemble"]
    assert "first charged to a gen_bls stream" in found[0].summary
    assert "its decoupled step gen_llm" in found[0].summary
