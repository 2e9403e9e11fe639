"""ensemble_fanout: an ensemble refused at load because a step reads a tensor nobody writes.

Why: the "is not written" error (server#7366, #4560) is only in the server log, never in an
API answer. With ``--exit-on-error=false`` the server stays up and ``/v2/health/ready`` says
200 while every request to the ensemble fails with "unknown model"; the repository index
shows the name with no state or reason. The usual cause is fanning one tensor out to two
steps by naming the producer's *model-side* output (``OUTPUT``) in a consumer's
``input_map`` instead of the ensemble tensor (``shared``). Triton reports only the first
unreachable output, so a fix can reveal the next one.

One tensor feeding two steps through a proper ensemble tensor loads and works on 2.51, so
that wiring alone is not reported: only the load error is.

A refused *re*load is another story for the user (tests/fixtures/foreign/vis_ensemble_miswired):
Triton 2.51 loads the ensemble again from the configuration it already had
(``successfully loaded``, then the old version ``unloaded``) and keeps serving it, so no
request fails; what is wrong is that the change never took effect, and that the next
restart, which reads only the new file, will refuse the ensemble for good. The finding says
which of the two happened: the ensemble loaded before the error, or requests to it admitted
after it, mean it kept serving.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.loads import clock, state_line
from observability.detectors.requests import log_ref
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["EnsembleFanoutDetector", "miswired"]

NOT_WRITTEN = re.compile(
    r"output '(?P<output>[^']+)' for ensemble '(?P<ensemble>[^']+)' is not written"
    r"(?:: at least one of its depending tensors, '(?P<tensor>[^']+)', is not connected)?"
)
"""Releases before 23.x stop after "is not written" (server#5268, #5943): no tensor named."""

NOT_USED = re.compile(
    r"ensemble output '(?P<output>[^']+)' for ensemble '?(?P<ensemble>[^'\s]+)'? is not used"
)
"""An output the ensemble declares that no step's ``output_map`` writes. 2.51 words it so,
with one quote missing: ``ensemble output 'FACETS' for ensemble pz_ensemble_partial' is not
used`` (pz_ensemble_miswired_v2)."""


def miswired(text: str) -> re.Match[str] | None:
    """Triton's load error for an ensemble output no step writes, in either wording."""
    return NOT_WRITTEN.search(text) or NOT_USED.search(text)


@dataclass
class EnsembleFanoutDetector:
    max_evidence: int = 5
    kind: str = "ensemble_fanout"

    def detect(self, window: Window) -> list[Finding]:
        groups: dict[str, list[tuple[object, re.Match[str]]]] = {}
        loaded: dict[str, list[int]] = {}
        """When each model was (re)loaded: a refused reload leaves the old one serving."""
        for rec in window.logs(ev.ModelStateChange, ev.ErrorLine):
            if isinstance(rec, ev.ModelStateChange):
                if rec.state == "loaded":
                    loaded.setdefault(rec.model, []).append(rec.header.at_ns)
                text = rec.detail
            elif isinstance(rec, ev.ErrorLine):
                text = rec.text
            else:
                continue
            m = miswired(text)
            if m is not None:
                groups.setdefault(m["ensemble"], []).append((rec, m))
        served = _admitted(window, set(groups))
        return [
            self._finding(name, hits, loaded.get(name, []), served.get(name, []))
            for name, hits in groups.items()
        ]

    def _finding(
        self,
        ensemble: str,
        hits: list[tuple[object, re.Match[str]]],
        loaded_ns: list[int],
        served_ns: list[int],
    ) -> Finding:
        _, m = hits[-1]
        unused = m.re is NOT_USED
        output, tensor = m["output"], None if unused else m["tensor"]
        why = (
            "because no step's output_map writes it (Triton says the output 'is not used')"
            if unused
            else f"because the tensor '{tensor}' it depends on is not produced by any step"
            if tensor
            else "because a step it depends on reads a tensor no earlier step writes (this "
            "Triton does not name it)"
        )
        first, last = _at(hits[0][0]), _at(hits[-1][0])
        before = [t for t in loaded_ns if t < first]
        again = [t for t in loaded_ns if t > last]
        after = [t for t in served_ns if t > last]
        if before or again or after:
            how = [f"loaded at {clock(before[-1])} before the refusal"] if before else []
            how += [f"loaded again from it at {clock(again[0])}"] if again else []
            how += [f"{len(after)} request(s) to it admitted since"] if after else []
            summary = (
                f"A reload of ensemble '{ensemble}' was refused ({len(hits)} attempt(s)): its "
                f"output '{output}' is never written {why}. The configuration it had keeps "
                f"serving ({'; '.join(how)}), so the change has not taken effect; the next "
                "server restart reads only the new file and will refuse the ensemble, and then "
                f"every request to '{ensemble}' fails with 'unknown model'."
            )
        else:
            summary = (
                f"Ensemble '{ensemble}' failed to load ({len(hits)} attempt(s)): its output "
                f"'{output}' is never written {why}; every request to '{ensemble}' fails with "
                "'unknown model' while the server reports ready."
            )
        tensor = tensor or "<the unconnected tensor>"
        fix = (
            f"In {ensemble}/config.pbtxt, map '{output}' in the output_map of the step that "
            "produces it (the value side names the ensemble tensor), or drop it from the "
            "ensemble's outputs if no step produces it yet"
            if unused
            else f"In {ensemble}/config.pbtxt, find the step whose input_map value is '{tensor}' "
            "and make it name an ensemble tensor that an earlier step's output_map writes (the "
            "value side of output_map, not the producing model's own output name): to feed "
            "one tensor to two steps, map the producer's output to one ensemble tensor and "
            "use that name in both consumers' input_map. Or route through an explicit fan-out "
            "step that copies the tensor into one output per consumer (the shipped fix: "
            "observability/lab/repos/ensemble_fanout_fixed)"
        )
        advice = (
            f"{fix}. Then reload it "
            f"(POST /v2/repository/models/{ensemble}/load); Triton reports only the first "
            "unreachable output, so check the log again after the fix (server#7366, #4560)."
        )
        evidence = tuple(
            Evidence("log", _at(rec), log_ref(_offset(rec)), _line(rec))
            for rec, _hit in hits[: self.max_evidence]
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL,
            model=ensemble,
            first_seen_ns=first,
            last_seen_ns=last,
            summary=summary,
            evidence=evidence,
            advice=advice,
        )


def _admitted(window: Window, ensembles: set[str]) -> dict[str, list[int]]:
    """When requests to each of ``ensembles`` were prepared (verbose log only)."""
    out: dict[str, list[int]] = {}
    if not ensembles:
        return out
    for rec in window.logs(ev.RequestPrepared):
        if isinstance(rec, ev.RequestPrepared) and rec.model in ensembles:
            out.setdefault(rec.model, []).append(rec.header.at_ns)
    return out


def _line(rec: object) -> str:
    if isinstance(rec, ev.ModelStateChange):
        return state_line(rec)
    return rec.text if isinstance(rec, ev.ErrorLine) else str(rec)


def _at(rec: object) -> int:
    return int(rec.header.at_ns)  # type: ignore[attr-defined]


def _offset(rec: object) -> int:
    return int(rec.header.offset)  # type: ignore[attr-defined]
