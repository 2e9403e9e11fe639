"""Hang detection delay per model: deadlines learned from each model's latency against one
fixed deadline, on the checked-in real recordings of the demo (with request ids and without).

For every injected fault that leaves something stuck (a hung BLS child, a BLS deadlock, a
stalled token stream), the evaluation instant slides forward from the injection in
``--step`` seconds until the finding the catalogue owes for it (kind and model, warning or
above) appears: that instant minus the injection is the detection delay. The baseline is the
same detectors with the fixed deadline alone (floor = ceiling = ``--deadline``), what every
hang was judged by before; the ratio is learned / fixed. The detectors run as ``analyze`` runs
them, over a store-backed window of the recording. Run: ``python -m benchmarks.detection_delay``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from observability.bundle import extract_archive
from observability.bundle.ingest import ingest
from observability.catalogue import FAULTS, kind_of_fault
from observability.detectors import Window
from observability.detectors.bls_deadlock import BlsDeadlockDetector
from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.stream_stalled import StreamStalled
from observability.findings import Severity
from observability.store import Store

__all__ = ["main"]

RECORDINGS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "recordings"
STUCK_FAULTS = ("hang", "deadlock", "stall")


@dataclass(frozen=True)
class Case:
    recording: str
    fault: str
    kind: str
    model: str
    injected_ns: int


def _detectors(fixed_s: float | None, ceiling_s: float) -> list[object]:
    """The detectors of stuck work; ``fixed_s``: the floor raised to the ceiling."""
    floor = fixed_s if fixed_s is not None else 2.0
    return [
        HungRequestDetector(deadline_s=ceiling_s, floor_s=floor),
        BlsDeadlockDetector(min_pending_s=ceiling_s if fixed_s is not None else 5.0),
        StreamStalled(deadline_s=ceiling_s, floor_s=floor),
    ]


def _delay(store: Store, since_ns: int, case: Case, detectors: list[object], step_s: float,
           until_ns: int) -> float | None:  # fmt: skip
    at = case.injected_ns
    while at <= until_ns:
        window = Window(since_ns=since_ns, until_ns=at, store=store)
        for det in detectors:
            for f in det.detect(window):  # type: ignore[attr-defined]
                if (f.kind, f.model) == (case.kind, case.model) and (
                    f.severity.rank >= Severity.WARNING.rank
                ):
                    return (at - case.injected_ns) / 1e9
        at += int(step_s * 1e9)
    return None


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--step", type=float, default=0.25)
    parser.add_argument("--deadline", type=float, default=10.0)
    parser.add_argument("--recordings", nargs="*", default=["faulty", "faulty-ids-none"])
    args = parser.parse_args(argv)
    out: list[dict[str, object]] = []
    for name in args.recordings:
        folder = RECORDINGS / name
        meta = json.loads((folder / "recording.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            bundle = Path(tmp) / "bundle"
            bundle.mkdir()
            extract_archive(folder / "bundle.tar.gz", bundle)
            with Store(Path(tmp) / "store.db") as store:
                ingest(bundle, store)
            store = Store(Path(tmp) / "store.db", readonly=True)
            since, until = int(meta["since_ns"]), int(meta["until_ns"])
            for inj in meta["injections"]:
                if inj["fault"] not in STUCK_FAULTS:
                    continue
                case = Case(
                    name,
                    inj["fault"],
                    kind_of_fault(inj["fault"]),
                    FAULTS[inj["fault"]].finds_model,
                    since + int(float(inj["at_s"]) * 1e9),
                )
                learned = _delay(store, since, case, _detectors(None, args.deadline),
                                 args.step, until)  # fmt: skip
                fixed = _delay(store, since, case, _detectors(args.deadline, args.deadline),
                               args.step, until)  # fmt: skip
                row: dict[str, object] = {
                    "bench": "detection_delay",
                    "recording": name,
                    "fault": case.fault,
                    "finding": f"{case.kind}/{case.model}",
                    "value": learned,
                    "unit": "s",
                    "baseline": fixed,
                    "ratio": round(learned / fixed, 2) if learned and fixed else None,
                }
                left = (until - case.injected_ns) / 1e9
                if learned is None or fixed is None:
                    row["note"] = f"null: not found in the {left:.1f} s left of the recording"
                print(json.dumps(row), flush=True)
                out.append(row)
            store.close()
    return out


if __name__ == "__main__":
    main()
