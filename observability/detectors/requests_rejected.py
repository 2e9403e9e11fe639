"""requests_rejected: Triton refuses requests: a model's queue is full, or they waited too long.

Why a kind of its own: a model with a bounded queue (``dynamic_batching { default_queue_policy
... max_queue_size: N }``) answers the requests over the bound with an error at once ("Exceeds
maximum queue size") and never queues them. Its clients (or its BLS callers, whose calls then
fail) see errors, and Triton 2.51 counts them nowhere: ``nv_inference_request_failure
{reason="REJECTED"}`` stays 0, and nothing is logged at the default verbosity. The verbose log
has the one witness, a ``PENDING to FAILED_ENQUEUE`` state line right after the request's
``prepared:`` line (tests/fixtures/foreign tts_queue_full_untraced: 2,916 of them in 10 s).
``instance_saturation`` does not fit: the bound keeps the queue short and the instances are
not busy for long; the refusals are the symptom.

The state line names neither the model nor (without ids) the request: ``instances.py`` joins
it to the newest request admitted just before it. On a busy log another model's admission can
fall between the two, so a model with only a sliver of the refusals (under ``noise_share`` of
the most refused model's) is not reported: its share is the join's error, not a second bound.

A queue policy's timeout (``default_timeout_microseconds`` with ``timeout_action: REJECT``) is
the other refusal: a request that waited longer is dropped from the queue. Those Triton does
count, in ``nv_inference_request_failure{reason="REJECTED"}``, while the log shows only a bare
``PENDING to RELEASED`` (tests/fixtures/foreign emb_encode_slow_queue_timeouts: 67); so they
are read from /metrics, with or without the verbose log.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from observability.detectors.backend_failures import FAILURES, SUCCESSES
from observability.detectors.instances import Admitted, instances_of
from observability.detectors.origins import CALL, origins_of
from observability.detectors.requests import log_ref
from observability.detectors.waits import callees
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["RequestsRejected"]

ADVICE = (
    "The model's queue is full: more requests arrive than its instances serve within the "
    "bound (max_queue_size in its dynamic_batching queue policy). Give it capacity (more "
    "instances in instance_group, larger preferred batches), raise the bound if the latency it "
    "adds is acceptable, or make its callers back off: a BLS parent that fans out with "
    "async_exec should cap its concurrent calls (an asyncio.Semaphore) and handle the error "
    "response. Triton counts these refusals in no metric: alert on this finding, or count "
    "error responses in the caller."
)


@dataclass
class RequestsRejected:
    kind: str = "requests_rejected"
    min_rejected: int = 5
    critical_share: float = 0.1
    """Refused share of the model's requests in the window that makes the finding critical."""
    noise_share: float = 0.05

    def detect(self, window: Window) -> list[Finding]:
        inst = instances_of(window)
        timed_out = _timed_out(window, self.min_rejected)
        out = [self._timeout_finding(m, *t) for m, t in sorted(timed_out.items())]
        if not inst.rejected:
            return out
        top = max(len(v) for v in inst.rejected.values())
        calls = callees(inst)
        origin = origins_of(window)
        for model, refused in sorted(inst.rejected.items()):
            if len(refused) < max(self.min_rejected, self.noise_share * top) or model in timed_out:
                continue
            served = sum(len(e.requests) for e in inst.executions if e.model == model)
            share = len(refused) / max(len(refused) + served, 1)
            callers = sorted(m for m, called in calls.items() if model in called)
            bls = sum(1 for r in refused if origin.get((r.prepared_ns, r.offset)) == CALL)
            out.append(self._finding(model, refused, served, share, callers, bls))
        return out

    def _finding(
        self,
        model: str,
        refused: list[Admitted],
        served: int,
        share: float,
        callers: list[str],
        bls: int,
    ) -> Finding:
        """``bls``: how many of ``refused`` were BLS calls (``origins``: no frontend line
        before them), from ``callers``."""
        first, last = refused[0], refused[-1]
        span_s = (last.prepared_ns - first.prepared_ns) / 1e9
        many = "all" if bls == len(refused) else "most" if 2 * bls > len(refused) else str(bls)
        by = f", {many} of them BLS calls from {', '.join(callers)}" if callers and bls else ""
        summary = (
            f"Triton refused {len(refused)} requests to {model} over {span_s:.1f} s, "
            f"{share:.0%} of those it received (it served {served}){by}: its queue was full "
            "(max_queue_size), so each was answered at once with an error ('Exceeds maximum "
            "queue size') and never queued. Triton counts these in no metric "
            '(nv_inference_request_failure{reason="REJECTED"} stays 0).'
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if share >= self.critical_share else Severity.WARNING,
            model=model,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=first.prepared_ns,
            last_seen_ns=last.prepared_ns,
            evidence=(
                Evidence(
                    "log",
                    first.prepared_ns,
                    log_ref(first.offset),
                    f"first refused request to {model} (PENDING to FAILED_ENQUEUE right after "
                    "its prepared: line)",
                ),
                Evidence(
                    "log",
                    last.prepared_ns,
                    log_ref(last.offset),
                    f"last refused request, {len(refused)} in all",
                ),
            ),
        )

    def _timeout_finding(
        self, model: str, rejected: float, served: float, first_ns: int, last_ns: int
    ) -> Finding:
        share = rejected / max(rejected + served, 1.0)
        summary = (
            f"Triton rejected {rejected:g} requests to {model} over "
            f"{(last_ns - first_ns) / 1e9:.0f} s, {share:.0%} of those it answered: they waited "
            "in its queue past the queue policy's timeout (timeout_action REJECT), so the "
            "model serves too slowly for its callers ('Request timeout expired')."
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if share >= self.critical_share else Severity.WARNING,
            model=model,
            summary=summary,
            advice=TIMEOUT_ADVICE,
            first_seen_ns=first_ns,
            last_seen_ns=last_ns,
            evidence=(
                Evidence(
                    "metrics",
                    last_ns,
                    f'{FAILURES}{{model="{model}",reason="REJECTED"}}',
                    f"rose by {rejected:g} while {SUCCESSES} rose by {served:g}",
                ),
            ),
        )


TIMEOUT_ADVICE = (
    "Requests wait in the model's queue longer than its queue policy allows "
    "(default_timeout_microseconds, or a client's timeout when allow_timeout_override is on): "
    "the model is too slow for the load. Find why it slowed (its compute time per request in "
    "/v2/models/stats, a recent reload or config change), add instances or batch more, or "
    "give the queue a longer timeout if the callers can wait."
)


def _timed_out(window: Window, min_rejected: int) -> dict[str, tuple[float, float, int, int]]:
    """Model -> (rejected, succeeded, first and last scrape) over the window from /metrics'
    REJECTED failures, for models with at least ``min_rejected``. Counter resets (a restart)
    count from zero."""
    series: dict[str, dict[int, float]] = {}
    oks: dict[str, dict[int, float]] = {}
    for _t, at, s in window.samples(FAILURES):
        if s.label("reason") == "REJECTED":
            per = series.setdefault(s.label("model"), {})
            per[at] = per.get(at, 0.0) + s.value
    for _t, at, s in window.samples(SUCCESSES):
        per = oks.setdefault(s.label("model"), {})
        per[at] = per.get(at, 0.0) + s.value
    out = {}
    for model, points in series.items():
        rejected, first, last = _risen(points)
        if rejected >= min_rejected and first is not None and last is not None:
            served, _, _ = _risen(oks.get(model, {}))
            out[model] = (rejected, served, first, last)
    return out


def _risen(points: dict[int, float]) -> tuple[float, int | None, int | None]:
    """A counter's increase over its scrapes (a drop is a reset: counted from zero), and when
    it first and last rose."""
    total, first, last = 0.0, None, None
    series = sorted(points.items())
    for (_a, v0), (at, v1) in pairwise(series):
        step = v1 - v0 if v1 >= v0 else v1
        if step > 0:
            total += step
            first = at if first is None else first
            last = at
    return total, first, last
