"""BLS call hung: the in-model instrumentation's watchdog reported a call past its deadline.

Why a separate kind from ``hung_request``: Triton's signals only show that a parent request
is still EXECUTING; the watchdog of ``observability.bls`` (running inside the parent's stub)
knows which ``async_exec``/``exec`` call it is stuck in, on which child, for how long, and the
waiting coroutine's stack — and reports it *while* it is hung, since a span is only exported
when it ends.

Contract with ``observability/bls/calls.py`` (``Bls._report_hung`` and ``Bls.end``), read from
any of three sources, de-duplicated per (parent model, parent request id, child request id):

1. OTLP span named ``bls.call.hung`` (zero-length marker, exported at once) with attributes
   ``triton.bls.parent.model``, ``triton.bls.parent.instance``, ``triton.bls.child.model``,
   ``triton.bls.parent.request_id``, ``triton.bls.child.request_id``, ``triton.bls.age_s``,
   ``triton.bls.deadline_s``, ``triton.bls.stack``, ``triton.bls.call.trace_id``,
   ``triton.bls.call.span_id`` (the hung call's own span);
2. the hung call's span ``bls <child>`` once it ends: attribute ``triton.bls.hung`` true (and
   ``triton.bls.hung_after_s``) and/or an event ``bls.call.hung`` — the call is then over;
3. the stub's stderr line in Triton's log:
   ``triton-obs bls: HUNG BLS call <parent> -> <child> instance=<i> parent_request_id='<p>'
   child_request_id='<c>' age=<a>s deadline=<d>s trace_id=<t>``.

A call still hung at the evaluation instant (no ended span for it) is critical; one that ended
after being reported is a warning (it did finish, but far too late for its caller).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from observability import events as ev
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["HUNG_LINE", "MARKER", "BlsCallHung", "HungCall"]

MARKER = "bls.call.hung"
HUNG_LINE = re.compile(
    r"triton-obs bls: HUNG BLS call (?P<parent>\S+) -> (?P<child>\S+) instance=(?P<instance>\S*)"
    r" parent_request_id='(?P<pid>[^']*)' child_request_id='(?P<cid>[^']*)'"
    r" age=(?P<age>[\d.]+)s deadline=(?P<deadline>[\d.]+)s(?: trace_id=(?P<trace>[0-9a-f]+))?"
)
_TRUE = {"true", "True", "1"}


@dataclass
class HungCall:
    parent: str
    child: str
    instance: str
    parent_request_id: str
    child_request_id: str
    first_ns: int
    last_ns: int
    age_s: float
    deadline_s: float | None = None
    trace_id: str | None = None
    span_id: str | None = None
    stack: str = ""
    ended_ns: int | None = None
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.parent, self.parent_request_id, self.child_request_id)


def _trace(text: str | None) -> str | None:
    """A trace id, or None for none or all zeros (the stub had no tracer)."""
    return text if text and text.strip("0") else None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@dataclass
class BlsCallHung:
    """Every BLS call the watchdog reported hung; critical while it still is."""

    kind: str = "bls_call_hung"
    max_stack_chars: int = 800

    def detect(self, window: Window) -> list[Finding]:
        calls: dict[tuple[str, str, str], HungCall] = {}
        ended: dict[str, int] = {}  # span id of a finished call that was reported hung
        for span in window.otlp_spans:
            if span.name == MARKER:
                self._marker(span, calls)
            elif span.name.startswith("bls ") and (
                span.attribute("triton.bls.hung") in _TRUE
                or any(e.name == MARKER for e in span.events)
            ):
                ended[span.span_id] = span.end_ns
                self._ended(span, calls)
        for rec in window.logs(ev.StubOutput):
            assert isinstance(rec, ev.StubOutput)
            for m in HUNG_LINE.finditer(rec.text):
                self._line(rec, m, calls)
        findings = []
        for call in calls.values():
            if call.ended_ns is None and call.span_id in ended:
                call.ended_ns = ended[call.span_id]
            findings.append(self._finding(call))
        return sorted(findings, key=lambda f: (f.first_seen_ns, f.model))

    # -- sources ---------------------------------------------------------------------------
    def _marker(self, span: ev.OtlpSpan, calls: dict[tuple[str, str, str], HungCall]) -> None:
        a = span.attribute
        call = self._get(
            calls,
            HungCall(
                parent=a("triton.bls.parent.model") or span.service,
                child=a("triton.bls.child.model"),
                instance=a("triton.bls.parent.instance"),
                parent_request_id=a("triton.bls.parent.request_id"),
                child_request_id=a("triton.bls.child.request_id"),
                first_ns=span.start_ns,
                last_ns=span.start_ns,
                age_s=_float(a("triton.bls.age_s")) or 0.0,
            ),
        )
        call.deadline_s = _float(a("triton.bls.deadline_s")) or call.deadline_s
        call.trace_id = _trace(a("triton.bls.call.trace_id")) or _trace(span.trace_id)
        call.span_id = a("triton.bls.call.span_id") or span.parent_span_id or call.span_id
        call.stack = a("triton.bls.stack") or call.stack
        call.evidence.append(
            Evidence(
                "otlp",
                span.start_ns,
                f"trace {call.trace_id} span {span.span_id} ({MARKER})",
                f"{call.parent} -> {call.child} in flight for {a('triton.bls.age_s')} s "
                f"(deadline {a('triton.bls.deadline_s') or '?'} s)",
            )
        )

    def _ended(self, span: ev.OtlpSpan, calls: dict[tuple[str, str, str], HungCall]) -> None:
        a = span.attribute
        call = self._get(
            calls,
            HungCall(
                parent=a("triton.bls.parent.model") or span.service,
                child=a("triton.bls.child.model") or span.name.removeprefix("bls "),
                instance=a("triton.bls.parent.instance"),
                parent_request_id=a("triton.bls.parent.request_id"),
                child_request_id=a("triton.bls.child.request_id"),
                first_ns=span.start_ns,
                last_ns=span.end_ns,
                age_s=(span.end_ns - span.start_ns) / 1e9,
            ),
        )
        call.ended_ns = span.end_ns
        call.trace_id = call.trace_id or span.trace_id
        call.span_id = call.span_id or span.span_id
        call.evidence.append(
            Evidence(
                "otlp",
                span.end_ns,
                f"trace {span.trace_id} span {span.span_id} ({span.name})",
                f"call ended after {(span.end_ns - span.start_ns) / 1e9:.2f} s, outcome "
                f"{a('triton.bls.outcome') or span.status}; hung after "
                f"{a('triton.bls.hung_after_s') or '?'} s",
            )
        )

    def _line(
        self, rec: ev.StubOutput, m: re.Match[str], calls: dict[tuple[str, str, str], HungCall]
    ) -> None:
        call = self._get(
            calls,
            HungCall(
                parent=m["parent"],
                child=m["child"],
                instance=m["instance"],
                parent_request_id=m["pid"],
                child_request_id=m["cid"],
                first_ns=rec.at_ns,
                last_ns=rec.at_ns,
                age_s=float(m["age"]),
            ),
        )
        call.deadline_s = call.deadline_s or _float(m["deadline"])
        call.trace_id = call.trace_id or _trace(m["trace"])
        call.evidence.append(
            Evidence("log", rec.at_ns, f"triton.log@{rec.offset}", m.group(0)[:300])
        )

    @staticmethod
    def _get(calls: dict[tuple[str, str, str], HungCall], seen: HungCall) -> HungCall:
        """The call already known under the same key, updated with this sighting."""
        known = calls.setdefault(seen.key, seen)
        if known is not seen:
            known.first_ns = min(known.first_ns, seen.first_ns)
            known.last_ns = max(known.last_ns, seen.last_ns)
            known.age_s = max(known.age_s, seen.age_s)
            known.instance = known.instance or seen.instance
            known.child = known.child or seen.child
        return known

    # -- output ----------------------------------------------------------------------------
    def _finding(self, call: HungCall) -> Finding:
        still = call.ended_ns is None
        who = f"request {call.parent_request_id}" if call.parent_request_id else "a request"
        deadline = f" (deadline {call.deadline_s:g} s)" if call.deadline_s else ""
        summary = f"A BLS call from '{call.parent}' ({who}) to '{call.child}' " + (
            f"has been waiting for {call.age_s:.1f} s{deadline} and is still hung."
            if still
            else f"was hung{deadline} and only returned after {call.age_s:.1f} s."
        )
        evidence = list(call.evidence)
        if call.stack:
            evidence.append(
                Evidence(
                    "otlp",
                    call.first_ns,
                    f"trace {call.trace_id} triton.bls.stack",
                    call.stack[-self.max_stack_chars :],
                )
            )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if still else Severity.WARNING,
            model=call.parent,
            instance=call.instance or None,
            request_id=call.parent_request_id or None,
            trace_id=call.trace_id,
            summary=summary,
            advice=(
                f"Find out why '{call.child}' does not answer"
                + (f" request {call.child_request_id}" if call.child_request_id else "")
                + f" (its hung_request finding, its instances' state, the stack in the "
                f"evidence). Triton has no execution timeout and InferenceRequest(timeout=...) "
                f"only limits queueing, so bound the wait in '{call.parent}' yourself: "
                f"asyncio.wait_for(request.async_exec(), timeout) and answer an error; give "
                f"'{call.child}' enough instances that one stuck execute cannot block the "
                f"rest, and never call a model's own (only) instance from itself."
            ),
            first_seen_ns=call.first_ns,
            last_seen_ns=call.ended_ns or call.last_ns,
            evidence=tuple(evidence),
        )
