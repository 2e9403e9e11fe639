"""Which models call which, read from traces: a BLS child's span names its parent's.

Why: without the verbose log, nothing on /metrics or the stats says that one model calls
another, and a caller that waited on a slow child looks slow itself (the metrics path of
``cold_start``: xl_translate_cold_start_quiet). The traces do say it, when they are on:

* a Triton trace file (``--trace-config triton,file=F``): a child request built with
  ``trace=request.trace()`` carries its parent's ``parent_id``;
* Triton's opentelemetry trace mode: a child's span (``triton.model_name``) hangs under the
  span of the model that issued it, in the same trace.
"""

from __future__ import annotations

from observability.detectors.window import Window, per_window

__all__ = ["traced_callees"]

_MODEL = "triton.model_name"


@per_window
def traced_callees(window: Window) -> dict[str, set[str]]:
    """Model -> the models its traced requests called (a model calling itself is left out)."""
    out: dict[str, set[str]] = {}
    spans = window.trace_spans
    model_of = {s.trace_id: s.model for s in spans}
    for s in spans:
        caller = model_of.get(s.parent_id) if s.parent_id is not None else None
        if caller and s.model and caller != s.model:
            out.setdefault(caller, set()).add(s.model)
    otlp = [s for s in window.otlp_spans if s.attribute(_MODEL)]
    named = {(s.trace_id, s.span_id): s.attribute(_MODEL) for s in otlp}
    for o in otlp:
        caller = named.get((o.trace_id, o.parent_span_id))
        callee = o.attribute(_MODEL)
        if caller and caller != callee:
            out.setdefault(caller, set()).add(callee)
    return out
