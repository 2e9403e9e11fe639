"""requests_rejected: Triton refuses requests because a model's queue is full.

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
"""

from __future__ import annotations

from dataclasses import dataclass

from observability.detectors.instances import Admitted, instances_of
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
        if not inst.rejected:
            return []
        top = max(len(v) for v in inst.rejected.values())
        calls = callees(inst)
        out = []
        for model, refused in sorted(inst.rejected.items()):
            if len(refused) < max(self.min_rejected, self.noise_share * top):
                continue
            served = sum(len(e.requests) for e in inst.executions if e.model == model)
            share = len(refused) / max(len(refused) + served, 1)
            callers = sorted(m for m, called in calls.items() if model in called)
            out.append(self._finding(model, refused, served, share, callers))
        return out

    def _finding(
        self, model: str, refused: list[Admitted], served: int, share: float, callers: list[str]
    ) -> Finding:
        first, last = refused[0], refused[-1]
        span_s = (last.prepared_ns - first.prepared_ns) / 1e9
        by = f", most of them BLS calls from {', '.join(callers)}" if callers else ""
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
