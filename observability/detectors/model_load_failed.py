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
from observability.detectors.ensemble_fanout import NOT_WRITTEN
from observability.detectors.loads import Attempt, attempts, clock, served_since, state_line
from observability.detectors.requests import log_ref
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ModelLoadFailed"]

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
            if ended is None or not a.failed or NOT_WRITTEN.search(ended.detail):
                continue
            later = [b for b in tried if b.model == a.model and b.at_ns > a.at_ns]
            if any(b.ended is not None and not b.failed for b in later):
                continue  # loaded again since: the failure is over
            failed.setdefault(a.model, []).append(a)
        prepared = window.logs(ev.RequestPrepared) if failed else []
        return [self._finding(m, f, prepared) for m, f in sorted(failed.items())]

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
        if last.serving:
            kept = ", ".join(str(v) for v in sorted(v for v in last.serving if v is not None))
            since = served_since(prepared, model, ended.header.at_ns)
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
                *(
                    [
                        Evidence(
                            "log",
                            begun[-1].header.at_ns,
                            log_ref(begun[-1].header.offset),
                            f"loading: {model}:{begun[-1].version}",
                        )
                    ]
                    if begun
                    else []
                ),
                *evidence,
            ),
        )
