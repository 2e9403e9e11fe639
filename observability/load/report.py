"""The load run's summary: what was sent and how it ended, overall and per fault."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich.table import Table

from observability.load.client import Outcome, Status

__all__ = ["LoadReport", "percentile"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile; ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class LoadReport:
    outcomes: list[Outcome] = field(default_factory=list)
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def of(self, fault: str | None = None, model: str | None = None) -> list[Outcome]:
        return [
            o
            for o in self.outcomes
            if (fault is None or o.fault == fault) and (model is None or o.model == model)
        ]

    @staticmethod
    def _counts(outcomes: Iterable[Outcome]) -> dict[str, float | int | None]:
        items = list(outcomes)
        answered = [o.latency_s for o in items if o.status is Status.OK]
        p50, p99 = percentile(answered, 50), percentile(answered, 99)
        return {
            "sent": len(items),
            "answered": len(answered),
            "failed": sum(o.status is Status.ERROR for o in items),
            "timed_out": sum(o.status is Status.TIMEOUT for o in items),
            "p50_ms": None if p50 is None else round(p50 * 1000, 2),
            "p99_ms": None if p99 is None else round(p99 * 1000, 2),
        }

    def summary(self) -> dict[str, object]:
        faults = sorted({o.fault for o in self.outcomes})
        return {
            **self._counts(self.outcomes),
            "wall_s": round(self.wall_s, 3),
            "by_fault": {f or "none": self._counts(self.of(fault=f)) for f in faults},
            "notes": list(self.notes),
        }

    def table(self) -> Table:
        table = Table(title="load summary", title_justify="left")
        for col in ("fault", "sent", "answered", "failed", "timed out", "p50 ms", "p99 ms"):
            table.add_column(col, justify="left" if col == "fault" else "right")
        rows = [("all", self._counts(self.outcomes))]
        rows += [
            (f or "none", self._counts(self.of(fault=f)))
            for f in sorted({o.fault for o in self.outcomes})
        ]
        for name, c in rows:
            table.add_row(
                name,
                str(c["sent"]),
                str(c["answered"]),
                str(c["failed"]),
                str(c["timed_out"]),
                "-" if c["p50_ms"] is None else f"{c['p50_ms']:.1f}",
                "-" if c["p99_ms"] is None else f"{c['p99_ms']:.1f}",
            )
        return table
