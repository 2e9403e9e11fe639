"""Where an id-less request came from: a client, an ensemble's next step, or a BLS call.

Why: without request ids the log does not say who sent a request, and ``waits.py`` learns
which models call which from healthy batches. A call path that only a fault takes (model B
calls back into A only when something goes wrong, the A -> B -> A deadlock) is never learned,
so its call would be taken for a client's request queued behind the busy instances. The log
does say how the other two kinds of request arrive:

* a client's request follows its frontend's line within a few milliseconds: ``HTTP request:
  2 /v2/models/<m>/infer`` (the model named), gRPC's ``Process for ModelInferHandler ... step
  START`` / ``New request handler``, a stream's ``step READ``;
* an ensemble's step is admitted by the ensemble scheduler when the step before it ends: its
  ``prepared:`` line lies within a couple of milliseconds of the previous step's release (seen
  on 2.51 *before* that ``released`` line as often as after it), or right after the
  ensemble's own ``prepared:`` line for its first step.

A request that neither explains is issued from inside a running model: a BLS call. That
conclusion lets ``waits.py`` take such a request for a call of a stuck batch whose learned
callees do not include its model. The others remove a call the learning allowed in one case
only: a request to the stuck batch's own model admitted right after it started (a possible
self-call) that directly follows a frontend line is another client's request (a client's
``prepared:`` follows its frontend line by microseconds). A busy log, where releases are
everywhere, can otherwise only leave a call unexplained-as-a-call, never invent one.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping

from observability import events as ev
from observability.detectors.window import Window, per_window

__all__ = [
    "CALL",
    "CLIENT",
    "STEP",
    "mostly_clients",
    "mostly_steps",
    "origins",
    "origins_of",
    "shares",
]

CLIENT, STEP, CALL = "client", "step", "call"

_FRONTEND_NS = 10_000_000
"""A client's ``prepared:`` follows its frontend line by well under this (µs on 2.51)."""
_CLIENTS_ONLY = 0.9
"""Share of a model's requests read as a client's that makes it a model only clients call."""
_STEP_NS = 2_000_000
"""An ensemble step's ``prepared:`` lies this close to the previous step's release."""


def origins(records: Iterable[object], whole_seconds: bool = False) -> dict[tuple[int, int], str]:
    """``(at_ns, offset)`` of a ``prepared:`` line -> ``client``, ``step`` or ``call`` (pure
    over log records in time order).

    A gRPC frontend line names no model, so it goes to the next ``prepared:`` line, which a
    BLS child admitted in between can take (doc_router_pool_deadlock: a doc_layout call took
    the line of a client's doc_router request 0.2 ms later, which then read as a call). A
    second pass keeps such lines from the models clients hardly ever called in the first."""
    records = list(records)
    executed = {r.model for r in records if isinstance(r, ev.InstanceExecuting)}
    released = _released(records)
    releases = [at for at, _ in released]
    steps = _step_models(records, released, executed)
    leads = _first_step_models(records, executed)
    first = _origins(records, frozenset(), releases, steps, executed, leads)
    prepared = _prepared(records)
    sent = shares(first, prepared, CLIENT)
    rare = frozenset(m for m, (c, n) in sent.items() if n >= 10 and c < _CLIENT_SHARE * n)
    # A second pass only where some of these took a line; then all of them are kept from
    # the lines, those that took none too: else the line one gives back goes to the next
    # such model admitted before the client's own (outage_without_ids: eight routers' gRPC
    # lines, three children's calls in between, and a router request read as a call).
    taken = any(sent[m][0] for m in rare)
    found = _origins(records, rare, releases, steps, executed, leads) if taken else first
    # Whole-second times (Window.whole_seconds) put every line of a second near a release:
    # nearness says nothing there, so no model's share of it does either.
    return found if whole_seconds else _steps_by_model(releases, found, prepared)


def shares(
    origin: Mapping[tuple[int, int], str],
    requests: Iterable[tuple[str, tuple[int, int]]],
    kind: str,
) -> dict[str, tuple[int, int]]:
    """Per model, how many of its ``(model, prepared key)`` requests ``origin`` reads as
    ``kind``, of how many: which models clients call, which are ensembles' steps."""
    tally: dict[str, list[int]] = {}
    for model, key in requests:
        seen = tally.setdefault(model, [0, 0])
        seen[0] += origin.get(key) == kind
        seen[1] += 1
    return {m: (k, n) for m, (k, n) in tally.items()}


def mostly_clients(origin: Mapping[tuple[int, int], str], records: Iterable[object]) -> set[str]:
    """Models nine in ten or more of whose (ten or more) requests a client sent. One
    request's origin can be wrong (a frontend line goes to the next ``prepared:`` line,
    which a BLS call admitted in between can take: the demo's detector calls read as
    clients' under load); a model's share of them is not."""
    sent = shares(origin, _prepared(records), CLIENT)
    return {m for m, (k, n) in sent.items() if n >= 10 and k >= _CLIENTS_ONLY * n}


def _prepared(records: Iterable[object]) -> list[tuple[str, tuple[int, int]]]:
    """``(model, (at_ns, offset))`` of every ``prepared:`` line: the keys ``origins`` gives."""
    return [
        (r.model, (r.header.at_ns, r.header.offset))
        for r in records
        if isinstance(r, ev.RequestPrepared)
    ]


def mostly_steps(share: Mapping[str, tuple[int, int]]) -> set[str]:
    """Models at least half of whose (ten or more) requests were steps."""
    return {m for m, (k, n) in share.items() if n >= 10 and k >= _STEP_SHARE * n}


def _steps_by_model(
    releases: list[int],
    found: dict[tuple[int, int], str],
    prepared: list[tuple[str, tuple[int, int]]],
) -> dict[tuple[int, int], str]:
    """A step's admission lies near another step's release by chance as often as a BLS
    call's does, so the models decide: a model whose requests were mostly steps is an
    ensemble's step, and its request a little further before a release (up to
    ``_STEP_EARLY_NS``: 2.6 ms in geo_lookup_hang) is one too; a model whose requests were
    hardly ever steps is called from inside models, and its requests near a release are
    calls (geo_lookup's, 0.1 ms after geo_decode's release)."""
    share = shares(found, prepared, STEP)
    steps = mostly_steps(share)
    calls = {m for m, (k, n) in share.items() if n >= 10 and k < _CLIENT_SHARE * n}
    if not steps and not calls:
        return found
    out = dict(found)
    for model, key in prepared:
        if model in calls and out.get(key) == STEP:
            out[key] = CALL
        elif model in steps and out.get(key) == CALL and _released_soon(releases, key[0]):
            out[key] = STEP
    return out


def _released_soon(releases: list[int], at: int) -> bool:
    i = bisect_left(releases, at)
    return i < len(releases) and releases[i] <= at + _STEP_EARLY_NS


_STEP_SHARE = 0.5
_STEP_EARLY_NS = 5_000_000
"""How long before the previous step's ``released`` line 2.51 may log the next step's
``prepared:`` line, for a model whose requests are mostly steps."""


_CLIENT_SHARE = 0.1
"""A model fewer of whose requests than this followed a frontend line is not one clients call:
its share comes from model-less frontend lines its BLS calls took."""


def _origins(
    records: list[object],
    internal: frozenset[str],
    releases: list[int],
    steps: frozenset[str] | None,
    executed: set[str],
    leads: frozenset[str] | None = None,
) -> dict[tuple[int, int], str]:
    """``origins`` with model-less frontend lines kept from ``internal`` models' requests;
    ``releases``: the times of the records' release lines, in order; ``steps``: the models
    an ensemble may call (``_step_models``; None: any); ``executed``: the models with
    instances of their own; ``leads``: the models an ensemble's request is followed by
    (``_first_step_models``; None: any)."""
    out: dict[tuple[int, int], str] = {}
    tokens: list[tuple[int, str]] = []  # unconsumed frontend lines: (at, model or "")
    last_scheduled: int | None = None  # the last prepared of a model without instances
    for r in records:
        if isinstance(r, ev.FrontendRequest) and _is_inference(r):
            tokens.append((r.header.at_ns, _model_of(r.path)))
        elif isinstance(r, ev.StreamRequestRead):
            tokens.append((r.header.at_ns, ""))
        elif isinstance(r, ev.RequestPrepared):
            at = r.header.at_ns
            tokens = [t for t in tokens if at - t[0] <= _FRONTEND_NS]
            hit = next(
                (t for t in tokens if t[1] == r.model or (t[1] == "" and r.model not in internal)),
                None,
            )
            if hit is not None:
                tokens.remove(hit)
                out[(at, r.header.offset)] = CLIENT
            elif (
                last_scheduled is not None
                and at - last_scheduled <= _STEP_NS
                and (leads is None or r.model in leads)
            ) or ((steps is None or r.model in steps) and _near(releases, at)):
                out[(at, r.header.offset)] = STEP
            else:
                out[(at, r.header.offset)] = CALL
            if r.model not in executed:  # an ensemble (no instance of its own)
                last_scheduled = at
    return out


def _is_inference(r: ev.FrontendRequest) -> bool:
    if r.protocol == "grpc":
        return "Infer" in r.method
    return r.path.endswith(("/infer", "/generate", "/generate_stream", "/invocations"))


def _model_of(path: str) -> str:
    """``/v2/models/<m>/versions/<v>/infer`` -> ``m``; ``""`` when the path names none."""
    parts = path.split("/")
    return parts[3] if len(parts) > 3 and parts[1:3] == ["v2", "models"] else ""


def _released(records: list[object]) -> list[tuple[int, str]]:
    """``(at_ns, model)`` of every release line, in time order (the model from its instance's
    ``executing`` line; ``""`` when none is in the records)."""
    model_of = {r.instance: r.model for r in records if isinstance(r, ev.InstanceExecuting)}
    return sorted(
        (r.header.at_ns, model_of.get(r.instance, ""))
        for r in records
        if isinstance(r, ev.InstanceReleased)
    )


def _step_models(
    records: list[object], released: list[tuple[int, str]], executed: set[str]
) -> frozenset[str] | None:
    """The models an ensemble of the records may call as a step; None when the records show
    no ensemble (a model admitted without an instance of its own). A first step is admitted
    right after its ensemble's own request; a next step right after a release of the step
    before it, another step's model. A model admitted near releases of no step at all is
    nobody's step, however often it follows its own releases: a capped pool issues each call
    as the last one returns (pz_pool_exhausted_one_client: a 2-thread pool's 6 waves of
    pz_worker calls, read as an ensemble's steps because the window has one)."""
    prepared = [r for r in records if isinstance(r, ev.RequestPrepared)]
    ensembles = {r.model for r in prepared} - executed
    if not ensembles:
        return None
    steps: set[str] = set()
    last: int | None = None
    for r in prepared:
        at = r.header.at_ns
        if r.model in ensembles:
            last = at
        elif last is not None and at - last <= _STEP_NS:
            steps.add(r.model)
    near = _released_near(prepared, ensembles, released)
    grown = True
    while grown:
        grown = False
        for model, after in near.items():
            if model not in steps and (after - {model}) & steps:
                steps.add(model)
                grown = True
    return frozenset(steps | ensembles)


def _released_near(
    prepared: list[ev.RequestPrepared], ensembles: set[str], released: list[tuple[int, str]]
) -> dict[str, set[str]]:
    """Model (not an ensemble) -> the models released within ``_STEP_NS`` of any of its
    ``prepared:`` lines (``released``: ``(at_ns, model)`` in time order)."""
    near: dict[str, set[str]] = {}
    times = [at for at, _ in released]
    by_model: dict[str, list[int]] = {}
    for at, model in released:
        by_model.setdefault(model, []).append(at)
    for r in prepared:
        if r.model in ensembles:
            continue
        at = r.header.at_ns
        seen = near.setdefault(r.model, set())
        i = bisect_left(times, at - _STEP_NS)
        j = bisect_right(times, at + _STEP_NS, lo=i)
        if j - i <= _FEW_RELEASES:
            seen.update(model for _, model in released[i:j])
        else:  # a crowd of releases: each model's own times tell whether one is near
            seen.update(m for m, ts in by_model.items() if m not in seen and _near(ts, at))
    return near


_FEW_RELEASES = 16
"""Releases near a ``prepared:`` line read one by one; more are asked per model instead. A
window whose lines share a few instants (a damaged log, a burst) had every ``prepared:``
line read every release of its instant: quadratic, seconds for a few thousand lines."""


def _first_step_models(records: list[object], executed: set[str]) -> frozenset[str] | None:
    """The models an ensemble's first steps run on: those most of whose requests are
    admitted right after an ensemble's own, or that are the next admitted after most of an
    ensemble's requests. A request admitted right after an ensemble's by chance is not its
    first step when its model hardly ever is one: with 16 tickets in flight, hx_kb's call
    back into hx_dispatch (a later step) came 1.1 ms after a client's hx_triage request and
    read as its first step, so the deadlock it closed was never seen (hx_kb_recall_deadlock:
    0.44 of hx_dispatch's requests came that close to one by chance, all of hx_encode's).
    None where the records show no ensemble."""
    prepared = [r for r in records if isinstance(r, ev.RequestPrepared)]
    ensembles = {r.model for r in prepared} - executed
    if not ensembles:
        return None
    total: dict[str, int] = {}
    after: dict[str, int] = {}
    next_of: dict[str, int] = {}
    opened = 0
    last: int | None = None
    follows = False  # the next admission is the first after an ensemble's request
    for r in prepared:
        at = r.header.at_ns
        if r.model in ensembles:
            last, follows = at, True
            opened += 1
            continue
        total[r.model] = total.get(r.model, 0) + 1
        if last is not None and at - last <= _STEP_NS:
            after[r.model] = after.get(r.model, 0) + 1
            if follows:
                next_of[r.model] = next_of.get(r.model, 0) + 1
        follows = False
    return frozenset(
        m
        for m, n in total.items()
        if after.get(m, 0) >= _FIRST_SHARE * n or next_of.get(m, 0) >= _FIRST_SHARE * opened
    )


_FIRST_SHARE = 0.5


def _near(times: list[int], at: int) -> bool:
    i = bisect_left(times, at - _STEP_NS)
    return i < len(times) and times[i] <= at + _STEP_NS


@per_window
def origins_of(window: Window) -> dict[tuple[int, int], str]:
    """Where each admitted request of the window came from, once per window (detectors with
    different deadline policies each analyse the waits)."""
    kinds = (
        ev.FrontendRequest,
        ev.StreamRequestRead,
        ev.RequestPrepared,
        ev.InstanceExecuting,
        ev.InstanceReleased,
    )
    return origins(window.logs(*kinds), window.whole_seconds)
