"""A model's backend failing its requests: what ``stub_unhealthy`` and ``model_failing`` tell apart.

Why one module: on ``/metrics`` a dead python stub and an ``execute`` that raises look the same
(``nv_inference_request_failure{reason="BACKEND"}`` rises while ``nv_inference_request_success``
stands still), and only the log tells them apart. A raising execute makes the python backend
write, at any verbosity, one error line per failed batch::

    E1126 01:56:52.206042 1 pb_stub.cc:714] "Failed to process the request(s) for model
    'rag_orchestrator_0_0', message: TypeError: 'async for' requires ...\n\nAt:\n
    /models/rag_orchestrator/1/model.py(69): _generate\n ..."

A dead stub writes nothing (the caller handled the error) or ``Stub process '<instance>' is not
healthy`` (a ``StubHealth`` record, not an error line). Both detectors read both functions, so
a model is reported once, by the kind that is true.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.window import Window, per_window

__all__ = [
    "BACKEND_REASONS",
    "CACHE_HITS",
    "FAILURES",
    "SUCCESSES",
    "Failing",
    "Raised",
    "failing",
    "model_of_instance",
    "per_scrape",
    "raised",
    "raising",
    "short",
]

FAILURES = "nv_inference_request_failure"
SUCCESSES = "nv_inference_request_success"
CACHE_HITS = "nv_cache_num_hits_per_model"
"""A response-cache hit counts as a success too, without reaching the backend: a model that
fails every request it executes still gains successes from its cached answers
(``doc_extract_raises_cached``)."""

_INSTANCE = re.compile(r"_\d+_\d+$")
_RAISED = re.compile(
    r"Failed to process the request\(s\) for model '(?P<instance>[^']+)', "
    r"message: (?P<message>.*)",
    re.DOTALL,
)
_EXCEPTION = re.compile(r"(?P<type>[A-Za-z_][\w.]*): ")
_FRAME = re.compile(r"^\s*(?P<file>\S+?)\((?P<line>\d+)\): (?P<function>\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Failing:
    """A model whose every request failed in its backend over a trailing run of scrapes."""

    model: str
    target: str
    since_ns: int
    last_ns: int
    failures: float
    successes: float
    """The success counter less cache hits, unchanged through the run."""
    cached: float = 0.0
    """Requests answered from the response cache during the run (successes all)."""


def failing(window: Window, min_failures: float = 5.0) -> list[Failing]:
    """Models whose backend failures rose and successes did not, from the last scrape back."""
    fails: dict[tuple[str, str], dict[int, float]] = {}
    for target, at, s in window.samples(FAILURES):
        reason = s.label("reason")
        if reason and reason != "BACKEND":
            continue
        per = fails.setdefault((target, s.label("model")), {})
        per[at] = per.get(at, 0.0) + s.value
    oks: dict[tuple[str, str], dict[int, float]] = {}
    for target, at, s in window.samples(SUCCESSES):
        per = oks.setdefault((target, s.label("model")), {})
        per[at] = per.get(at, 0.0) + s.value
    hits: dict[tuple[str, str], dict[int, float]] = {}
    for target, at, s in window.samples(CACHE_HITS):
        per = hits.setdefault((target, s.label("model")), {})
        per[at] = per.get(at, 0.0) + s.value
    for key, per in hits.items():  # the successes that reached the backend
        ok_of = oks.get(key, {})
        for at, n in per.items():
            if at in ok_of:
                ok_of[at] -= n
    out = []
    for (target, model), points in fails.items():
        series = sorted(points.items())
        ok = oks.get((target, model), {})
        end = len(series) - 1
        start = end
        while start > 0:
            (at0, f0), (at1, f1) = series[start - 1], series[start]
            if f1 < f0 or ok.get(at1, 0.0) != ok.get(at0, 0.0):
                break  # a reset, or a success: the run of failures-only starts after it
            start -= 1
        risen = series[end][1] - series[start][1]
        if end > start and risen >= min_failures:
            hit = hits.get((target, model), {})
            cached = hit.get(series[end][0], 0.0) - hit.get(series[start][0], 0.0)
            out.append(
                Failing(
                    model, target, series[start][0], series[end][0], risen,
                    ok.get(series[end][0], 0.0), max(cached, 0.0),
                )
            )  # fmt: skip
    return out


BACKEND_REASONS = ("", "BACKEND")
"""A failure in the model's backend: ``reason="BACKEND"``, or no reason (releases before it)."""


def per_scrape(
    window: Window, name: str, model: str | None = None, reasons: tuple[str, ...] | None = None
) -> dict[int, float]:
    """A counter's samples summed per scrape time (over targets and versions), of one model
    or all, of the ``reasons`` given or all: what each reader of a counter's rise starts from."""
    out: dict[int, float] = {}
    for _t, at, s in window.samples(name):
        if model is not None and s.label("model") != model:
            continue
        if reasons is not None and s.label("reason") not in reasons:
            continue
        out[at] = out.get(at, 0.0) + s.value
    return out


def model_of_instance(instance: str) -> str:
    """``router_0_7`` -> ``router``: Triton names instances ``<model>_<group>_<index>``."""
    return _INSTANCE.sub("", instance) if _INSTANCE.search(instance) else instance


@dataclass(frozen=True)
class Raised:
    """One error line of a batch whose ``execute`` raised (or returned an error for it)."""

    line: ev.ErrorLine
    instance: str
    exception: str
    """The exception's type as the stub printed it (``TypeError``), or ``""``."""
    message: str
    """Its first line, without the type."""
    frames: tuple[str, ...]
    """``file(line): function`` of the model's own code, from the last ``At:`` block:
    innermost first (pybind11's order), so the first is where it was raised."""
    child: str = ""
    """The model whose own failure this one passes up, when its message embeds that
    model's ``Failed to process the request(s)`` text (a BLS child's error re-raised)."""


@per_window
def raised(window: Window) -> dict[str, list[Raised]]:
    """The error lines of raising executes in the window, by model, in time order; read once
    per window object (``stub_unhealthy`` and ``model_failing`` both ask, the latter twice).
    Read-only."""
    return _raised_lines(window.logs(ev.ErrorLine))


def _raised_lines(lines: list[ev.ErrorLine]) -> dict[str, list[Raised]]:
    out: dict[str, list[Raised]] = {}
    for line in lines:
        if "Failed to process the request(s)" not in line.text:
            continue
        r = _raised(line)
        if r is not None:
            out.setdefault(model_of_instance(r.instance), []).append(r)
    return out


def raising(window: Window, runs: list[Failing]) -> dict[str, tuple[Failing, list[Raised]]]:
    """Of ``runs`` (``failing``), the models whose executes raised during their run: the stub
    is alive. Model -> its run of failures and the error lines written in it."""
    errors = raised(window)
    if not errors:
        return {}
    out = {}
    for f in runs:
        run = errors.get(f.model, ())
        lines = [r for r in run if f.since_ns <= r.line.header.at_ns <= f.last_ns]
        if lines:
            out[f.model] = (f, lines)
    return out


def _raised(line: ev.ErrorLine) -> Raised | None:
    m = _RAISED.search(line.text)
    if m is None or "is not healthy" in m.group("message").split("\n", 1)[0]:
        return None  # a dead child's stub, told by the caller: stub_unhealthy's
    body = m.group("message")
    first, _, rest = body.partition("\n")
    kind = _EXCEPTION.match(first)
    exception = kind.group("type") if kind else ""
    message = first[kind.end() :] if kind else first
    # A re-raised child error carries the child's traceback first; the model's own frames
    # are the last block (fr_score_raises: fr_score's frames, then fr_gateway's _score).
    own = rest.rsplit("At:", 1)[-1] if "At:" in rest else rest
    frames = tuple(
        f"{f.group('file')}({f.group('line')}): {f.group('function')}" for f in _FRAME.finditer(own)
    )
    inner = _RAISED.search(body)
    child = model_of_instance(inner.group("instance")) if inner else ""
    wrapped = _wrapped(rest.rsplit("At:", 1)[0]) if _TRACEBACK in first else None
    if wrapped is not None:
        exception, message, innermost = wrapped
        frames = (*innermost, *frames)
    return Raised(line, m.group("instance"), exception, message.strip(), frames, child)


_TRACEBACK = "Traceback (most recent call last):"
_PY_FRAME = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)', re.MULTILINE
)
_PY_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*): (?P<message>.*)$", re.MULTILINE)


def _wrapped(text: str) -> tuple[str, str, tuple[str, ...]] | None:
    """The exception a wrapper's message embeds as a Python traceback, ``(type, message,
    frames innermost first)``: a serving layer that re-raises the user's error inside its
    own (PyTriton's proxy: ``TritonModelException: Model execute error: Traceback ...``,
    whose ``At:`` frame is the same generated file for every model, pt_tag_raises). The
    last exception line is the innermost; its module prefix is dropped."""
    found = list(_PY_EXCEPTION.finditer(text))
    if not found:
        return None
    last = found[-1]
    frames = [
        f"{f.group('file')}({f.group('line')}): {f.group('function')}"
        for f in _PY_FRAME.finditer(text[: last.start()])
    ]
    return last.group("type").rsplit(".", 1)[-1], last.group("message"), tuple(reversed(frames))


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, for a finding's summary."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
