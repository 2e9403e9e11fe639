"""stub_unhealthy: a python backend stub process died, failed to start, or was restarted.

Why from the log: when a stub dies, Triton's health endpoints can stay 200 (server#8604) and a
request sent straight to the dead instance just fails with no log text on 2.51; the line
``Stub process '<instance>' is not healthy`` appears when a BLS parent's call reaches it
(``pb_stub.cc``: "Failed to process the request(s) for model '<parent instance>' ..."), and
``Failed to initialize Python stub`` / ``Non-graceful termination detected`` when a stub
cannot start or was killed. One finding per unhealthy instance; the request named is the BLS
parent that was executing on the reporting instance when the line was written.

When the caller handles the error response, Triton writes no line at all (a stub killed with
``kill -9``: tests/fixtures/foreign/rec_stub_killed). ``/metrics`` still shows it: from some
scrape on, the model's ``nv_inference_request_failure{reason="BACKEND"}`` (all failures on
releases without the ``reason`` label) keeps rising while ``nv_inference_request_success``
stands still. Every request fails in the backend: for a python model (its instance lines come
from ``python_be.cc``) that is a dead stub; otherwise the finding says it may be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median

from observability import events as ev
from observability.detectors.backend_failures import (
    BACKEND_REASONS,
    FAILURES,
    SUCCESSES,
    Failing,
    failing,
    model_of_instance,
    per_scrape,
    raised,
    raising,
    short,
)
from observability.detectors.instances import Execution, instances_of
from observability.detectors.loads import clock
from observability.detectors.requests import Lifecycle, log_ref, requests_of
from observability.detectors.waits import callees
from observability.detectors.window import Window, per_window
from observability.findings import Evidence, Finding, Severity

__all__ = ["StubUnhealthyDetector", "model_of_instance"]

_REPORTER = re.compile(r"for model '([^']+)'")

ADVICE = (
    "A python stub of this instance died (killed by the OOM killer or a signal, or crashed in "
    "native code): check dmesg and the stub's last output above the line. Requests to that "
    "instance fail until the model is reloaded (POST /v2/repository/models/<model>/load, or "
    "restart the server); health can stay 200 meanwhile (server#8604), so alert on this line "
    "and on the model's failure and error-response rates, not on /v2/health alone. Lower the "
    "stub's memory (shm-default-byte-size, batch sizes) if it was OOM-killed."
)


@dataclass
class StubUnhealthyDetector:
    max_evidence: int = 5
    release_slack_s: float = 0.5
    min_failures: float = 5.0
    """Backend failures with no success, from /metrics, that make a dead backend."""
    kind: str = "stub_unhealthy"

    def detect(self, window: Window) -> list[Finding]:
        lines = [line for line in window.logs(ev.StubHealth) if not _failed_load(window, line)]
        found = self._from_log(window, lines) if lines else []
        runs = failing(window, self.min_failures)
        named = {f.model for f in found} | set(raising(window, runs))  # alive: model_failing
        python = {
            r.model
            for r in window.logs(ev.InstanceExecuting)
            if r.header.source_file.startswith("python")
        }
        found += [self._failing_finding(f, f.model in python) for f in runs if f.model not in named]
        named |= {f.model for f in runs}
        found += [self._dead_finding(window, d) for d in dead_stubs(window) if d.model not in named]
        named |= {f.model for f in found}
        errors = raised(window)
        return found + [
            self._timed_out_finding(w)
            for w in timed_out(window)
            if w.model not in named and w.model not in errors
        ]

    def _timed_out_finding(self, w: TimedOut) -> Finding:
        summary = (
            f"A python stub of {w.model} is dead or stopped answering: {w.failures} of its "
            f"requests failed from {clock(w.since_ns)} (the first statistics that show it) to "
            f"{clock(w.last_ns)}, each after {w.seconds:.2f} s (the python backend's wait for "
            f"a stub that no longer answers), while {w.successes} succeeded in {_took(w.usual_s)} "
            "each (another instance kept serving). Triton wrote no line for it: its error "
            "went back to the caller (a BLS parent that handled it, or a client); seen in "
            "/v2/models/stats. Triton 2.51 does not restart the stub: every request sent to "
            "that instance fails until the model is reloaded, and health stays 200."
        )
        told = f"inference_stats.fail: +{w.failures} in {w.fail_s:.2f} s; success: +{w.successes}"
        said = Evidence("stats", w.last_ns, f"/v2/models/stats {w.model}", told)
        return self._unlogged(w.model, w.since_ns, w.last_ns, summary, said)

    def _unlogged(
        self, model: str, since_ns: int, last_ns: int, summary: str, said: Evidence
    ) -> Finding:
        """A dead stub no log line tells, from what a scrape says (``said``)."""
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            first_seen_ns=since_ns,
            last_seen_ns=last_ns,
            summary=summary,
            evidence=(said,),
            advice=ADVICE,
        )

    def _dead_finding(self, window: Window, d: DeadStub) -> Finding:
        first, last = d.batches[0], d.batches[-1]
        failed = _failures_since(window, d.model, first.start_ns)
        summary = (
            f"The python stub of {d.instance} is dead: since its batch at "
            f"{(window.until_ns - first.start_ns) / 1e9:.0f} s before the end, its "
            f"{len(d.batches)} batches each took {d.seconds:.2f} s (the backend's wait for a "
            "stub that no longer answers) and failed"
            + (f", while {', '.join(d.alive)} kept serving" if d.alive else "")
            + (f" ({FAILURES}, BACKEND, rose by {failed:g})" if failed else "")
            + (
                f" (its batches took {_took(d.usual_s)} before; no response since carried an "
                "output, and Triton wrote no line for it)"
                if d.usual_s is not None
                else ""
            )
            + ". Triton 2.51 does not restart it: every request sent to it fails until the "
            "model is reloaded, and health stays 200."
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=d.model,
            instance=d.instance,
            first_seen_ns=first.start_ns,
            last_seen_ns=last.end_ns or last.start_ns,
            summary=summary,
            evidence=(
                Evidence(
                    "log",
                    first.start_ns,
                    log_ref(first.offset),
                    f"first of {len(d.batches)} batches on {d.instance} lasting "
                    f"{d.seconds:.2f} s each",
                ),
                Evidence(
                    "log",
                    last.start_ns,
                    log_ref(last.offset),
                    f"latest such batch on {d.instance}",
                ),
            ),
            advice=ADVICE,
        )

    def _failing_finding(self, f: Failing, python: bool) -> Finding:
        what = (
            f"the python stub of {f.model} is dead or stopped answering"
            if python
            else f"{f.model}'s backend fails every request (a dead stub, if it is a python model)"
        )
        summary = (
            f"Every request to {f.model} has failed in its backend for "
            f"{(f.last_ns - f.since_ns) / 1e9:.0f} s ({f.failures:g} failures, no success): "
            f"{what}. Triton wrote no line for it (its error went back to the caller: a BLS "
            "parent that handled it, or an ensemble's clients); seen on /metrics."
        )
        ref = f'{FAILURES}{{model="{f.model}",reason="BACKEND"}} @ {f.target}'
        told = f"rose by {f.failures:g} while {SUCCESSES} stayed at {f.successes:g}"
        said = Evidence("metrics", f.last_ns, ref, told)
        return self._unlogged(f.model, f.since_ns, f.last_ns, summary, said)

    def _from_log(self, window: Window, lines: list[ev.StubHealth]) -> list[Finding]:
        groups: dict[str, list[ev.StubHealth]] = {}
        for line in lines:
            groups.setdefault(line.instance or _reporter(line.detail) or "", []).append(line)
        reqs = requests_of(window)
        by_instance: dict[str, list[Lifecycle]] = {}
        for c in reqs.lifecycles:
            if c.instance:
                by_instance.setdefault(c.instance, []).append(c)
        return [self._finding(instance, group, by_instance) for instance, group in groups.items()]

    def _finding(
        self, instance: str, group: list[ev.StubHealth], by_instance: dict[str, list[Lifecycle]]
    ) -> Finding:
        first, last = group[0], group[-1]
        model = model_of_instance(instance) if instance else "unknown"
        slack = int(self.release_slack_s * 1e9)
        victims = [v for line in group if (v := _victim(line, by_instance, slack)) is not None]
        text = first.detail.strip().split("\n")[0]
        if "not healthy" in first.detail:
            summary = f"The python stub of {instance or model} is dead ('{short(text, 160)}')"
        elif "Non-graceful termination" in first.detail:
            summary = f"A python stub of {model} was terminated non-gracefully"
        else:
            summary = f"A python stub of {model} failed to start or restart ('{short(text, 160)}')"
        summary += f", seen {len(group)} time(s)"
        if victims:
            summary += (
                f"; request '{victims[0].request_id}' ({victims[0].model}) failed on it"
                " and every request to that instance fails until the model is reloaded."
            )
        else:
            summary += "; requests to that instance fail until the model is reloaded."
        evidence = tuple(
            Evidence("log", line.header.at_ns, log_ref(line.header.offset), line.detail.strip())
            for line in group[: self.max_evidence]
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=model,
            instance=instance or None,
            request_id=victims[0].request_id if victims else None,
            first_seen_ns=first.header.at_ns,
            last_seen_ns=last.header.at_ns,
            summary=summary,
            evidence=evidence,
            advice=ADVICE,
        )


def _reporter(detail: str) -> str | None:
    m = _REPORTER.search(detail)
    return m.group(1) if m else None


def _victim(
    line: ev.StubHealth, by_instance: dict[str, list[Lifecycle]], slack_ns: int
) -> Lifecycle | None:
    """The request executing on the reporting (BLS parent) instance when the line was written;
    its release may be logged just before the error line (seen on 2.51), hence the slack."""
    reporter = _reporter(line.detail)
    at = line.header.at_ns
    for c in reversed(by_instance.get(reporter or "", [])):
        if c.executing_ns is not None and c.executing_ns <= at:
            if c.released_ns is None or c.released_ns >= at - slack_ns:
                return c
            return None
    return None


@dataclass(frozen=True)
class DeadStub:
    """An instance whose stub died: each of its last batches waited out the backend's
    timeout and failed."""

    model: str
    instance: str
    batches: list[Execution]
    seconds: float
    alive: list[str]
    """The model's other instances that kept answering meanwhile (none: it had no other)."""
    usual_s: float | None = None
    """The instance's median batch before (when told by the log alone: no /metrics)."""


_DEAD_STUB_S = (0.95, 1.10)
"""How long the python backend waits for a stub that no longer answers before it fails the
batch: 1.00 s on 2.51 (rec_stub_killed, kws_frontend_stub_restart: 1.000-1.002 s each)."""
_MIN_DEAD_BATCHES = 5
_FAST_BEFORE = 0.5
"""Without a sibling answering meanwhile, the instance's own batches before the run must
have taken under this share of the timeout: a model whose execute takes a second is slow,
not dead."""


@per_window
def dead_stubs(window: Window) -> list[DeadStub]:
    """Instances whose last batches (``_MIN_DEAD_BATCHES`` or more, to the window's end) each
    lasted the backend's stub timeout and failed: a stub killed (the OOM killer, a segfault
    in native code). Failed is read on /metrics (BACKEND failures rose) or, with no failure
    counter for the model (a log alone), from the log: its responses since carried no
    output (``_answered_empty``). A model whose every request fails is ``failing()``'s on
    /metrics; this is the one /metrics alone cannot show (a sibling's successes keep rising)
    and the one a log alone shows (rec_stub_killed, emb_pool_stub_oom,
    kws_frontend_stub_restart: one instance, no line written). Read once per window:
    ``stub_unhealthy``, ``model_failing`` and ``instance_saturation`` each ask."""
    inst = instances_of(window)
    per: dict[str, list[Execution]] = {}
    for e in inst.executions:
        if e.end_ns is not None and not e.died:
            per.setdefault(e.instance, []).append(e)
    out = []
    for name, done in per.items():
        run: list[Execution] = []
        for e in reversed(done):
            if not _DEAD_STUB_S[0] <= (e.end_ns or 0) / 1e9 - e.start_ns / 1e9 <= _DEAD_STUB_S[1]:
                break
            run.append(e)
        if len(run) < _MIN_DEAD_BATCHES:
            continue
        run.reverse()
        model = run[0].model
        alive = sorted(
            other
            for other, batches in per.items()
            if other != name
            and batches[0].model == model
            and any(
                b.start_ns >= run[0].start_ns
                and (b.end_ns or 0) - b.start_ns < 0.5 * _DEAD_STUB_S[0] * 1e9
                for b in batches
            )
        )
        seconds = sum(((e.end_ns or 0) - e.start_ns) / 1e9 for e in run) / len(run)
        if per_scrape(window, FAILURES, model, BACKEND_REASONS):
            if alive and _failures_since(window, model, run[0].start_ns) >= _MIN_DEAD_BATCHES:
                out.append(DeadStub(model, name, run, seconds, alive))
            continue
        before = [((e.end_ns or 0) - e.start_ns) / 1e9 for e in done[: len(done) - len(run)]]
        usual = median(before) if before else None
        if not alive and (usual is None or usual >= _FAST_BEFORE * _DEAD_STUB_S[0]):
            continue
        # Calls bounded to a second into a model that hangs read the same on a log alone,
        # and with no ids the calls are not known (asr_encoder_hang_bounded: asr_router).
        hung = any(e.model != model and e.start_ns < run[0].start_ns for e in inst.open.values())
        if not hung and _answered_empty(window, model, name, run[0].start_ns):
            out.append(DeadStub(model, name, run, seconds, alive, usual))
    # A BLS caller of a dead stub waits out the same timeout and answers its error: each of
    # its batches lasts the timeout too (kws_gateway over kws_frontend_stub_restart).
    calls = callees(inst)
    dead = {d.model for d in out}
    return [d for d in out if not calls.get(d.model, set()) & (dead - {d.model})]


@dataclass(frozen=True)
class TimedOut:
    """A model whose failures in the statistics each took the backend's stub timeout."""

    model: str
    since_ns: int
    last_ns: int
    failures: int
    fail_s: float
    successes: int
    usual_s: float

    @property
    def seconds(self) -> float:
        return self.fail_s / self.failures


def timed_out(window: Window) -> list[TimedOut]:
    """Models whose failures over the window's statistics (``_MIN_DEAD_BATCHES`` or more) each
    took the python backend's wait for a dead stub, while their successes were fast: one
    instance's stub dead, its siblings serving, where no log line tells it (--log-verbose 0,
    the caller handling the error: pz_worker_stub_dies_v0, 64 failures of 1.00 s against 24.6
    ms per success). /metrics alone cannot tell it from a model that raises now and then."""
    series: dict[tuple[str, str], list[ev.ModelStats]] = {}
    for s in sorted(window.model_stats, key=lambda s: s.at_ns):
        series.setdefault((s.model, s.version), []).append(s)
    out = []
    for snaps in series.values():
        a, b = snaps[0], snaps[-1]
        rose = next((s.at_ns for s in snaps if s.fail_count > a.fail_count), b.at_ns)
        failures, fail_ns = b.fail_count - a.fail_count, b.fail_ns - a.fail_ns
        successes, success_ns = b.success_count - a.success_count, b.success_ns - a.success_ns
        if failures < _MIN_DEAD_BATCHES or fail_ns <= 0:
            continue
        each = fail_ns / failures / 1e9
        usual = success_ns / successes / 1e9 if successes > 0 else None
        if not _DEAD_STUB_S[0] <= each <= _DEAD_STUB_S[1]:
            continue
        if usual is None or usual >= _FAST_BEFORE * _DEAD_STUB_S[0]:
            continue  # nothing fast served meanwhile: a slow model failing, not a dead stub
        out.append(TimedOut(a.model, rose, b.at_ns, failures, fail_ns / 1e9, successes, usual))
    return out


def _took(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1e3:.1f} ms"


def _answered_empty(window: Window, model: str, instance: str, since_ns: int) -> bool:
    """Whether the instance's responses since ``since_ns`` (``_MIN_DEAD_BATCHES`` or more)
    carried no output, after ``_MIN_DEAD_BATCHES`` before that did: its failures, as a log
    tells them (an error response writes no output line)."""
    mine = [c for c in requests_of(window).answered.get(model, []) if c.instance == instance]
    after = [c for c in mine if (c.executing_ns or 0) >= since_ns]
    said = [c for c in mine if (c.executing_ns or 0) < since_ns and c.outputs]
    return (
        len(after) >= _MIN_DEAD_BATCHES
        and not any(c.outputs for c in after)
        and len(said) >= _MIN_DEAD_BATCHES
    )


def _failures_since(window: Window, model: str, since_ns: int) -> float:
    """BACKEND failures of ``model`` on /metrics from the last scrape before ``since_ns``."""
    points = per_scrape(window, FAILURES, model, BACKEND_REASONS)
    if not points:
        return 0.0
    series = sorted(points.items())
    before = [v for at, v in series if at <= since_ns] or [series[0][1]]
    return max(0.0, series[-1][1] - before[-1])


def _failed_load(window: Window, line: ev.StubHealth) -> bool:
    """A stub that failed to start because the model's load failed (its ``initialize``
    raised): the load's failure, told by ``model_lifecycle.cc`` ("failed to load 'M'") right
    after, not a dead stub; the model's old copy may still serve (kws_classifier_reload_fails)."""
    if line.instance or "Failed to initialize Python stub" not in line.detail:
        return False
    at = line.header.at_ns
    return any(
        r.state == "failed" and 0 <= r.header.at_ns - at <= 5_000_000_000
        for r in window.logs(ev.ModelStateChange)
    )
