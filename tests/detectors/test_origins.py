"""Where an id-less request came from (``detectors/origins.py``), on lines as Triton 2.51
writes them (tests/fixtures/foreign/ocr_cycle_deadlock: a gRPC client, an ensemble's steps
whose ``prepared:`` precedes the previous step's release by 62 µs, and a BLS call back into
the caller's model admitted while the caller's batch runs)."""

# ruff: noqa: E501  (real log lines are kept whole)
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from collectors.logs.parser import parse_bytes
from observability import events as ev
from observability.detectors import origins as origins_module
from observability.detectors.origins import CALL, CLIENT, STEP, origins

LOG = b"""I1125 14:09:55.531246 1 infer_handler.cc:723] "Process for ModelInferHandler, rpc_ok=1, 0 step START"
I1125 14:09:55.531305 1 infer_handler.cc:675] "New request handler for ModelInferHandler, 0"
I1125 14:09:55.531366 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: [0x0x1] request id: , model: ocr_ensemble, requested version: -1, actual version: 1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"
I1125 14:09:55.531496 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: [0x0x2] request id: , model: img_prep, requested version: -1, actual version: 1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"
I1125 14:09:55.531980 1 python_be.cc:1310] "model img_prep, instance img_prep_0_0, executing 1 requests"
I1125 14:09:55.532786 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: [0x0x3] request id: , model: text_det, requested version: -1, actual version: 1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"
I1125 14:09:55.532848 1 python_be.cc:2369] "TRITONBACKEND_ModelInstanceExecute: model instance name img_prep_0_0 released 1 requests"
I1125 14:09:55.532940 1 python_be.cc:1310] "model text_det, instance text_det_0_0, executing 1 requests"
I1125 14:09:55.534074 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: [0x0x4] request id: , model: det_backbone, requested version: -1, actual version: 1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"
I1125 14:09:55.536273 1 python_be.cc:1310] "model det_backbone, instance det_backbone_0_0, executing 1 requests"
I1125 14:09:56.065047 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: [0x0x5] request id: , model: text_det, requested version: -1, actual version: 1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"
I1125 14:09:57.000000 1 http_server.cc:4599] "HTTP request: 2 /v2/models/text_det/infer"
I1125 14:09:57.000100 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: [0x0x6] request id: , model: text_det, requested version: -1, actual version: 1, flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"
"""


def test_clients_steps_and_calls() -> None:
    records = parse_bytes(LOG, year=2026)
    found = origins(records)
    by_model = [
        (r.model, found[(r.header.at_ns, r.header.offset)])
        for r in records
        if type(r).__name__ == "RequestPrepared"
    ]
    assert by_model == [
        ("ocr_ensemble", CLIENT),  # after the gRPC handler's START
        ("img_prep", STEP),  # the ensemble's first step, right after it
        ("text_det", STEP),  # 62 µs before img_prep's release
        # text_det's BLS call, but 1.2 ms after img_prep's release: it could be a step, and
        # only a sure call is used (waits.py), so a busy log never invents one
        ("det_backbone", STEP),
        ("text_det", CALL),  # det_backbone calling back: only a fault takes this path
        ("text_det", CLIENT),  # an HTTP client naming the model
    ]


def _grpc(at: float) -> list[str]:
    s = f"{at:09.6f}"
    return [
        f'I1125 14:10:{s} 1 infer_handler.cc:723] "Process for ModelInferHandler, rpc_ok=1, 0 step START"',
        f'I1125 14:10:{s} 1 infer_handler.cc:675] "New request handler for ModelInferHandler, 0"',
    ]


def _prepared(at: float, model: str) -> str:
    return (
        f'I1125 14:10:{at:09.6f} 1 infer_request.cc:905] "[request id: <id_unknown>] prepared: '
        f"[0x0x1] request id: , model: {model}, requested version: -1, actual version: 1, "
        'flags: 0x0, correlation id: 0, batch size: 1, priority: 0, timeout (us): 0"'
    )


def test_a_clients_line_is_kept_from_every_child_admitted_before_its_request() -> None:
    """Eight gRPC clients of ``router`` at once (tests/detectors/test_outage_without_ids.py,
    CI 2026-11-27): a frontend line, then three BLS calls of the routers already running
    (preprocess, detector, classifier), then the client's own router request. preprocess
    took such a line before, so the second pass keeps the lines from it; the line it gave back
    must go to the router request, not to detector, which had never taken one."""
    rows: list[str] = []
    for i in range(30):  # a router request after its line, then its three calls
        t = 0.1 + i * 0.09
        rows += _grpc(t)
        rows += [_prepared(t + 0.00005, "router")]
        rows += [
            _prepared(t + 0.001 + k * 0.001, m)
            for k, m in enumerate(("preprocess", "detector", "classifier"))
        ]
    rows += [*_grpc(3.0), _prepared(3.00005, "preprocess")]  # a call took a client's line
    rows += [_prepared(3.00007, "router")]  # ...whose router request follows
    rows += _grpc(4.0)
    rows += [_prepared(4.00006, m) for m in ("preprocess",)]
    rows += [_prepared(4.00010, "detector"), _prepared(4.00014, "classifier")]
    rows += [_prepared(4.00029, "router")]
    records = parse_bytes(("\n".join(rows) + "\n").encode(), year=2026)
    found = origins(records)
    last = [
        (r.model, found[(r.header.at_ns, r.header.offset)])
        for r in records
        if type(r).__name__ == "RequestPrepared" and r.header.at_ns % 60_000_000_000 >= 4 * 10**9
    ]
    assert last == [
        ("preprocess", CALL),
        ("detector", CALL),
        ("classifier", CALL),
        ("router", CLIENT),
    ]


def _near_one_release_at_a_time(
    prepared: list[ev.RequestPrepared], ensembles: set[str], released: list[tuple[int, str]]
) -> dict[str, set[str]]:
    """``_released_near`` by reading every release against every line: its reference."""
    near: dict[str, set[str]] = {}
    for r in prepared:
        if r.model not in ensembles:
            at = r.header.at_ns
            near.setdefault(r.model, set()).update(
                m for t, m in released if abs(t - at) <= origins_module._STEP_NS
            )
    return near


MODELS = ("ens", "a", "b", "c", "")
_CLUSTER_NS = 3_000_000
"""Lines crowd at instants this far apart: more than ``_STEP_NS``, so one crowd's models are
not near another's lines."""


@st.composite
def _crowded(draw: st.DrawFn, models: tuple[str, ...]) -> tuple[int, str]:
    """A time in one of four crowds, each crowd's lines of its own model, and one in ten of
    the next model's: so that a crowd of releases holds some models and not others."""
    crowd = draw(st.integers(0, 3))
    at = crowd * _CLUSTER_NS + draw(st.integers(0, 60))
    model = models[(crowd + (draw(st.integers(0, 9)) == 9)) % len(models)]
    return at, model


@settings(deadline=None)
@given(
    st.lists(_crowded(MODELS[:4]), max_size=60),
    st.lists(_crowded(MODELS), min_size=40, max_size=120),  # crowds of more than 16
)
@example(  # b's crowd of releases holds b's alone, a's crowd a's alone
    admitted=[(5, "ens"), (34, "a"), (2 * _CLUSTER_NS + 10, "b")],
    releases=[(i, "a") for i in range(17)] + [(2 * _CLUSTER_NS + i, "b") for i in range(17)],
)
def test_a_crowd_of_releases_reads_as_one_by_one(
    admitted: list[tuple[int, str]], releases: list[tuple[int, str]]
) -> None:
    """Whether few releases are near a line (read one by one) or a crowd (asked per model),
    the models released near each model's lines are those of the one-by-one reading."""
    header = ev.LogRecord
    prepared = [
        ev.RequestPrepared(header(at, ev.LogLevel.INFO, "x.cc", 1, i), "", model, 1, 1, 0)
        for i, (at, model) in enumerate(sorted(admitted))
    ]
    ensembles = {"ens"}  # a model without instances; "a", "b" and "c" have theirs
    released = sorted(releases)
    assert origins_module._released_near(prepared, ensembles, released) == (
        _near_one_release_at_a_time(prepared, ensembles, released)
    )
