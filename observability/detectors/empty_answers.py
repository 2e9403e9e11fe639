"""Models that answer every request with no output: error responses that raise nothing.

Why: a python model can fail a request without raising, by returning
``pb_utils.InferenceResponse(error=pb_utils.TritonError(...))`` (or sending one through a
decoupled model's response sender). Triton 2.51 then writes no error line, and counts the
request as a *success* in ``nv_inference_request_success`` and in ``/v2/models/stats``: the
clients get errors that no counter shows (tests/fixtures/foreign/README.md, Round 11:
``tts_vocoder_errors``, 208 client errors and ``nv_inference_request_failure`` 0).

What the verbose log still shows is the responses' shape: every response with outputs writes
an ``add response output`` line per tensor, which ``requests.py`` joins to the request it
answered; an error response writes none. A model whose responses carried outputs and then
stop carrying any, for every request to the end of the window, is answering with errors.
Its BLS callers that only relay the error answer empty with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from observability.detectors.requests import Lifecycle, requests_of
from observability.detectors.window import Window

__all__ = ["EmptyRun", "answering_empty"]

_MIN_LEARNED = 8
"""Responses with outputs needed before a model is known to answer with outputs."""
_LEARNED_SHARE = 0.8
"""...and their share of its responses before the run: an ensemble or a decoupled stream,
whose outputs are mostly written after its release, never qualifies (0.02-0.05 on the
recordings); a classifier with dynamic batching has 0.85 and empty runs of at most 4."""
_EMPTY_SHARE = 0.95
"""Share of the run's responses with no output: the join misplaces about one output in a
hundred on a loaded machine, so one stray output does not end a run."""


@dataclass(frozen=True)
class EmptyRun:
    """A model's trailing run of responses without outputs."""

    model: str
    first: Lifecycle
    """The first empty response of the run."""
    last: Lifecycle
    responses: int
    empty: int
    answered: Lifecycle
    """Its last response with outputs before the run."""
    before: int
    """Responses with outputs before the run."""
    outputs: tuple[str, ...]
    """The output names it answered with before."""
    usual_s: float
    """Median time from entering Triton to release of its responses with outputs."""
    run_s: float
    """The same of the run's responses: far longer when its errors are timeouts of a call
    to a model that hangs (``asr_encoder_hang_bounded``)."""

    @property
    def since_ns(self) -> int:
        return int(self.first.released_ns or 0)

    @property
    def last_ns(self) -> int:
        return int(self.last.released_ns or 0)

    @property
    def instances(self) -> list[str]:
        return sorted({self.first.instance or "", self.last.instance or ""} - {""})


def answering_empty(window: Window, min_run: int = 10, min_span_s: float = 2.0) -> list[EmptyRun]:
    """Models whose last ``min_run`` or more responses (over ``min_span_s`` or more) carried
    no output, after at least ``_MIN_LEARNED`` that did."""
    out = []
    for model, answers in sorted(requests_of(window).answered.items()):
        run = _trailing_run(answers)
        if run is None:
            continue
        start, empty = run
        tail, head = answers[start:], answers[:start]
        said = [c for c in head if c.outputs]
        span_s = ((tail[-1].released_ns or 0) - (tail[0].released_ns or 0)) / 1e9
        if (
            len(tail) < min_run
            or span_s < min_span_s
            or len(said) < _MIN_LEARNED
            or len(said) < _LEARNED_SHARE * len(head)
        ):
            continue
        names = tuple(dict.fromkeys(o.output for c in said[-_MIN_LEARNED:] for o in c.outputs))
        out.append(
            EmptyRun(
                model, tail[0], tail[-1], len(tail), empty, said[-1], len(said), names,
                _latency_s(said), _latency_s(tail),
            )
        )  # fmt: skip
    return out


def _latency_s(answers: list[Lifecycle]) -> float:
    took = [
        (c.released_ns - c.started_ns) / 1e9
        for c in answers
        if c.released_ns is not None and c.started_ns is not None
    ]
    return median(took) if took else 0.0


def _trailing_run(answers: list[Lifecycle]) -> tuple[int, int] | None:
    """Where the longest trailing run that is at least ``_EMPTY_SHARE`` empty starts (at an
    empty response), and its empty responses; None when the last response had outputs."""
    if not answers or answers[-1].outputs:
        return None
    best: tuple[int, int] | None = None
    empty = 0
    for i in range(len(answers) - 1, -1, -1):
        if answers[i].outputs:
            continue
        empty += 1
        if empty >= _EMPTY_SHARE * (len(answers) - i):
            best = (i, empty)
    return best
