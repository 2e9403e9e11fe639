"""The pathology catalogue: every finding kind declared once, with everything that hangs on it.

Why a data module: a pathology used to be scattered over a dozen files (its kind in a tuple, its
detector found by module name, its alert in one of three rule files, its runbook a README
heading, its fault and expected finding repeated in four schedules) and nothing noticed when one
was missing. Here each kind is one row; ``KINDS``, the detector registry, the triage app's
kind → metrics map, every fault schedule and ``docs/pathologies.md`` derive from it, and
``tests/test_catalogue.py`` fails when a row lacks its detector, test, alert, rule test or runbook.

This module imports nothing of ours, so anything may import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

__all__ = [
    "CATALOGUE",
    "FAULTS",
    "KINDS",
    "SEVERITIES",
    "Fault",
    "Pathology",
    "ScheduledFault",
    "kind_of_fault",
    "pathology",
    "render_markdown",
    "schedule",
]

SEVERITIES = ("critical", "warning", "info")
RUNBOOK_BASE = "https://github.com/triton-observability/triton-observability/blob/main/"
"""Where ``runbook_url`` annotations point; the runbooks live in ``docs/runbooks/``."""


@dataclass(frozen=True)
class Fault:
    """A demo fault that produces the pathology on the demo pipeline, as a client causes it.

    ``knob`` is the value of the request parameter ``fault`` (``cold_start`` is a model reload
    and ``ensemble_fanout`` a second, miswired server: both are done by the scenario itself).
    """

    knob: str
    entry_model: str
    """The model the client calls (or reloads)."""
    finds_model: str
    """The model the finding must name."""
    expect: str
    """What a Triton user would see, in one line."""
    params: Mapping[str, str] = field(default_factory=dict)
    count: int = 1
    timeout_s: float = 5.0
    per_request: bool = True
    """False where the fault is not a request parameter (a reload, a second server)."""


@dataclass(frozen=True)
class Pathology:
    kind: str
    severity: str
    """The severity the detector reports at most (``critical``, ``warning`` or ``info``)."""
    title: str
    detector: str
    """Class name in ``observability/detectors/<kind>.py``."""
    alert: str
    """The Prometheus alert over ``triton_obs_findings`` (or the detector's own gauge)."""
    rule_file: str
    """Under ``dashboards/alerts/``; its unit tests are ``<name>.test.yml`` beside it."""
    metrics: tuple[str, ...]
    """Series to look at beside a finding (the triage app plots them)."""
    faults: tuple[Fault, ...] = ()
    test: str = ""
    """The detector's test module (``tests/...``): its pathology and its healthy twin."""

    @property
    def runbook(self) -> str:
        return f"docs/runbooks/{self.alert}.md"

    @property
    def runbook_url(self) -> str:
        return RUNBOOK_BASE + self.runbook


_PENDING = "nv_inference_pending_request_count"
_INFLIGHT = "triton_obs_bls_inflight"

CATALOGUE: tuple[Pathology, ...] = (
    Pathology(
        "hung_request",
        "critical",
        "A request executing past its deadline",
        "HungRequestDetector",
        "TritonHungRequests",
        "findings.rules.yml",
        (_PENDING, _INFLIGHT),
        (
            Fault(
                "hang",
                "router",
                "router",
                "client times out; router's async_exec never returns",
                {"hang_s": "60"},
            ),
        ),
        "tests/detectors/test_hung_request.py",
    ),
    Pathology(
        "bls_call_hung",
        "critical",
        "A BLS call that has not returned, reported by the in-model library",
        "BlsCallHung",
        "TritonBlsCallHung",
        "bls.rules.yml",
        (_INFLIGHT, "triton_obs_bls_hung"),
        (),
        "tests/detectors/test_bls_call_hung.py",
    ),
    Pathology(
        "instance_saturation",
        "warning",
        "Every instance of a model busy while its queue grows",
        "InstanceSaturation",
        "TritonInstanceSaturation",
        "findings.rules.yml",
        (_PENDING,),
        (
            Fault(
                "slow",
                "router",
                "classifier",
                "classifier (1 instance) queues: pending > 0",
                {"slow_s": "0.5"},
                count=8,
                timeout_s=15,
            ),
        ),
        "tests/detectors/test_instance_saturation.py",
    ),
    Pathology(
        "thread_pool_exhaustion",
        "warning",
        "More concurrent BLS calls than threads to run them",
        "ThreadPoolExhaustion",
        "TritonThreadPoolExhaustion",
        "findings.rules.yml",
        (_INFLIGHT, "triton_obs_bls_thread_pool_capacity"),
        (
            Fault(
                "fanout",
                "router",
                "router",
                "64 concurrent async_exec calls wait for 6 executor threads",
                {"fanout_n": "64"},
                timeout_s=30,
            ),
        ),
        "tests/detectors/test_thread_pool_exhaustion.py",
    ),
    Pathology(
        "bls_deadlock",
        "critical",
        "A BLS call queued behind the instances its own callers hold",
        "BlsDeadlockDetector",
        "TritonBlsDeadlock",
        "findings.rules.yml",
        (_PENDING, _INFLIGHT),
        (
            Fault(
                "deadlock",
                "generate",
                "generate",
                "generate's BLS call waits for generate's only instance",
                {"deadlock_s": "15"},
            ),
        ),
        "tests/detectors/test_bls_deadlock.py",
    ),
    Pathology(
        "callback_error",
        "critical",
        "An exception in an asyncio callback or task swallowed the response",
        "CallbackErrorDetector",
        "TritonBlsCallbackErrors",
        "bls.rules.yml",
        ("triton_obs_bls_callback_errors",),
        (
            Fault(
                "callback",
                "router",
                "router",
                "'Exception in callback' in the log; the client gets an error",
                {"callback_wait_s": "5"},
                timeout_s=15,
            ),
            Fault(
                "task_error",
                "router",
                "router",
                "'Task exception was never retrieved'; the client gets an error",
                timeout_s=15,
            ),
        ),
        "tests/detectors/test_callback_error.py",
    ),
    Pathology(
        "ensemble_fanout",
        "critical",
        "An ensemble output that is not written (miswired consumers)",
        "EnsembleFanoutDetector",
        "TritonEnsembleFanout",
        "findings.rules.yml",
        ("nv_model_load_duration_secs",),
        (
            Fault(
                "ensemble_fanout",
                "fanout_ensemble",
                "fanout_ensemble",
                "a miswired ensemble fails to load: 'is not written'",
                per_request=False,
            ),
        ),
        "tests/detectors/test_ensemble_fanout.py",
    ),
    Pathology(
        "shape_growth",
        "warning",
        "A response output whose shape keeps growing",
        "ShapeGrowthDetector",
        "TritonShapeGrowth",
        "findings.rules.yml",
        (_PENDING,),
        (
            Fault(
                "shape_growth",
                "generate",
                "decoder",
                "decoder TOKEN_IDS shape doubles every step",
                count=3,
                timeout_s=30,
            ),
        ),
        "tests/detectors/test_shape_growth.py",
    ),
    Pathology(
        "cold_start",
        "warning",
        "A first execute after load that takes seconds",
        "ColdStart",
        "TritonColdStart",
        "findings.rules.yml",
        (_PENDING,),
        (
            Fault(
                "cold_start",
                "classifier",
                "classifier",
                "first classifier execute after the reload takes ~4 s",
                {"cold_start_s": "4"},
                per_request=False,
            ),
        ),
        "tests/detectors/test_cold_start.py",
    ),
    Pathology(
        "stub_unhealthy",
        "critical",
        "A python stub process that died or stopped answering",
        "StubUnhealthyDetector",
        "TritonStubUnhealthy",
        "findings.rules.yml",
        ("nv_inference_request_failure",),
        (),
        "tests/detectors/test_stub_unhealthy.py",
    ),
    Pathology(
        "target_down",
        "critical",
        "Triton's /metrics or /v2/models/stats cannot be reached",
        "TargetDown",
        "TritonTargetDown",
        "triton.rules.yml",
        ("up",),
        (),
        "tests/detectors/test_target_down.py",
    ),
    Pathology(
        "stream_stalled",
        "critical",
        "A decoupled response stream that stopped before its final response",
        "StreamStalled",
        "TritonStreamStalled",
        "findings.rules.yml",
        ("triton_obs_bls_streams_stalled", "triton_obs_bls_streams_open"),
        (
            Fault(
                "stall",
                "stream",
                "stream",
                "the client's token stream stops half-way: no error, no final response",
                {"stall_after": "3", "stall_s": "60"},
                timeout_s=8.0,
            ),
        ),
        "tests/detectors/test_stream_stalled.py",
    ),
    Pathology(
        "model_stalled",
        "critical",
        "Requests queued for a model that executes nothing, from metrics alone",
        "ModelStalled",
        "TritonModelStalled",
        "findings.rules.yml",
        (_PENDING, "nv_inference_exec_count"),
        (),
        "tests/detectors/test_model_stalled.py",
    ),
)

_BY_KIND = MappingProxyType({p.kind: p for p in CATALOGUE})
KINDS: tuple[str, ...] = tuple(p.kind for p in CATALOGUE)
FAULTS: Mapping[str, Fault] = MappingProxyType({f.knob: f for p in CATALOGUE for f in p.faults})
"""Every demo fault knob, by knob."""
_KIND_OF_KNOB = MappingProxyType({f.knob: p.kind for p in CATALOGUE for f in p.faults})


def pathology(kind: str) -> Pathology:
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise ValueError(f"unknown finding kind {kind!r}; known: {', '.join(KINDS)}") from None


def kind_of_fault(knob: str) -> str:
    return _KIND_OF_KNOB[knob]


@dataclass(frozen=True)
class ScheduledFault:
    """One fault of a schedule: the catalogue's fault at ``at_s``, with the finding it owes."""

    at_s: float
    fault: Fault
    kind: str

    @property
    def finds(self) -> tuple[str, str]:
        return (self.kind, self.fault.finds_model)


def schedule(
    times: Sequence[tuple[float, str]],
    params: Mapping[str, Mapping[str, str]] | None = None,
    timeouts: Mapping[str, float] | None = None,
) -> tuple[ScheduledFault, ...]:
    """A fault schedule from ``(at_s, knob)`` pairs; ``params`` and ``timeouts`` override the
    catalogue's defaults per knob (a recording wants hangs that outlive it, the demo short
    ones)."""
    params = params or {}
    timeouts = timeouts or {}
    out = []
    for at_s, knob in times:
        if knob not in FAULTS:
            raise ValueError(f"unknown fault {knob!r}; known: {', '.join(FAULTS)}")
        fault = FAULTS[knob]
        if knob in params:
            fault = replace(fault, params={**fault.params, **params[knob]})
        if knob in timeouts:
            fault = replace(fault, timeout_s=timeouts[knob])
        out.append(ScheduledFault(at_s, fault, _KIND_OF_KNOB[knob]))
    return tuple(out)


def _validate() -> None:
    """Refuse a malformed catalogue at import: every later consumer trusts it."""
    seen: set[str] = set()
    alerts: set[str] = set()
    for p in CATALOGUE:
        if p.kind in seen:
            raise ValueError(f"catalogue: kind {p.kind!r} twice")
        seen.add(p.kind)
        if p.severity not in SEVERITIES:
            raise ValueError(f"catalogue: {p.kind}: severity {p.severity!r}")
        if p.alert in alerts:
            raise ValueError(f"catalogue: alert {p.alert!r} twice")
        alerts.add(p.alert)
        if not p.rule_file.endswith(".rules.yml"):
            raise ValueError(f"catalogue: {p.kind}: rule file {p.rule_file!r}")
        if not p.detector or not p.test.startswith("tests/"):
            raise ValueError(f"catalogue: {p.kind}: detector and test are required")
    knobs = [f.knob for p in CATALOGUE for f in p.faults]
    if len(knobs) != len(set(knobs)):
        raise ValueError("catalogue: a fault knob belongs to two kinds")


_validate()


def render_markdown() -> str:
    """``docs/pathologies.md``: kind → detector → test → alert → runbook, generated."""
    lines = [
        "<!-- Generated by `python -m observability.catalogue`; do not edit. -->",
        "# Pathologies",
        "",
        "Every finding kind, declared once in `observability/catalogue.py`.",
        "",
        "| kind | severity | what | detector | test | alert | runbook | demo fault |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in CATALOGUE:
        faults = ", ".join(f"`{f.knob}` → {f.entry_model}" for f in p.faults) or "-"
        lines.append(
            f"| `{p.kind}` | {p.severity} | {p.title} "
            f"| [`{p.detector}`](../observability/detectors/{p.kind}.py) "
            f"| [`{p.test.rsplit('/', 1)[-1]}`](../{p.test}) "
            f"| `{p.alert}` ([rules](../dashboards/alerts/{p.rule_file})) "
            f"| [{p.alert}](runbooks/{p.alert}.md) | {faults} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
