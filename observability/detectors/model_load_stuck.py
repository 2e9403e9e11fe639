"""model_load_stuck: a model's load began and has not ended, far longer than its loads take.

Why: Triton has no load timeout. A model whose ``initialize`` blocks (a download that hangs,
a lock, a GPU that never frees) leaves ``loading: m:2`` as its last word: no ``successfully
loaded``, no ``failed to load``, and the repository load call is never answered
(tests/fixtures/foreign kws_classifier_load_hangs: 21 s of silence after a load that took
1.7 s at start-up, while the old copy served 411 requests). On a reload the previous copy
keeps serving, so nothing looks wrong until the deploy times out; on a first load the model
stays unavailable and the server not ready.

How long is too long is the model's own: a large model legitimately loads for minutes. The
bar is ``ratio`` times the model's longest completed load in the window (at least
``min_s``); a model never seen loading waits ``unknown_s``.
"""

from __future__ import annotations

from dataclasses import dataclass

from observability import events as ev
from observability.detectors.loads import Attempt, attempts, clock, served_since
from observability.detectors.requests import log_ref
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["ModelLoadStuck"]

ADVICE = (
    "Find what the model's initialize waits on: py-spy dump --pid <the model's stub process> "
    "(ps shows one triton_python_backend_stub per instance, with the model's path), a "
    "download or a lock, a device that is still held. Triton never gives up on a load: unload "
    "the model (POST /v2/repository/models/<model>/unload) or restart the server once the "
    "cause is fixed. Bound the expensive set-up in initialize with a timeout that raises, so "
    "that a stuck load becomes a failed one that Triton reports."
)


@dataclass
class ModelLoadStuck:
    kind: str = "model_load_stuck"
    ratio: float = 5.0
    """A load's time varies with what else loads beside it (a start-up loads every model at
    once: kws_classifier's took 1.70 s and 3.11 s in two recordings), but not fivefold: over
    the 46 completed loads of the foreign recordings that followed an earlier one of the same
    model, the most was 1.8 times the longest before it (warm_reload_slow_warmup, a warmup
    made slow on purpose). Ten times made a reload stuck for 22 s wait past a 31 s bar
    (kws_classifier_load_hangs_v2)."""
    min_s: float = 10.0
    unknown_s: float = 120.0
    """The bar for a model the window never saw finish a load."""

    def detect(self, window: Window) -> list[Finding]:
        tried = attempts(window.logs(ev.ModelStateChange))
        longest: dict[str, float] = {}
        for a in tried:
            if a.seconds is not None and not a.failed:
                longest[a.model] = max(longest.get(a.model, 0.0), a.seconds)
        found: dict[str, Finding] = {}
        for a in tried:
            if a.ended is not None or a.begun is None or a.model in found:
                continue
            waited = (window.until_ns - a.begun.header.at_ns) / 1e9
            known = longest.get(a.model)
            bar = max(self.min_s, self.ratio * known) if known is not None else self.unknown_s
            if waited >= bar:
                found[a.model] = self._finding(a, waited, known, window)
        return [found[m] for m in sorted(found)]

    def _finding(self, a: Attempt, waited: float, known: float | None, window: Window) -> Finding:
        begun = a.begun
        assert begun is not None
        at = begun.header.at_ns
        version = f" version {a.version}" if a.version is not None else ""
        usual = f", against {known:.1f} s for its last completed load" if known is not None else ""
        head = (
            f"Loading '{a.model}'{version}, begun at {clock(at)}, has not ended after "
            f"{waited:.0f} s{usual}: no 'successfully loaded' or 'failed to load' line, and "
            "Triton never times a load out."
        )
        if a.serving:
            since = served_since(window.logs(ev.RequestPrepared), a.model, at)
            answered = f" ({since} request(s) since the load began)" if since else ""
            summary = (
                f"{head} The copy loaded before keeps serving{answered}, so the new one has "
                "not taken effect, and the load call waits unanswered."
            )
            severity = Severity.WARNING
        else:
            summary = (
                f"{head} No copy of '{a.model}' is loaded: requests to it fail, and a server "
                "starting up stays not ready."
            )
            severity = Severity.CRITICAL
        return Finding(
            kind=self.kind,
            severity=severity,
            model=a.model,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=at,
            last_seen_ns=window.until_ns,
            evidence=(
                Evidence(
                    "log",
                    at,
                    log_ref(begun.header.offset),
                    f"loading: {a.model}:{a.version} (the last word of this load)",
                ),
            ),
        )
