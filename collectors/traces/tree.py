"""The BLS/ensemble call tree of trace spans, from ``parent_id``.

Why orphans are first-class: a parent is written only when it completes, after its
children. A child whose parent is missing is either in a file not read yet or the child
of a request that never finished — a hung BLS parent leaves exactly this shape. Trace ids
are per Triton process, so a tree is built over the spans of one server run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from observability.events import TraceSpan

__all__ = ["TraceTree", "build_trace_tree"]


@dataclass(frozen=True, slots=True)
class TraceTree:
    spans: dict[int, TraceSpan]
    """Every span by trace id (the first one seen when an id repeats)."""
    children: dict[int, tuple[TraceSpan, ...]]
    """Direct children of a trace id, in input order; absent for a leaf."""
    roots: tuple[TraceSpan, ...]
    """Spans without a ``parent_id``: the requests clients sent."""
    orphans: tuple[TraceSpan, ...]
    """Spans whose ``parent_id`` names a span that is not here."""
    duplicates: tuple[TraceSpan, ...] = ()
    """Spans whose id was already taken (two server runs mixed): left out of the tree."""

    def children_of(self, trace_id: int) -> tuple[TraceSpan, ...]:
        return self.children.get(trace_id, ())

    def walk(self, trace_id: int) -> Iterator[tuple[int, TraceSpan]]:
        """``(depth, span)`` depth-first from ``trace_id``; iterative, each id once."""
        root = self.spans.get(trace_id)
        if root is None:
            return
        stack = [(0, root)]
        seen: set[int] = set()
        while stack:
            depth, span = stack.pop()
            if span.trace_id in seen:
                continue
            seen.add(span.trace_id)
            yield depth, span
            stack.extend((depth + 1, c) for c in reversed(self.children_of(span.trace_id)))

    def root_of(self, trace_id: int) -> TraceSpan | None:
        """The top-most ancestor that is present (the span itself for a root)."""
        span = self.spans.get(trace_id)
        seen: set[int] = set()
        while span is not None and span.parent_id is not None and span.trace_id not in seen:
            seen.add(span.trace_id)
            parent = self.spans.get(span.parent_id)
            if parent is None:
                return span
            span = parent
        return span


def build_trace_tree(spans: Iterable[TraceSpan]) -> TraceTree:
    by_id: dict[int, TraceSpan] = {}
    duplicates: list[TraceSpan] = []
    for span in spans:
        if span.trace_id in by_id:
            duplicates.append(span)
        else:
            by_id[span.trace_id] = span
    children: dict[int, list[TraceSpan]] = {}
    roots: list[TraceSpan] = []
    orphans: list[TraceSpan] = []
    for span in by_id.values():
        if span.parent_id is None:
            roots.append(span)
        elif span.parent_id in by_id and span.parent_id != span.trace_id:
            children.setdefault(span.parent_id, []).append(span)
        else:
            orphans.append(span)
    return TraceTree(
        spans=by_id,
        children={k: tuple(v) for k, v in children.items()},
        roots=tuple(roots),
        orphans=tuple(orphans),
        duplicates=tuple(duplicates),
    )
