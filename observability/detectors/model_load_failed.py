"""model_load_failed: a model's load or reload failed, and no later load of it succeeded.

Why: Triton logs a failed load once (``failed to load 'm' version 2: <error>`` at the default
verbosity) and then carries on. A failed *reload* is the quiet one: the previous copy keeps
serving and every counter stays healthy, so the deploy that "went out" never took effect
(tests/fixtures/foreign kws_classifier_reload_fails: 414 of 414 requests ok while version 2's
new checkpoint was refused), and the next restart, which reads only the new files, fails to
load the model at all. A failed *first* load leaves the model unavailable while the server
reports itself ready: requests to it fail with "unknown model" or "is not ready".

The python backend also logs ``Failed to initialize Python stub: <error>`` for the stub that
raised in ``initialize``; the ``failed to load`` line repeats the error and decides the
outcome, so it is the one read here. An ensemble refused for an unwritten output is
``ensemble_fanout``'s, which says how to wire it.
"""

from __future__ import annotations

from dataclasses import dataclass

from observability import events as ev
from observability.detectors.backend_failures import Raised, raised
from observability.detectors.crashes import Crash, crashes
from observability.detectors.ensemble_fanout import miswired
from observability.detectors.loads import Attempt, attempts, clock, served_since, state_line
from observability.detectors.requests import log_ref
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ModelLoadFailed"]

_CRASH_AFTER_NS = 5_000_000_000
"""An execute that raised this shortly before the server crashed, during a load of its
model that never ended, is that load's failure (warm_warmup_raises_one: 0.2 ms)."""

ADVICE = (
    "Read the error in the evidence (the exception of the model's initialize, a missing or "
    "mismatched file, a config Triton refused), fix the model's files or config, and load it "
    "again (POST /v2/repository/models/<model>/load, or let the repository poll pick it up). "
    "Check that the load took: 'successfully loaded' in the log, and GET "
    "/v2/models/<model>/versions/<v>/ready. A deploy pipeline should check the load call's "
    "answer and the model's readiness, not only that the files were copied."
)


@dataclass
class ModelLoadFailed:
    kind: str = "model_load_failed"
    max_evidence: int = 3

    def detect(self, window: Window) -> list[Finding]:
        tried = attempts(window.logs(ev.ModelStateChange))
        failed: dict[str, list[Attempt]] = {}
        for a in tried:
            ended = a.ended
            if ended is None or not a.failed or miswired(ended.detail):
                continue
            later = [b for b in tried if b.model == a.model and b.at_ns > a.at_ns]
            if any(b.ended is not None and not b.failed for b in later):
                continue  # loaded again since: the failure is over
            failed.setdefault(a.model, []).append(a)
        prepared = window.logs(ev.RequestPrepared) if failed else []
        found = [self._finding(m, f, prepared) for m, f in sorted(failed.items())]
        crashed = [c for c in _crashed_loads(window, tried) if c[0].model not in failed]
        if not crashed:
            return found
        failed_warmups = [w for w in window.logs(ev.WarmupRun) if w.failed]
        return found + [
            self._crashed_finding(a, line, crash, _warmup_of(a, failed_warmups))
            for a, line, crash in crashed
        ]

    def _crashed_finding(
        self, a: Attempt, error: Raised, crash: Crash, warmup: ev.WarmupRun | None
    ) -> Finding:
        version = f" version {a.version}" if a.version is not None else ""
        line = error.line
        what = f"{error.exception}: {error.message}" if error.exception else error.message
        during = (
            f": it failed to run warmup sample '{warmup.sample}', which model_warmup runs "
            "inside the load"
            if warmup is not None
            else " (its warmup or initialize ran then)"
        )
        summary = (
            f"Loading '{a.model}'{version} never finished: {error.instance} raised during the "
            f"load, before the model was ready{during}. {what}; "
            f"{_after(crash.at_ns - line.header.at_ns)} tritonserver crashed with "
            f"{crash.what}. The failed load took the server down, and every model with it."
        )
        begun = a.begun
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=a.model,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=a.at_ns,
            last_seen_ns=crash.at_ns,
            evidence=(
                *([_loading(begun)] if begun is not None else []),
                Evidence("log", line.header.at_ns, log_ref(line.header.offset), line.text),
                *(
                    [
                        Evidence(
                            "log",
                            warmup.header.at_ns,
                            log_ref(warmup.header.offset),
                            f"model '{a.model}' instance {warmup.instance} failed to run "
                            f"warmup sample '{warmup.sample}'",
                        )
                    ]
                    if warmup is not None
                    else []
                ),
                Evidence("log", crash.at_ns, log_ref(crash.offset), f"Signal ({crash.signal})"),
            ),
        )

    def _finding(
        self, model: str, failed: list[Attempt], prepared: list[ev.RequestPrepared]
    ) -> Finding:
        last = failed[-1]
        ended = last.ended
        assert ended is not None
        error = ended.detail.split("\n", 1)[0].strip() or "no reason given"
        version = f" version {last.version}" if last.version is not None else ""
        took = f" after {last.seconds:.1f} s" if last.seconds is not None else ""
        tries = f" ({len(failed)} attempts)" if len(failed) > 1 else ""
        head = (
            f"Loading '{model}'{version} failed{tries} at {clock(ended.header.at_ns)}{took}: "
            f"{error}."
        )
        since = served_since(prepared, model, ended.header.at_ns)
        # Requests admitted after the failure say a copy serves even where the window lacks
        # its load (a log that starts later, or watch once that load left its evidence):
        # a model with no copy refuses them before they are admitted.
        if last.serving or since:
            kept = ", ".join(str(v) for v in sorted(v for v in last.serving if v is not None))
            answered = f", and answered {since} request(s) since" if since else ""
            summary = (
                f"{head} The copy loaded before{f' (version {kept})' if kept else ''} keeps "
                f"serving{answered}: the change did not take effect, while the server and its "
                "counters look healthy. The next restart loads only the new files and will "
                "fail to load the model."
            )
            severity = Severity.WARNING
        else:
            summary = (
                f"{head} No copy of '{model}' is loaded: every request to it fails ('unknown "
                "model' or 'is not ready') while the server itself reports ready."
            )
            severity = Severity.CRITICAL
        evidence = tuple(
            Evidence(
                "log", a.ended.header.at_ns, log_ref(a.ended.header.offset), state_line(a.ended)
            )
            for a in failed[-self.max_evidence :]
            if a.ended is not None
        )
        begun = [a.begun for a in failed if a.begun is not None]
        return Finding(
            kind=self.kind,
            severity=severity,
            model=model,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=min(a.at_ns for a in failed),
            last_seen_ns=ended.header.at_ns,
            evidence=(
                *([_loading(begun[-1])] if begun else []),
                *evidence,
            ),
        )


def _loading(begun: ev.ModelStateChange) -> Evidence:
    what = f"loading: {begun.model}:{begun.version}"
    return Evidence("log", begun.header.at_ns, log_ref(begun.header.offset), what)


def _warmup_of(a: Attempt, failed: list[ev.WarmupRun]) -> ev.WarmupRun | None:
    """The warmup sample that failed during the load ``a`` (the line 2.51 writes at INFO)."""
    return next((w for w in failed if w.model == a.model and w.header.at_ns >= a.at_ns), None)


def _after(ns: int) -> str:
    return f"{ns / 1e9:.1f} s later" if ns >= 1e9 else f"{ns / 1e6:.1f} ms later"


def _crashed_loads(window: Window, tried: list[Attempt]) -> list[tuple[Attempt, Raised, Crash]]:
    """Loads that never ended because the server crashed, right after an execute of the
    loading model raised: 2.51 runs a model's warmup inside its load, and a warmup that
    raised on one of two instances crashed it (SIGSEGV) in 6 of 7 tries instead of writing
    ``failed to load`` (tests/fixtures/foreign warm_warmup_raises_one)."""
    open_ = [a for a in tried if a.ended is None and a.begun is not None]
    if not open_:
        return []
    died = crashes(window.logs(ev.StubOutput))
    errors = raised(window)
    out = []
    for a in open_:
        crash = next((c for c in died if c.at_ns > a.at_ns), None)
        if crash is None:
            continue
        error = next(
            (
                r
                for r in errors.get(a.model, ())
                if a.at_ns <= r.line.header.at_ns <= crash.at_ns
                and crash.at_ns - r.line.header.at_ns <= _CRASH_AFTER_NS
            ),
            None,
        )
        if error is not None:
            out.append((a, error, crash))
    return out
