"""Deadlines that fit the model: when an execution has run long enough to be called stuck.

Why not one fixed deadline: a model that answers in 10 ms and has held a request for 9 s is
already hung, while a decode loop that takes 3 s is healthy. The deadline of a model is a
multiple of its recent p99 batch duration (from the verbose log's instance lines), never
below ``floor_s`` (a loaded machine stalls a thread for a second now and then) and never above
``ceiling_s`` (the fixed deadline, which still applies to a model seen too little to learn
from). A model seen a few times (``few_samples`` to ``min_samples``) gets twice the multiple
of its slowest execution: a hang soon after a start (the first requests fast, the next one
stuck) was told only at the ceiling, 10 s, when half that is already many times what the
model takes; the slowest execution keeps a cold start's long first batch in the deadline.
A setting overrides it per model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["DeadlinePolicy", "p99"]


def p99(values: Sequence[float]) -> float:
    """The 99th percentile (nearest rank): with fewer than 100 values, the largest."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@dataclass(frozen=True)
class DeadlinePolicy:
    ceiling_s: float = 10.0
    floor_s: float = 2.0
    multiple: float = 10.0
    min_samples: int = 20
    """Completed executions needed before a model's own latency is trusted."""
    few_samples: int = 5
    """From this many executions, below ``min_samples``, the model's latency counts at twice
    the multiple of its slowest execution: a hang right after a start (a model seen a few
    times) is told at its own pace, not only at the ceiling."""
    overrides: Mapping[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple[object, ...]:
        """Equal for equal policies (``overrides`` is a mapping, so the policy is not
        hashable): what caches of per-policy results are keyed by."""
        return (
            self.ceiling_s, self.floor_s, self.multiple, self.min_samples, self.few_samples,
            tuple(sorted(self.overrides.items())),
        )  # fmt: skip

    def ceiling(self, model: str) -> float:
        """Past this everything open of the model is stuck: its override, else the ceiling."""
        return self.overrides.get(model, self.ceiling_s)

    def deadline_s(self, model: str, durations_s: Sequence[float]) -> float:
        if model in self.overrides:
            return self.overrides[model]
        if len(durations_s) < self.few_samples:
            return self.ceiling_s
        if len(durations_s) < self.min_samples:
            return min(self.ceiling_s, max(self.floor_s, 2 * self.multiple * max(durations_s)))
        return min(self.ceiling_s, max(self.floor_s, self.multiple * p99(durations_s)))

    def explain(self, model: str, durations_s: Sequence[float], whole_seconds: bool = False) -> str:
        """Why this deadline, for a finding's text. ``whole_seconds``: the durations come
        from a log of whole-second times (``Window.whole_seconds``), so a p99 under a second
        is not quoted as the microseconds it reads."""
        if model in self.overrides:
            return f"the deadline set for {model}"
        if len(durations_s) < self.few_samples:
            return "the fixed deadline (too few executions seen to learn its latency)"
        few = len(durations_s) < self.min_samples
        q = max(durations_s) if few else p99(durations_s)
        said = (
            "under a second (the log's times are whole seconds, --log-format ISO8601)"
            if whole_seconds and q < 1.0
            else f"of {q * 1e3:.0f} ms"
        )
        times, which = (2 * self.multiple, "slowest") if few else (self.multiple, "p99")
        return (
            f"{times:g} x its {which} {said} over {len(durations_s)} executions, within "
            f"[{self.floor_s:g} s, {self.ceiling_s:g} s]"
        )
