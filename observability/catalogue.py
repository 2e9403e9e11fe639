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
    "SIGNALS",
    "Fault",
    "Pathology",
    "ScheduledFault",
    "Sight",
    "kind_of_fault",
    "pathology",
    "render_markdown",
    "schedule",
    "sight_table",
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


SIGNALS: Mapping[str, str] = MappingProxyType(
    {
        "log": "Triton's log (stub output and errors, at any verbosity)",
        "verbose_log": "the verbose log's request and instance lines (--log-verbose 1)",
        "metrics": "Triton's /metrics",
        "stats": "/v2/models/stats",
        "library": "the in-model library (observability.bls: its metrics, spans or log lines)",
    }
)
"""What a detector can read, by the name ``Pathology.needs`` and ``detectors/signals.py`` use.
Request ids are not among them: every kind is found without ids (``Sight.without_ids`` says
what it then cannot name)."""

VERDICTS = ("yes", "partly", "no")


@dataclass(frozen=True)
class Sight:
    """What a finding can still tell when a signal is missing: ``(verdict, why)`` each, the
    verdict one of ``VERDICTS``. The README and ``docs/pathologies.md`` show them."""

    without_ids: tuple[str, str]
    without_verbose_log: tuple[str, str]
    without_library: tuple[str, str]

    def cells(self) -> tuple[tuple[str, str], ...]:
        return (self.without_ids, self.without_verbose_log, self.without_library)


_YES = ("yes", "")


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
    needs: tuple[frozenset[str], ...] = ()
    """Alternatives of ``SIGNALS``: the detector can see its pathology when every signal of
    one of them is present. A window lacking all of them cannot be called healthy for it."""
    sight: Sight = Sight(_YES, _YES, _YES)

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
        needs=(frozenset({"verbose_log"}), frozenset({"metrics"})),
        sight=Sight(
            (
                "yes",
                "stuck batches by model, instance, batch size and age from instance "
                "lifecycles; the BLS calls they wait on are matched by timing, with how many "
                "candidate callers",
            ),
            (
                "partly",
                "from /metrics, an instance held while its siblings serve: the model's "
                "completions fall at once while its queue never empties, or, under a light "
                "load, a child and its caller stay short of a sibling they ran level with "
                "(a full stall is model_stalled's); neither names the request, instance or "
                "call",
            ),
            _YES,
        ),
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
        needs=(frozenset({"library"}),),
        sight=Sight(
            ("yes", "the library names each call by its parent and child model"),
            _YES,
            ("no", "hung_request still finds the stuck parent from the verbose log"),
        ),
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
        # With no /metrics the queue is read from the verbose log (prepared lines to batches).
        needs=(frozenset({"verbose_log"}),),
        sight=Sight(
            (
                "partly",
                "busy instances and the queue need no id; the upstream callers are "
                "named only when children carry their parent's id",
            ),
            ("no", "busy time comes from the instance lines"),
            _YES,
        ),
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
        needs=(
            frozenset({"verbose_log"}),
            frozenset({"library", "metrics"}),
        ),
        sight=Sight(
            (
                "partly",
                "from the library's executor-wait metrics, or from instance lifecycles "
                "when the parent runs alone while it fans out (or in step with its "
                "model's other batches)",
            ),
            ("partly", "only from the library's executor-wait metrics"),
            ("partly", "from the waves of BLS child arrivals in the verbose log"),
        ),
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
        needs=(frozenset({"verbose_log"}),),
        sight=Sight(
            (
                "yes",
                "a cycle through instance holds: every instance of a model held by "
                "batches whose open calls wait for a model with no free instance",
            ),
            ("no", "model_stalled still sees requests queue with nothing executing"),
            _YES,
        ),
    ),
    Pathology(
        "callback_error",
        "critical",
        "An exception in an asyncio callback, task or model thread swallowed the response",
        "CallbackErrorDetector",
        "TritonBlsCallbackErrors",
        "bls.rules.yml",
        ("triton_obs_bls_callback_errors_total",),
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
        needs=(frozenset({"log"}),),
        sight=Sight(
            ("partly", "the traceback is found; the request it cost is named only with ids"),
            ("partly", "the traceback is the stub's own output; the request it cost is not named"),
            _YES,
        ),
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
        needs=(frozenset({"log"}),),
        sight=Sight(_YES, ("yes", "a load error, logged at any verbosity"), _YES),
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
        needs=(frozenset({"verbose_log"}),),
        sight=Sight(
            ("yes", "id-less outputs join their request through its instance's batch"),
            ("no", "response output shapes are verbose lines"),
            _YES,
        ),
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
        needs=(frozenset({"verbose_log"}), frozenset({"log", "metrics"})),
        sight=Sight(
            _YES,
            (
                "partly",
                "from /metrics: the first executions' mean over a scrape interval after the "
                "load line; the instance and the request that paid are not named, and a cold "
                "start among many fast executions of one interval is missed",
            ),
            _YES,
        ),
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
        needs=(frozenset({"log"}), frozenset({"metrics"})),
        sight=Sight(
            ("partly", "the requests the stub held are named only with ids"),
            ("partly", "the stub's error lines are found; the requests it held are not"),
            _YES,
        ),
    ),
    Pathology(
        "model_failing",
        "critical",
        "A model fails every request (it raises, or answers errors) or some (warning)",
        "ModelFailing",
        "TritonModelFailing",
        "findings.rules.yml",
        ("nv_inference_request_failure", "nv_inference_request_success"),
        (),
        "tests/detectors/test_model_failing.py",
        needs=(frozenset({"log", "metrics"}), frozenset({"verbose_log"})),
        sight=Sight(
            _YES,
            (
                "partly",
                "the python backend logs each raised exception at any verbosity; error "
                "responses, which Triton counts as successes, show only as responses without "
                "outputs in the verbose log",
            ),
            _YES,
        ),
    ),
    Pathology(
        "output_contract",
        "critical",
        "A python model answers an output in a type its config does not declare",
        "OutputContract",
        "TritonOutputContract",
        "findings.rules.yml",
        ("nv_inference_request_failure",),
        (),
        "tests/detectors/test_output_contract.py",
        needs=(frozenset({"verbose_log"}),),
        sight=Sight(
            _YES,
            (
                "no",
                "the config and each response's output types are logged only at --log-verbose 1",
            ),
            _YES,
        ),
    ),
    Pathology(
        "requests_rejected",
        "critical",
        "Triton refuses requests: a model's queue is full (max_queue_size)",
        "RequestsRejected",
        "TritonRequestsRejected",
        "findings.rules.yml",
        ("nv_inference_pending_request_count", "nv_inference_request_failure"),
        (),
        "tests/detectors/test_requests_rejected.py",
        needs=(frozenset({"verbose_log"}),),
        sight=Sight(
            _YES,
            (
                "no",
                "Triton 2.51 counts the refusals in no metric and logs them only at "
                "--log-verbose 1",
            ),
            _YES,
        ),
    ),
    Pathology(
        "model_load_failed",
        "critical",
        "A model's load or reload failed (a reload leaves the old copy serving)",
        "ModelLoadFailed",
        "TritonModelLoadFailed",
        "findings.rules.yml",
        ("nv_inference_request_success", "nv_inference_request_failure"),
        (),
        "tests/detectors/test_model_load.py",
        needs=(frozenset({"log"}),),
        sight=Sight(_YES, _YES, _YES),
    ),
    Pathology(
        "model_load_stuck",
        "critical",
        "A model's load that never ends (Triton has no load timeout)",
        "ModelLoadStuck",
        "TritonModelLoadStuck",
        "findings.rules.yml",
        ("nv_inference_request_success", _PENDING),
        (),
        "tests/detectors/test_model_load.py",
        needs=(frozenset({"log"}),),
        sight=Sight(_YES, _YES, _YES),
    ),
    Pathology(
        "target_down",
        "critical",
        "Triton cannot be reached (down, or it crashed: its fatal signal and backtrace)",
        "TargetDown",
        "TritonTargetDown",
        "triton.rules.yml",
        ("up",),
        (),
        "tests/detectors/test_target_down.py",
        needs=(
            frozenset({"metrics"}),
            frozenset({"stats"}),
            frozenset({"log"}),
        ),
        sight=Sight(_YES, _YES, _YES),
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
        needs=(
            frozenset({"library"}),
            frozenset({"verbose_log"}),
        ),
        sight=Sight(
            ("yes", "gRPC stream lines are matched to their streams by count"),
            ("partly", "only with the library's stream tracking"),
            (
                "partly",
                "gRPC streams only, from the verbose log's stream lines (missed, never "
                "invented, where many streams pass each response count at once); an HTTP "
                "generate_stream stall needs the library",
            ),
        ),
    ),
    Pathology(
        "model_stalled",
        "critical",
        "Requests waiting on a model that completes nothing, from /metrics or the shutdown drain",
        "ModelStalled",
        "TritonModelStalled",
        "findings.rules.yml",
        (_PENDING, "nv_inference_exec_count"),
        (),
        "tests/detectors/test_model_stalled.py",
        needs=(frozenset({"metrics"}), frozenset({"log"})),
        sight=Sight(
            _YES,
            ("yes", "it is there for that: the log would name the request and instance"),
            _YES,
        ),
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
        if not p.needs or any(not alt or alt - SIGNALS.keys() for alt in p.needs):
            raise ValueError(f"catalogue: {p.kind}: needs {p.needs} (signals: {list(SIGNALS)})")
        for verdict, why in p.sight.cells():
            if verdict not in VERDICTS or (verdict != "yes" and not why):
                raise ValueError(f"catalogue: {p.kind}: sight {verdict!r} needs a reason")
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
    lines += [
        "",
        "## What each finding sees without ids, the verbose log or the library",
        "",
        "Real clients send no request ids, many servers run without `--log-verbose`, and the",
        "in-model library (`observability.bls`) is optional. `watch`, `analyze` and the triage",
        "app say which of these signals a window lacks and which kinds it then cannot see.",
        "",
        "| kind | needs | without request ids | without the verbose log | without the library |",
        "|---|---|---|---|---|",
    ]
    for p in CATALOGUE:
        needs = " or ".join(" + ".join(sorted(alt)) for alt in p.needs)
        cells = " | ".join(
            f"{verdict}{': ' + why if why else ''}" for verdict, why in p.sight.cells()
        )
        lines.append(f"| `{p.kind}` | {needs} | {cells} |")
    return "\n".join(lines) + "\n"


def sight_table() -> str:
    """The README's short form of the table above: verdicts only."""
    lines = [
        "| finding | no request ids | no verbose log | no in-model library |",
        "|---|---|---|---|",
    ]
    for p in CATALOGUE:
        lines.append(f"| `{p.kind}` | " + " | ".join(v for v, _ in p.sight.cells()) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
