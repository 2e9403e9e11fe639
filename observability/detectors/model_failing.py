"""model_failing: every request to a model fails, because its ``execute`` raises or answers errors.

Why a kind of its own: a model that fails every request after a bad deploy is an outage its
clients see as errors, and the one thing its owner needs is the exception and where it was
raised. ``/metrics`` shows the outage (failures rise, successes stand still) but not its
cause, and the same counters are what a dead stub leaves (``stub_unhealthy``); the python
backend's error line per failed batch tells which (``backend_failures.py``). Before this kind
such a model was reported as a dead stub "with no line written", which sent its owner to dmesg
instead of to the traceback Triton had logged (tests/fixtures/foreign/README.md, Round 7).

A model that *returns* an error response for every request raises nothing, and Triton counts
those requests as successes: only the verbose log's responses without outputs show it
(``empty_answers.py``). That is the same outage for its clients, so the same kind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from observability import events as ev
from observability.detectors.backend_failures import (
    BACKEND_REASONS,
    CACHE_HITS,
    FAILURES,
    SUCCESSES,
    Failing,
    Raised,
    failing,
    per_scrape,
    raised,
    raising,
    short,
)
from observability.detectors.empty_answers import EmptyRun, answering_empty
from observability.detectors.instances import instances_of
from observability.detectors.loads import clock
from observability.detectors.output_contract import breaches
from observability.detectors.requests import log_ref
from observability.detectors.stub_unhealthy import dead_stubs
from observability.detectors.waits import callees
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ModelFailing"]

_SUMMARY_CHARS = 300

ADVICE = (
    "The model's own code raises on every request (a bad deploy, a changed input, a missing "
    "dependency): read the exception and the frames above, fix model.py and load the model "
    "again, or roll back to the last version that served. The stub is alive: this is not an "
    "OOM kill. Clients get the exception's text in their error response; alert on the "
    "model's failure rate so the next bad deploy is caught in minutes."
)


ERROR_ADVICE = (
    "The model returns an error response (pb_utils.InferenceResponse(error=...), or a "
    "decoupled sender's error) for every request: its clients get that error's text, while "
    "Triton 2.51 counts the requests as successes, so no failure rate alerts. Read the error a "
    "client receives, or log it in the model (pb_utils.Logger) where it builds the error; "
    "check what changed when the run began (a reload, a config parameter, an input the "
    "clients now send) and fix or roll it back. Count error responses in the model itself "
    "(a pb_utils.MetricFamily counter) so the next one is alerted on."
)


def _counted_as_success(window: Window, model: str, run: EmptyRun) -> str | None:
    """How /metrics counted the run's requests, when it counted them as successes."""
    points = sorted(per_scrape(window, SUCCESSES, model).items())
    inside = [v for at, v in points if run.since_ns <= at <= run.last_ns]
    if len(inside) < 2 or inside[-1] <= inside[0]:
        return None
    return f"{SUCCESSES} rose by {inside[-1] - inside[0]:g} over the run"


def _unloaded_callee(window: Window, model: str, since_ns: int) -> str:
    """``since X, which it calls, was unloaded ...`` when a model it calls was unloaded just
    before its errors began: a BLS call to a model that is not ready fails (vid_track_unloaded:
    'Model 'vid_track' is not ready', in the clients' errors only)."""
    called = callees(instances_of(window)).get(model, set())
    states = window.logs(ev.ModelStateChange)
    gone = [
        r
        for r in states
        if r.state in ("unloading", "unloaded")
        and r.model != model
        and -_UNLOAD_NEAR_NS
        <= since_ns - r.header.at_ns
        < (60e9 if r.model in called else _UNLOAD_NEAR_NS)
        # a reload unloads the old copy too: only a model that stayed unloaded
        and not any(
            s.model == r.model and s.state in _BACK and s.header.at_ns > r.header.at_ns
            for s in states
        )
    ]
    if not gone:
        return ""
    last = gone[-1]
    which = ", which it calls," if last.model in called else ""
    return (
        f"since {last.model}{which} was unloaded (its unload ended "
        f"{(last.header.at_ns - since_ns) / 1e9:+.1f} s from the first error): BLS calls to a "
        "model that is not ready fail"
    )


_BACK = ("loading", "loaded")
_UNLOAD_NEAR_NS = 5_000_000_000
"""An unload this close to when a model's errors began is their likely cause even when the
model was not learned calling it (a call made only now and then); a model stops being ready
when its unload begins, a second before Triton logs it unloaded (vid_track_unloaded: 1.1 s)."""


def _with_relays(finding: Finding, relays: list[str]) -> Finding:
    if not relays:
        return finding
    said = (
        f" Its BLS callers {', '.join(sorted(relays))} fail on every request with it (they "
        "raise on its missing outputs)."
    )
    return replace(finding, summary=finding.summary + said)


def _failure_rises(window: Window) -> dict[str, float]:
    """Model -> how much its failure counter (every reason) rose over the window."""
    points: dict[str, dict[int, float]] = {}
    for _target, at, s in window.samples(FAILURES):
        per = points.setdefault(s.label("model"), {})
        per[at] = per.get(at, 0.0) + s.value
    return {
        m: max(0.0, per[max(per)] - per[min(per)]) for m, per in points.items() if len(per) >= 2
    }


def _failure_share(window: Window, model: str) -> tuple[float, float, float] | None:
    """``(failed, succeeded, failed share)`` of the model's requests over the window, from
    the first and last scrape of /metrics (cache hits left out)."""
    fails, oks, hits = (
        per_scrape(window, name, model, BACKEND_REASONS)
        for name in (FAILURES, SUCCESSES, CACHE_HITS)
    )
    if len(fails) < 2 or len(oks) < 2:
        return None
    first, last = min(fails), max(fails)
    failed = fails[last] - fails[first]
    served = oks.get(last, 0.0) - oks.get(first, 0.0) - (hits.get(last, 0.0) - hits.get(first, 0.0))
    if failed <= 0:
        return None
    return failed, served, failed / max(failed + served, 1.0)


PARTIAL_ADVICE = (
    "The model's code raises for some requests and serves the others: read the exception and "
    "the frame above, and find what the failing requests share (an input shape or value, a "
    "batch size, a state an instance reaches). Validate inputs in execute and return an "
    "error response naming the bad input instead of raising, and alert on the model's failure "
    "ratio (nv_inference_request_failure against nv_inference_request_success)."
)


@dataclass
class ModelFailing:
    min_failures: float = 5.0
    """Backend failures with no success, from /metrics, that make a failing model; and the
    error lines that make one that fails some of its requests."""
    min_share: float = 0.01
    """Share of a model's batches (or, without the verbose log, of its requests) that must
    have raised for a model that serves the rest to be reported."""
    max_evidence: int = 5
    timeout_slowdown: float = 5.0
    """Error responses this many times slower than the model's answers (and 0.5 s or more)
    while a hang is in progress are its calls' timeouts, not the model's own fault."""
    kind: str = "model_failing"

    def detect(self, window: Window) -> list[Finding]:
        failures = failing(window, self.min_failures)
        runs = raising(window, failures)
        # A caller that only passes a failing child's error up fails because of it: one
        # finding, the child's, naming its callers (one bug paged once, at its own code).
        passed_up = {
            m: child
            for m, (_, lines) in runs.items()
            if (child := _only_child(lines)) is not None and child in runs and child != m
        }
        callers: dict[str, list[Failing]] = {}
        for m, child in passed_up.items():
            callers.setdefault(child, []).append(runs[m][0])
        found = [
            self._finding(f, lines, callers.get(m, []))
            for m, (f, lines) in runs.items()
            if m not in passed_up
        ]
        failing_models = {f.model for f in failures}
        found += self._raising_some(window, failing_models | set(runs))
        found += self._failing_other(window, {f.model for f in found} | failing_models)
        empty = self._answering_errors(window, failing_models)
        # A caller raising because its callee's answers came back empty (a missing output:
        # AttributeError on None) is that callee's relay, not a second bug (vid_detect_wrong
        # _output_name: vid_gateway raised on every request).
        calls = callees(instances_of(window))
        told = {f.model for f in empty}
        relays = {
            f.model
            for f in found
            if f.severity is Severity.CRITICAL and calls.get(f.model, set()) & told
        }
        return [f for f in found if f.model not in relays] + [
            _with_relays(f, [r for r in relays if f.model in calls.get(r, set())]) for f in empty
        ]

    def _raising_some(self, window: Window, failing_models: set[str]) -> list[Finding]:
        """Models whose execute raised on part of their batches (``min_share`` or more of
        them, at least ``min_failures`` times) while the rest succeeded: a bug that depends
        on the input (tests/fixtures/foreign tts_acoustic_partial_errors: KeyError on 46 of
        258 batches). Not a caller whose errors come from a failing callee (that callee's
        finding is the cause: a parent's AttributeError on a child's error response)."""
        errors = raised(window)
        inst = instances_of(window)
        calls = callees(inst)
        executed: dict[str, int] = {}
        for e in inst.executions:
            executed[e.model] = executed.get(e.model, 0) + 1
        out = []
        for model, lines in sorted(errors.items()):
            if model in failing_models or len(lines) < self.min_failures:
                continue
            others = (failing_models | set(errors)) - {model}
            if calls.get(model, set()) & others or (model not in calls and failing_models):
                continue  # a callee fails (or, calls unknown, some model fails everything)
            if any(r.child and r.child in errors for r in lines):
                continue
            counted = _failure_share(window, model)
            batches = executed.get(model, 0)
            share = len(lines) / batches if batches else (counted[2] if counted else 0.0)
            if share < self.min_share:
                continue
            out.append(self._partial_finding(model, lines, batches, counted))
        return out

    def _failing_other(self, window: Window, told: set[str]) -> list[Finding]:
        """Models whose failure counter rose with ``reason="OTHER"`` on ``min_share`` or more
        of their requests: failures no backend raised, which no error line of the model
        tells. A decoupled ensemble whose step sent an error response mid-stream counts it
        there alone (gen_llm_kv_errors: 18 of 56 streams; the step's own counters, released
        when its execute returned, show successes), and its clients get a cut stream."""
        models = sorted({s.label("model") for _t, _at, s in window.samples(FAILURES)} - told - {""})
        rises = _failure_rises(window)
        out = []
        for model in models:
            fails = per_scrape(window, FAILURES, model, ("OTHER",))
            oks = per_scrape(window, SUCCESSES, model)
            if len(fails) < 2:
                continue
            first, last = min(fails), max(fails)
            failed = fails[last] - fails[first]
            served = max(0.0, oks.get(last, 0.0) - oks.get(first, 0.0))
            if failed < self.min_failures or failed < self.min_share * (failed + served):
                continue
            # An ensemble counts its steps' failures again, as OTHER: a step that raised,
            # refused or timed out has counted its own (rag_orchestrator_raises, emb_*).
            if sum(n for m, n in rises.items() if m != model) >= 0.5 * failed:
                continue
            since = next(at for at in sorted(fails) if fails[at] > fails[first])
            share = failed / max(failed + served, 1.0)
            out.append(
                Finding(
                    kind=self.kind,
                    severity=Severity.CRITICAL if served == 0 else Severity.WARNING,
                    model=model,
                    first_seen_ns=since,
                    last_seen_ns=last,
                    summary=(
                        f"{model} failed {failed:g} of its {failed + served:g} requests in the "
                        f"window ({share:.0%}) with reason OTHER on /metrics: not raised by a "
                        "backend (no error line of the model says why). An ensemble counts so "
                        "a step's error response, a decoupled one mid-stream: its clients got "
                        "the error, or a stream cut short, while the step's own counters show "
                        "successes."
                    ),
                    evidence=(
                        Evidence(
                            "metrics",
                            last,
                            f'{FAILURES}{{model="{model}",reason="OTHER"}}',
                            f"rose {failed:g} from {clock(first)} to {clock(last)}; "
                            f"{SUCCESSES} rose {served:g}",
                        ),
                    ),
                    advice=(
                        "Read the error a client of the model receives (a stream's last "
                        "response carries it): it names the step and its message. In a "
                        "decoupled step, log the error where it is sent (pb_utils.Logger) and "
                        "count it in the model (a pb_utils.MetricFamily counter), since Triton "
                        "counts the step's request a success when its execute returns."
                    ),
                )
            )
        return out

    def _partial_finding(
        self,
        model: str,
        lines: list[Raised],
        batches: int,
        counted: tuple[float, float, float] | None,
    ) -> Finding:
        last = lines[-1]
        what = last.exception or "an error"
        where = f", raised at {last.frames[0]}" if last.frames else ""
        span_s = (last.line.header.at_ns - lines[0].line.header.at_ns) / 1e9
        of = f" of its {batches}" if batches else ""
        summary = (
            f"The execute of {model} raised on {len(lines)}{of} batches over {span_s:.0f} s, and "
            f"served the rest: {what}: {short(last.message.strip(), _SUMMARY_CHARS)}{where}"
        )
        if counted is not None:
            failed, served, share = counted
            summary += (
                f" (/metrics: {failed:g} failed and {served:g} succeeded in the window, "
                f"{share:.0%} failed)"
            )
        summary += (
            ". Some inputs (or a state some batches reach) break it; its clients get the "
            "exception's text for those requests."
        )
        evidence = tuple(
            Evidence(
                "log",
                r.line.header.at_ns,
                log_ref(r.line.header.offset),
                short(r.line.text.strip(), _SUMMARY_CHARS),
            )
            for r in [lines[0], *lines[1:][-(self.max_evidence - 1) :]]
        )
        return Finding(
            kind=self.kind,
            severity=Severity.WARNING,
            model=model,
            first_seen_ns=lines[0].line.header.at_ns,
            last_seen_ns=last.line.header.at_ns,
            summary=summary,
            evidence=evidence,
            advice=PARTIAL_ADVICE,
        )

    def _answering_errors(self, window: Window, failing_models: set[str]) -> list[Finding]:
        """Models answering every request with an error response (``empty_answers.py``).
        Not one that /metrics shows failing (a dead stub or a raising execute: the findings
        above and ``stub_unhealthy``'s), nor a caller relaying the errors of a callee that
        fails either way (the callee's finding names it), nor one whose errors are timeouts
        of calls into a hang that began before them (its responses turned slow: the hang's
        finding is the cause; ``asr_encoder_hang_bounded``)."""
        runs = answering_empty(window)
        if not runs:
            return []
        # A stub dead on a log alone answers empty too: stub_unhealthy's (rec_stub_killed).
        failing_models = failing_models | {d.model for d in dead_stubs(window)}
        failing_or_empty = failing_models | {r.model for r in runs}
        inst = instances_of(window)
        calls = callees(inst)
        # A callee answering outputs in a type its config does not declare: its consumers
        # refuse them, and the caller's errors are that breach's (vid_detect_wrong_dtype).
        failing_or_empty |= {b.model for b in breaches(window)}
        hung_since = min((e.start_ns for e in inst.open.values()), default=None)
        relays: dict[str, list[EmptyRun]] = {}
        out = []
        for run in runs:
            if run.model in failing_models:
                continue
            called = sorted(calls.get(run.model, ()))
            child = next((c for c in called if c in failing_or_empty), None)
            if child is not None:
                relays.setdefault(child, []).append(run)
                continue
            slowed = run.run_s >= max(self.timeout_slowdown * run.usual_s, 0.5)
            if slowed and hung_since is not None and hung_since <= run.since_ns:
                continue
            out.append(run)
        return [self._empty_finding(window, r, relays.get(r.model, [])) for r in out]

    def _empty_finding(self, window: Window, run: EmptyRun, relays: list[EmptyRun]) -> Finding:
        model = run.model
        loaded = [
            r
            for r in window.logs(ev.ModelStateChange)
            if r.model == model and r.state == "loaded" and r.header.at_ns <= run.since_ns
        ]
        since = (
            f"since it was loaded {(run.since_ns - loaded[-1].header.at_ns) / 1e9:.1f} s before"
            if loaded and run.since_ns - loaded[-1].header.at_ns < 60e9
            else ""
        )
        gone = _unloaded_callee(window, model, run.since_ns)
        if gone:
            since = gone
        outputs = ", ".join(run.outputs)
        summary = (
            f"{model} has answered every request with no output for "
            f"{(run.last_ns - run.since_ns) / 1e9:.0f} s ({run.empty} of the last "
            f"{run.responses} responses{', ' + since if since else ''}; before, {run.before} "
            f"responses carried {outputs}): it returns error responses (or outputs its config "
            "does not declare, which Triton drops) without raising, so Triton logged no "
            "exception"
        )
        counted = _counted_as_success(window, model, run)
        if counted is not None:
            summary += f", and /metrics counts them as successes ({counted})"
        summary += "."
        if relays:
            summary += " Its BLS callers answer empty with it, passing its error on: " + ", ".join(
                f"{r.model} ({r.empty} responses)" for r in relays
            )
            summary += "."
        evidence = [
            Evidence(
                "log",
                run.answered.released_ns or 0,
                log_ref(run.answered.released_offset or 0),
                f"last response with outputs ({outputs}) on {run.answered.instance}",
            ),
            Evidence(
                "log",
                run.since_ns,
                log_ref(run.first.released_offset or 0),
                f"first response without any output, on {run.first.instance}",
            ),
            Evidence(
                "log",
                run.last_ns,
                log_ref(run.last.released_offset or 0),
                f"last response of the window, without any output, on {run.last.instance}",
            ),
        ]
        if counted is not None:
            evidence.append(
                Evidence("metrics", run.last_ns, f'{SUCCESSES}{{model="{model}"}}', counted)
            )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=run.instances[0] if len(run.instances) == 1 else None,
            first_seen_ns=run.since_ns,
            last_seen_ns=run.last_ns,
            summary=summary,
            evidence=tuple(evidence),
            advice=ERROR_ADVICE,
        )

    def _finding(self, f: Failing, lines: list[Raised], callers: list[Failing]) -> Finding:
        last = lines[-1]
        kinds = Counter(r.exception or "an error" for r in lines)
        what = last.exception or "an error"
        others = [k for k in kinds if k != what]
        where = f", raised at {last.frames[0]}" if last.frames else ""
        instances = sorted({r.instance for r in lines})
        summary = (
            f"Every request to {f.model}"
            + (
                " that reached its backend has failed for "
                if f.cached
                else " has failed in its backend for "
            )
            + f"{(f.last_ns - f.since_ns) / 1e9:.0f} s ({f.failures:g} failures, no success"
            + (f"; {f.cached:g} answered from the response cache" if f.cached else "")
            + "): "
            f"its execute raises {what}: {short(last.message.strip(), _SUMMARY_CHARS)}{where} "
            f"({len(lines)} error line(s) on {', '.join(instances)}"
            + (f"; also {', '.join(others)}" if others else "")
            + "). The stub is alive: Triton logged the exception for each failed batch."
        )
        if callers:
            summary += " Its BLS callers fail with it, passing its error up: " + ", ".join(
                f"{c.model} ({c.failures:g} failures)" for c in callers
            )
            summary += "."
        evidence = [
            Evidence(
                "log",
                r.line.header.at_ns,
                log_ref(r.line.header.offset),
                short(r.line.text.strip(), _SUMMARY_CHARS),
            )
            for r in [lines[0], *lines[1:][-(self.max_evidence - 2) :]]
        ]
        evidence.append(
            Evidence(
                "metrics",
                f.last_ns,
                f'{FAILURES}{{model="{f.model}",reason="BACKEND"}} @ {f.target}',
                f"rose by {f.failures:g} while {SUCCESSES} stayed at {f.successes:g}",
            )
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=f.model,
            instance=instances[0] if len(instances) == 1 else None,
            first_seen_ns=f.since_ns,
            last_seen_ns=f.last_ns,
            summary=summary,
            evidence=tuple(evidence),
            advice=ADVICE,
        )


def _only_child(lines: list[Raised]) -> str | None:
    """The one child whose error every line passes up, else ``None``."""
    children = {r.child for r in lines}
    return children.pop() if len(children) == 1 and "" not in children else None
