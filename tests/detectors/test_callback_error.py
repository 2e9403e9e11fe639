"""callback_error on the recorded real run: the demo's failing done-callback and task."""

from __future__ import annotations

from benchmarks.log_parse import _traffic_block, synthesise
from collectors.logs.parser import parse_lines
from observability import events as ev
from observability.detectors import Window
from observability.detectors.callback_error import CallbackErrorDetector, tracebacks
from observability.findings import Severity
from tests.foreign.parsed import analysis


def _victim(finding) -> str | None:
    """The request a finding names: its own, or — when two requests were released in the same
    instant on a busy machine, which the log cannot order — the tie it names in the summary."""
    if finding.request_id is not None:
        return finding.request_id
    return "tie" if "cannot tell which request" in finding.summary else None


def test_callback_and_task_exceptions_are_found_on_router(faulty: Window) -> None:
    findings = CallbackErrorDetector().detect(faulty)
    assert [(f.kind, f.model) for f in findings] == [("callback_error", "router")] * 2
    callback, task = findings
    assert _victim(callback) == "demo-callback-0"
    assert _victim(task) in ("demo-task_error-0", "tie")
    if _victim(task) == "tie":  # then the real victim is among those it names
        assert "'demo-task_error-0'" in task.summary
    assert "done-callback raised KeyError: 'LOGITS'" in callback.summary
    assert "asyncio task raised KeyError" in task.summary
    assert callback.severity is Severity.CRITICAL
    assert callback.evidence[0].detail.startswith("Exception in callback ")
    assert callback.evidence[0].detail.endswith("KeyError: 'LOGITS'")
    assert task.evidence[0].detail.startswith("Task exception was never retrieved")
    assert all(f.instance and f.instance.startswith("router_") for f in findings if f.request_id)


def test_traceback_blocks_take_the_model_from_the_innermost_model_file(faulty: Window) -> None:
    blocks = tracebacks(faulty)
    assert [(b.kind, b.model, b.exception) for b in blocks] == [
        ("callback", "router", "KeyError: 'LOGITS'"),
        ("task", "router", "KeyError: 'LOGITS'"),
    ]


def test_healthy_twin_has_no_callback_error(healthy: Window) -> None:
    assert CallbackErrorDetector().detect(healthy) == []


S = 1_000_000_000
TASK_TRACEBACK = (
    "Task exception was never retrieved",
    "future: <Task finished name='Task-9' coro=<TritonPythonModel._work() done, defined at "
    "/models/router/1/model.py:40> exception=KeyError('LOGITS')>",
    "Traceback (most recent call last):",
    '  File "/models/router/1/model.py", line 52, in _work',
    "KeyError: 'LOGITS'",
)


def _router_window(
    released_at: dict[str, int], traceback_at: int, other_model_at: int | None = None
) -> Window:
    """Router requests, each executing for 0.3 s and released without outputs at the given
    times (ns), one more that hangs (executing since 90 s, never released), and a swallowed
    task's traceback written after the last Triton line at or before ``traceback_at`` (stub
    text borrows that line's time); ``other_model_at`` adds a line of another model."""
    records: list[tuple[int, type, tuple[object, ...]]] = []
    if other_model_at is not None:
        records.append((other_model_at, ev.RequestPrepared, ("x-0", "preprocess", 1, 0, 0)))
    for rid, rel in {**released_at, "hang-0": 90 * S + 300_000_000}.items():
        records += [
            (rel - 300_000_000, ev.RequestPrepared, (rid, "router", 1, 0, 0)),
            (rel - 299_000_000, ev.RequestStateChange, (rid, "INITIALIZED", "PENDING")),
            (rel - 298_000_000, ev.RequestStateChange, (rid, "PENDING", "EXECUTING")),
            (rel - 297_000_000, ev.InstanceExecuting, ("router", "router_0_0", 1)),
        ]
        if rid != "hang-0":
            records.append((rel, ev.RequestStateChange, (rid, "EXECUTING", "RELEASED")))
    records.append((traceback_at, ev.StubOutput, ()))
    records.sort(key=lambda r: (r[0], r[1] is ev.StubOutput))
    events: list[object] = []
    last = 0
    for at, cls, args in records:
        if cls is ev.StubOutput:
            events += [
                ev.StubOutput(last, len(events) + i, t) for i, t in enumerate(TASK_TRACEBACK)
            ]
            continue
        last = at
        events.append(cls(ev.LogRecord(at, ev.LogLevel.INFO, "x.cc", 1, len(events)), *args))
    return Window(0, max(released_at.values()) + S, events=events)


def test_a_task_whose_request_was_released_just_before_its_traceback_is_named() -> None:
    """On a loaded machine the stub's traceback can reach the log after the release it
    explains and another line (CI, 2026-11-22: with a hung request of the same model open,
    the task finding named nobody)."""
    window = _router_window(
        {"quiet-0": 100 * S, "broken-0": 110 * S},
        traceback_at=110 * S + 50_000_000,
        other_model_at=110 * S + 50_000_000,
    )
    (f,) = CallbackErrorDetector().detect(window)
    assert (f.model, f.request_id, f.severity) == ("router", "broken-0", Severity.CRITICAL)


def test_a_release_after_the_task_traceback_is_preferred_to_one_before() -> None:
    window = _router_window(
        {"before-0": 110 * S - 300_000_000, "after-0": 110 * S + 100_000_000},
        traceback_at=110 * S,
    )
    (f,) = CallbackErrorDetector().detect(window)
    assert f.request_id == "after-0"


def test_a_task_with_no_release_within_the_gap_names_nobody() -> None:
    window = _router_window(
        {"a-0": 100 * S, "b-0": 102 * S}, traceback_at=101 * S, other_model_at=101 * S
    )
    (f,) = CallbackErrorDetector().detect(window)
    assert (f.request_id, f.severity) == (None, Severity.WARNING)


def test_a_traceback_printed_on_every_request_is_one_finding_with_its_count() -> None:
    """The traffic of a real 2.51 recording (tests/fixtures/logs/glog_2.51_session.log, whose
    `printer` model's done-callback and task each raise twice, unattributed) repeated 40
    times, as ``benchmarks.log_parse`` makes its log: a callback that raises on every call.
    Each exception is one finding with its count and last time, not 80 findings."""
    per_block = len(_traffic_block().splitlines())
    events = list(parse_lines(synthesise(40 * per_block), year=2026))
    stamps = [e.header.at_ns for e in events if hasattr(e, "header")]
    found = CallbackErrorDetector().detect(Window(min(stamps), max(stamps), events=events))
    assert sorted(f.summary.split(" raised ")[1].split(":")[0] for f in found) == [
        "RuntimeError",
        "ValueError",
    ]
    for f in found:
        assert f.model == "printer" and f.request_id is None
        assert "The same exception was printed 80 times" in f.summary
        assert f.last_seen_ns - f.first_seen_ns > 5e8  # the clock moves a second every 20
        first, last = (e.detail.splitlines() for e in f.evidence)
        assert first[-1] == last[-1]  # the exception; a task line names its address


def test_a_callback_that_breaks_its_batch_is_told_with_the_batch_and_in_the_hang() -> None:
    """xl_callback_error (tests/fixtures/foreign): the gather's done-callback in xl_gateway
    raised KeyError and the batch awaiting it waited to the window's end. The traceback's
    frames name xl_gateway; one batch of it was running then and went on waiting: critical,
    naming that instance; and the hang's finding says where its result was lost, not that
    its last call (xl_translate, a batch of 2 answering 2 outputs) answered short."""
    found = {f.kind: f for f in analysis("xl_callback_error").findings}
    callback, hung = found["callback_error"], found["hung_request"]
    assert (callback.severity, callback.instance) == (Severity.CRITICAL, "xl_gateway_0_1")
    assert "xl_gateway_0_1's (batch of 1), still waiting after 25.0 s" in callback.summary
    assert "a done-callback of xl_gateway raised KeyError: 'customer-acme'" in hung.summary
    assert "usually add" not in hung.summary
