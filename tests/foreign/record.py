"""Record the foreign pipelines' scenarios on a real lab Triton, as an unseen user would.

    python -m tests.foreign.record OUT_DIR [scenario ...]

Each scenario starts Triton (the lab of ``observability.lab``) on one of this folder's model
repositories (``repos/ocr``, ``repos/llm``, ``repos/recsys``, ``repos/asr``,
``repos/vision``, ``repos/stateful``, ``repos/chain``, ``repos/rag``, ``repos/fraud``,
``repos/noisy``, ``repos/doc``, ``repos/tts``, ``repos/emb``, ``repos/vid``, ``repos/kws``,
``repos/sum``, ``repos/geo``, ``repos/med``, ``repos/warm``, ``repos/img``,
``repos/xl``, ``repos/gen``, ``repos/ops``, ``repos/bg``, ``repos/cx``, ``repos/zoo``,
``repos/ex``, ``repos/hx``, ``repos/sw``, ``repos/gs``, ``repos/day``, ``repos/lz``,
``repos/rl``, ``repos/dq``:
not the demo's names, shapes or id conventions; a scenario that swaps a config mid-run
serves a copy), runs a healthy load without request ids (or, where a scenario says so, with
ids on every other request) for the whole window, injects its fault while the product's own
``capture`` records, and leaves in ``OUT_DIR/<scenario>/``.
The ``stateful`` clients speak HTTP and send sequences (``sequence_id``, start and end flags)
to one pinned version of a model served in two; the ``vid`` clients speak HTTP too; the
``med`` clients speak HTTP with FP16 scans in batches of 1 to 4 (``tests.foreign.medload``)
and call one of two served versions of a model directly; every other family's clients speak
gRPC. The ``xl`` scenarios run Triton in OpenTelemetry trace mode (``Scenario.trace_mode``):
no trace file, the spans Triton posts over OTLP/HTTP land in the bundle's ``otlp/``. The
``gen`` clients (``tests.foreign.genload``) stream tokens from a TensorRT-LLM-style decoupled
ensemble and BLS model, over gRPC streams or, where a scenario says so
(``Scenario.streams``), HTTP ``generate_stream``. The ``ops`` scenarios run 75 to 90 s
windows with more than one fault and a changing load (clients joining and leaving as
``repeat_s`` injections); their clients alternate a BLS router and an ensemble. The ``bg``
clients open one gRPC stream per request to two decoupled models that answer from
background threads after ``execute`` returned (``bg_stream``, ``bg_caption``, in turn). The
``cx`` clients (``tests.foreign.cxload``, ``Scenario.cx``) set client-side deadlines (gRPC
``client_timeout``, HTTP ``network_timeout``) that a tail of slow requests outlives, and may
retry. The ``zoo`` clients pick one of 22 models by a skewed weight (a few hot models get
most requests) and send the rare ones on a fixed schedule (``_ZOO_RARE``). The ``ex``
models are python_backend's own examples (bls, bls_decoupled, decoupled, add_sub) copied as
users copy them; their clients (``tests.foreign.exload``) go round the example clients'
requests, gRPC streams for the decoupled ones. The ``hx``
clients (``tests.foreign.hxload``, ``Scenario.hx``) are processes of their own, each keeping
several HTTP ``async_infer()`` calls in flight (``InferenceServerClient(concurrency=N)``),
no request ids. The ``sw`` load (``tests.foreign.swload``, ``Scenario.sw``) is perf_analyzer's
two modes in a process of its own: closed-loop gRPC slots stepping their number (a
concurrency sweep) or an open loop at a fixed request rate, no request ids.
The ``gs`` clients (``tests.foreign.gsload``) each hold one long-lived gRPC
stream for the whole window and keep several requests outstanding on it, to a non-decoupled
BLS model and a decoupled one in turn, no request ids (a message number travels as a
tensor). The ``day`` clients (``tests.foreign.dayload``) are a production day's noise
around a healthy pipeline: gRPC and HTTP clients with a 1 s deadline, invalid requests
Triton refuses, documents the model answers with an error, a slow tail that times out,
cancellations, a traffic shape with a ramp and a burst, readiness and metadata probes every
second, and an operator loading, unloading and reloading models (model control explicit,
``Scenario.load_models``). The ``lz`` load (``tests.foreign.lzload``, ``Scenario.lz``) is
closed-loop gRPC slots without request ids in a process of its own, whose plan changes the
load once (slots leave, a heavier input mix, or slots sending a request that never returns),
for ``--log-verbose 0`` windows where only /metrics and /v2/models/stats speak. The ``rl``
scenarios run Triton's rate limiter (``--rate-limit=execution_count``, the resource pool's size
in ``Scenario.server_args``) over a BLS router and its child, both drawing on one global
resource; their clients are id-less gRPC ones. The ``dq``
clients (``tests.foreign.dqload``) are id-less gRPC callers of a pipeline whose batched
child waits up to 200 ms to fill a batch of 8 (``max_queue_delay_microseconds``,
``preferred_batch_size``, a queue policy; a config chosen with ``--model-config-name`` may add
priority levels or a short queue): two call the BLS gateway, one sends the child batches of
its own; injected clients may send at a priority. Each scenario
leaves:

* ``bundle.tar.gz``: the capture (``meta.json``'s source paths cut to file names);
* ``expected.json``: ``{"findings": [[kind, model], ...], "healthy": bool}``;
* ``PROVENANCE.md``: how it was made, what was injected, what the clients saw;
* ``analysis-at-recording.md``: what ``analyze`` said about it when it was recorded.

The capture scrapes /metrics and /v2/models/stats every second unless a scenario says
otherwise (``Scenario.interval_s``: the ``cap_*`` scenarios scrape every 5 or 15 s), and starts
when the clients do unless the scenario gives the server a lead under load first
(``Scenario.lead_s``: a long-running server, or a fault that began before the capture).

Without scenario names every scenario is recorded (about a minute each, one Triton at a
time). OUT_DIR/<scenario> must not exist. The checked-in copies live in
``tests/fixtures/foreign``. This is a tool, not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from tests.foreign import (
    cxload,
    dayload,
    dqload,
    exload,
    genload,
    gsload,
    hxload,
    lzload,
    medload,
    seqload,
    swload,
)

HERE = Path(__file__).resolve().parent
REPOS = HERE / "repos"
ARCHIVE = "bundle.tar.gz"
MAX_REQUESTS_PER_WORKER = 400
"""Every load loop is bounded in count as well as in time."""


@dataclass(frozen=True)
class Injection:
    """``count`` concurrent faulty requests sent ``at_s`` after the capture started."""

    at_s: float
    count: int
    params: Mapping[str, str | int | float]
    timeout_s: float
    what: str
    action: str = "request"
    """``request`` (send ``params``), ``load`` (load the model ``target`` through the
    repository API, as an operator trying a new model does: needs ``model_control="explicit"``
    and ``target`` left out of ``Scenario.load_models``), ``kill_stub`` (SIGKILL the python
    stub of the model instance ``target``, found by its command line), ``reload`` (load the
    model ``target`` again through the repository API, ``params`` added to its config's
    parameters as string values: needs ``model_control="explicit"``), ``unload`` (unload
    the model ``target`` through the repository API, as an operator retiring it does: needs
    ``model_control="explicit"``) or ``swap_config``
    (write ``source`` over ``target``'s config.pbtxt in the served copy of the repository,
    then load ``target`` again, as an operator deploying an edited config does: needs
    ``model_control="explicit"``), ``restart_server`` (SIGKILL the tritonserver process,
    wait ``params["down_s"]`` seconds, then start it again on the same ports, its log going
    on in the same file, while the capture keeps running) or ``kill_server`` (SIGKILL the
    tritonserver process and leave it down)."""
    target: str = ""
    repeat_s: float = 0.0
    """``request`` only: each of the ``count`` clients sends again as soon as it is answered,
    for this long (bounded by ``MAX_REQUESTS_PER_WORKER``): a surge of clients."""
    request_ids: bool = False
    """``request`` only: these clients set a request id (``fault-<client>-<n>``).
    ``stateful`` only: each client sends one sequence; ``params`` may say how (see
    ``_SEQ_KEYS``): its length, its version and which step carries the other parameters."""
    source: str = ""
    """``swap_config`` only: the new config.pbtxt, a path relative to this folder (kept
    outside ``repos/`` so that no served repository holds it)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    repo: str
    """``ocr``, ``llm``, ``recsys``, ``asr``, ``vision``, ``stateful``, ``chain``, ``rag``,
    ``fraud``, ``noisy``, ``doc``, ``tts``, ``emb``, ``vid``, ``kws``, ``sum``, ``geo``,
    ``med``, ``warm``, ``img``, ``xl``, ``gen``, ``ops``, ``bg``, ``cx``, ``zoo``, ``ex``,
    ``hx``, ``sw``, ``gs``, ``day``, ``lz``, ``rl`` or ``dq``."""
    summary: str
    expected: tuple[tuple[str, str], ...]
    log_verbose: int = 1
    log_format: str = "default"
    """``--log-format``: ``default`` or ``ISO8601`` (second resolution only)."""
    env: dict[str, str] = field(default_factory=dict)
    injections: tuple[Injection, ...] = ()
    duration_s: float = 30.0
    trace: bool = True
    trace_mode: str = "triton"
    """``triton``: trace files (``--trace-config=triton,file=...``) when ``trace`` is on.
    ``opentelemetry``: no trace file; Triton exports OTLP/HTTP spans
    (``--trace-config=mode=opentelemetry``, ``rate=1``, ``level=TIMESTAMPS``, a 200 ms
    batch span processor delay) to the capture's OTLP receiver on a free loopback port chosen
    before Triton starts (the bundle's ``otlp/``); spans posted before the capture starts
    are lost."""
    model_control: str = "none"
    load_models: tuple[str, ...] = ("*",)
    """``model_control="explicit"`` only: the models loaded at start (``--load-model``)."""
    log_from_start: bool = True
    """False: the capture copies the log from its own start only (it began after the server
    was up: the load lines are not in the bundle)."""
    warmup: int = 0
    """Requests sent, one at a time, after the server is up and before the capture starts."""
    load_delay_s: float = 0.0
    """The background clients start this long after the capture."""
    note: str = ""
    """Said at the end of PROVENANCE.md: why the expectation is what it is."""
    ids: str = "none"
    """``none``: the background clients send no request id; ``mixed``: they set one
    (``c<client>-<n>``) on every other request."""
    pins: tuple[str, str] = ("1", "2")
    """``stateful`` only: the model versions the two background clients pin."""
    audio: str = "fixed"
    """``asr`` only. ``fixed``: the background clients send 1600 frames; ``growing``: each
    re-sends its whole utterance so far (800, 1600, ... 6400 frames, then a new utterance),
    as a progressive-transcription client does."""
    streams: str = "grpc"
    """``gen`` only: how the background clients stream, ``grpc`` (``start_stream``) or
    ``http`` (``POST /v2/models/<model>/generate_stream``, server-sent events)."""
    clients: int = 2
    """How many background clients send at once."""
    server_args: tuple[str, ...] = ()
    """More tritonserver flags (``LabConfig.extra_args``), e.g. ``--rate-limit=...``;
    ``{caches}`` stands for the wheel's ``tritonserver/caches`` folder (the response cache's
    ``libtritoncache_local.so``, which Triton looks for in /opt/tritonserver/caches)."""
    interval_s: float = 1.0
    """The capture's scrape interval (``CaptureConfig.interval_s``): /metrics and
    /v2/models/stats are read every this many seconds (Prometheus scrapes every 15 s by
    default). The default, 1 s, is what every scenario before round 26 used."""
    lead_s: float = 0.0
    """How long the server runs under the background load before the capture starts (a
    long-running server, or a capture taken after the fault began). The clients start
    ``lead_s`` before the capture; an injection's ``at_s`` still counts from the capture's
    start and may be negative, down to ``-lead_s`` (a fault that began before the capture).
    Each client's request bound grows with the lead (``request_cap``)."""
    cx: str = ""
    """``cx`` only: the clients' plan, a key of ``cxload.PLANS`` (their deadline, their tail
    of slow quotes, their retries, which of them speak HTTP)."""
    hx: str = ""
    """``hx`` only: the client processes' plan, a key of ``hxload.PLANS`` (how many requests
    each keeps in flight, over the window, and its client timeout)."""
    sw: str = ""
    """``sw`` only: the load process's plan, a key of ``swload.PLANS`` (perf_analyzer's
    concurrency sweep or request rate over the window)."""
    lz: str = ""
    """``lz`` only: the load process's plan, a key of ``lzload.PLANS`` (closed-loop slots and
    the one change to them)."""
    gs: str = "split"
    """``gs`` only: the clients' plan, a key of ``gsload.PLANS``: ``mixed`` (one stream per
    client carrying both models' requests) or ``split`` (one stream per model)."""

    @property
    def healthy(self) -> bool:
        return not self.expected

    @property
    def request_cap(self) -> int:
        """Each background client's request bound: ``MAX_REQUESTS_PER_WORKER`` for a capture
        window, in proportion for the lead before it."""
        return math.ceil(
            MAX_REQUESTS_PER_WORKER * (self.duration_s + self.lead_s) / self.duration_s
        )

    @property
    def edits_repo(self) -> bool:
        """Whether an injection writes into the served repository (which must be a copy)."""
        return any(i.action == "swap_config" for i in self.injections)


_HANG = {"ocr_fault": "backbone_hang", "hang_s": "300"}

_UNSEEN_NOTE = (
    "'healthy' in expected.json means: no finding is expected, because the load that "
    "started the cold start is outside the window. What the product could still know: "
    "every /v2/models/stats snapshot before the first execution has rec_scorer at "
    "execution_count 0 and last_inference 0 (the statistics start at zero when a model is "
    "loaded), so the 4 s execution that follows is provably its first since a load."
)
_QUIET_HANG_NOTE = (
    "'healthy' in expected.json means: no finding is expected, not that nothing is wrong. "
    "Without the verbose log the three hung requests leave no trace in the window: /metrics "
    "and /v2/models/stats count completions only, and the pending gauge stays 0 because the "
    "fourth instance of each model absorbs the two clients' load. Holding every instance "
    "(ocr_stall_quiet) is what model_stalled can see."
)

_RECSYS = (
    Scenario(
        "rec_healthy",
        "recsys",
        "the recommendation pipeline under a healthy id-less load, verbose log: the twin of "
        "every rec_* fault",
        (),
    ),
    Scenario(
        "rec_healthy_quiet",
        "recsys",
        "the recommendation pipeline under a healthy id-less load, without --log-verbose: the "
        "twin of rec_quiet_hang",
        (),
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "rec_thread_pool_exhaustion",
        "recsys",
        "one request makes rec_orchestrator fan out 48 concurrent async_exec calls to "
        "rec_scorer (60 ms per child batch); asyncio's default executor of that stub has "
        "min(32, cpu + 4) = 6 threads on this 2-core host, so the calls run 6 at a time",
        (("thread_pool_exhaustion", "rec_orchestrator"),),
        injections=(
            Injection(5, 1, {"rec_fault": "fanout", "score_ms": 60}, 60, "48 async_exec at once"),
        ),
    ),
    Scenario(
        "rec_thread_pool_exhaustion_iso",
        "recsys",
        "`--log-format ISO8601` (second resolution): one request makes rec_orchestrator fan "
        "out 48 concurrent async_exec calls to rec_scorer (60 ms per child batch); asyncio's "
        "default executor of that stub has min(32, cpu + 4) = 6 threads on this 2-core host, "
        "so the calls run 6 at a time",
        (("thread_pool_exhaustion", "rec_orchestrator"),),
        log_format="ISO8601",
        injections=(
            Injection(5, 1, {"rec_fault": "fanout", "score_ms": 60}, 60, "48 async_exec at once"),
        ),
    ),
    Scenario(
        "rec_instance_saturation",
        "recsys",
        "rec_scorer (one instance) becomes slow, 0.4 s per batch for 20 s, while 4 more "
        "clients join the 2: every rec_orchestrator instance waits on it and its queue grows",
        (("instance_saturation", "rec_scorer"),),
        injections=(
            Injection(
                5,
                1,
                {"rec_fault": "slow_scorer", "slow_for_s": 20, "slow_batch_s": 0.4},
                60,
                "rec_scorer slow (0.4 s per batch) from now for 20 s",
            ),
            Injection(5, 4, {}, 15, "4 more clients, each resending for 20 s", repeat_s=20),
        ),
    ),
    Scenario(
        "rec_instance_saturation_iso",
        "recsys",
        "`--log-format ISO8601` (second resolution): rec_scorer (one instance) becomes slow, "
        "0.4 s per batch for 20 s, while 4 more clients join the 2: every rec_orchestrator "
        "instance waits on it and its queue grows",
        (("instance_saturation", "rec_scorer"),),
        log_format="ISO8601",
        injections=(
            Injection(
                5,
                1,
                {"rec_fault": "slow_scorer", "slow_for_s": 20, "slow_batch_s": 0.4},
                60,
                "rec_scorer slow (0.4 s per batch) from now for 20 s",
            ),
            Injection(5, 4, {}, 15, "4 more clients, each resending for 20 s", repeat_s=20),
        ),
    ),
    Scenario(
        "rec_stub_killed",
        "recsys",
        "the python stub of rec_scorer_0_0 (the scorer's only instance) is killed with "
        "SIGKILL mid-run: every scoring call fails from then on",
        (("stub_unhealthy", "rec_scorer"),),
        injections=(
            Injection(
                5, 1, {}, 0, "kill -9 the stub of rec_scorer_0_0", "kill_stub", "rec_scorer_0_0"
            ),
        ),
    ),
    Scenario(
        "rec_task_error",
        "recsys",
        "one request makes rec_orchestrator fire an asyncio task that raises and is never "
        "awaited ('Task exception was never retrieved'); the client gets an error",
        (("callback_error", "rec_orchestrator"),),
        injections=(
            Injection(5, 1, {"rec_fault": "task_error"}, 60, "fire-and-forget task raises"),
        ),
    ),
    Scenario(
        "rec_cold_start_midrun",
        "recsys",
        "SCORER_COLD_START_S=4, model control explicit: the server is up and warmed (2 "
        "requests) before the capture starts, so the bundle's log lacks the first load; 5 s "
        "in, rec_scorer is reloaded through the repository API and its first execute after "
        "the reload takes 4 s",
        (("cold_start", "rec_scorer"),),
        env={"SCORER_COLD_START_S": "4"},
        model_control="explicit",
        log_from_start=False,
        warmup=2,
        injections=(
            Injection(5, 1, {}, 60, "reload rec_scorer (repository API)", "reload", "rec_scorer"),
        ),
    ),
    Scenario(
        "rec_cold_start_unseen",
        "recsys",
        "SCORER_COLD_START_S=4: the capture starts after the server is up (its log lacks the "
        "load), no request before it; the clients start 5 s in and rec_scorer's first "
        "execute since its load (outside the window) takes 4 s. Nothing is reloaded inside "
        "the window: nothing of warning or above is expected (PROVENANCE.md says what the "
        "product can know)",
        (),
        env={"SCORER_COLD_START_S": "4"},
        log_from_start=False,
        load_delay_s=5,
        note=_UNSEEN_NOTE,
    ),
    Scenario(
        "rec_quiet_hang",
        "recsys",
        "without --log-verbose: three concurrent requests whose rec_features lookup never "
        "returns: three of the four rec_orchestrator instances wait in async_exec forever "
        "(and three of the four rec_features instances are held); the fourth of each keeps "
        "serving",
        (),
        log_verbose=0,
        trace=False,
        note=_QUIET_HANG_NOTE,
        injections=(
            Injection(
                5,
                3,
                {"rec_fault": "hang", "features_hang_s": 300},
                60,
                "rec_features sleeps 300 s in execute",
            ),
        ),
    ),
)

_ENC_HANG: dict[str, str | int | float] = {"asr_fault": "enc_hang", "enc_hang_s": 300}

_ASR = (
    Scenario(
        "asr_healthy",
        "asr",
        "the speech pipeline (sync-exec BLS router with its own thread pool, a dynamically "
        "batched encoder in two instance groups, a decoupled beam decoder read through "
        "exec(decoupled=True)) under a healthy id-less load, verbose log: the twin of every "
        "asr_* fault",
        (),
    ),
    Scenario(
        "asr_healthy_quiet",
        "asr",
        "the speech pipeline under a healthy id-less load, without --log-verbose: the twin "
        "of asr_encoder_hang_quiet",
        (),
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "asr_healthy_mixed_ids",
        "asr",
        "the speech pipeline under a healthy load whose clients set a request id on every "
        "other request and none on the others (BLS children carry none), verbose log",
        (),
        ids="mixed",
    ),
    Scenario(
        "asr_healthy_growing",
        "asr",
        "the speech pipeline under a healthy id-less load of progressive-transcription "
        "clients: each re-sends its whole utterance so far (1 to 8 chunks), so asr_router's "
        "TOKENS [3k] and the number of encoder calls grow by one chunk per request and start "
        "again at every new utterance, verbose log",
        (),
        audio="growing",
    ),
    Scenario(
        "asr_encoder_hang",
        "asr",
        "one request whose first chunk's asr_encoder batch never returns (a stuck forward "
        "pass): the router's synchronous exec() blocks in a thread of the router's own pool "
        "and its execute waits on that future forever; the other router instance keeps "
        "serving",
        (("hung_request", "asr_router"),),
        injections=(Injection(5, 1, _ENC_HANG, 60, "asr_encoder sleeps 300 s in execute"),),
    ),
    Scenario(
        "asr_encoder_hang_ids",
        "asr",
        "asr_encoder_hang with mixed request ids: the background clients set an id on every "
        "other request, the hung request carries one (`fault-0-0`), its BLS children none",
        (("hung_request", "asr_router"),),
        ids="mixed",
        injections=(
            Injection(5, 1, _ENC_HANG, 60, "asr_encoder sleeps 300 s in execute", request_ids=True),
        ),
    ),
    Scenario(
        "asr_encoder_hang_client_deadline",
        "asr",
        "asr_encoder_hang whose client gives up after 2 s (a gRPC deadline): Triton logs the "
        "cancellation, but the python backend keeps the request executing, its router "
        "instance blocked in exec() as before",
        (("hung_request", "asr_router"),),
        injections=(Injection(5, 1, _ENC_HANG, 2, "asr_encoder sleeps 300 s in execute"),),
    ),
    Scenario(
        "asr_encoder_hang_bounded",
        "asr",
        "ROUTER_BLS_TIMEOUT_S=1: the router bounds its wait on the encoder futures (1 s, then "
        "an error answer) while the pool thread stays in exec(). Three requests, 2 s apart, "
        "whose first chunk's encoder batch sleeps 300 s: the three asr_encoder instances are "
        "held one by one, every later encoder call queues, the router's 4 pool threads fill "
        "with calls that never return, and from then on every request is answered an error "
        "after 1 s (error answers count as successes on /metrics)",
        (("hung_request", "asr_encoder"),),
        env={"ROUTER_BLS_TIMEOUT_S": "1"},
        injections=tuple(
            Injection(at, 1, _ENC_HANG, 60, "asr_encoder sleeps 300 s in execute")
            for at in (5, 7, 9)
        ),
    ),
    Scenario(
        "asr_encoder_hang_quiet",
        "asr",
        "without --log-verbose: two concurrent requests whose asr_encoder batch never returns "
        "hold both asr_router instances (each blocked in a sync exec() on its own pool); the "
        "healthy load queues at asr_router",
        (("model_stalled", "asr_router"),),
        log_verbose=0,
        trace=False,
        injections=(Injection(5, 2, _ENC_HANG, 60, "asr_encoder sleeps 300 s in execute"),),
    ),
    Scenario(
        "asr_beam_stall",
        "asr",
        "one request whose decoupled asr_beam sends 2 of its 6 tokens and returns without "
        "the final flag (the sender kept in a session table): the router's `for response in "
        "exec(decoupled=True)` never ends and holds its instance",
        (("hung_request", "asr_router"),),
        injections=(
            Injection(5, 1, {"asr_fault": "beam_stall"}, 60, "asr_beam stops after 2 tokens"),
        ),
    ),
    Scenario(
        "asr_beam_stall_iso",
        "asr",
        "`--log-format ISO8601` (second resolution): one request whose decoupled asr_beam "
        "sends 2 of its 6 tokens and returns without the final flag (the sender kept in a "
        "session table): the router's `for response in exec(decoupled=True)` never ends and "
        "holds its instance",
        (("hung_request", "asr_router"),),
        log_format="ISO8601",
        injections=(
            Injection(5, 1, {"asr_fault": "beam_stall"}, 60, "asr_beam stops after 2 tokens"),
        ),
    ),
    Scenario(
        "asr_beam_hang",
        "asr",
        "one request whose decoupled asr_beam (1 instance) sleeps 300 s in execute before its "
        "first token: every later beam call queues behind it, so both asr_router instances "
        "wait in `for response in exec(decoupled=True)` and the healthy load queues at the "
        "router",
        (("hung_request", "asr_router"),),
        injections=(
            Injection(5, 1, {"asr_fault": "beam_hang"}, 60, "asr_beam sleeps 300 s in execute"),
        ),
        note=(
            "One hang, one alert: `hung_request` is reported for the stuck client request's "
            "model (asr_router) and names the asr_beam batch it waits on, as in "
            "ocr_backbone_hang; a stuck child is reported on its own only when its parent is "
            "not itself hung (asr_encoder_hang_bounded)."
        ),
    ),
    Scenario(
        "asr_router_pool_exhaustion",
        "asr",
        "one request (a long recording) makes asr_router submit 48 synchronous exec() calls "
        "to asr_encoder (60 ms per encoder batch) to the 4-thread pool the model created "
        "itself: they run 4 at a time, in 12 waves",
        (("thread_pool_exhaustion", "asr_router"),),
        injections=(
            Injection(
                5, 1, {"asr_fault": "long", "enc_ms": 60}, 60, "48 sync exec() on a 4-thread pool"
            ),
        ),
    ),
    Scenario(
        "asr_beam_callback_deadlock",
        "asr",
        "two concurrent requests whose decoupled asr_beam (1 instance) calls asr_router back "
        "through a sync exec() (asr_router -> asr_beam -> asr_router) while both router "
        "instances wait on beam streams: the call back never starts, the beam instance is "
        "held, and the healthy load queues behind them",
        (("bls_deadlock", "asr_router"),),
        injections=(
            Injection(5, 2, {"asr_fault": "beam_callback"}, 60, "asr_beam exec()s asr_router back"),
        ),
    ),
    Scenario(
        "asr_beam_callback_deadlock_ids",
        "asr",
        "asr_beam_callback_deadlock whose two faulty requests carry request ids (`fault-0-0`, "
        "`fault-1-0`) while the background clients send none; the BLS children carry none",
        (("bls_deadlock", "asr_router"),),
        injections=(
            Injection(
                5,
                2,
                {"asr_fault": "beam_callback"},
                60,
                "asr_beam exec()s asr_router back",
                request_ids=True,
            ),
        ),
    ),
    Scenario(
        "asr_cancelled_keep_running",
        "asr",
        "3 more clients (with request ids; the background clients send none) send long "
        "recordings that take asr_router 6 s each, with a 1.5 s gRPC deadline, and resend "
        "as soon as they time out, for 15 s: Triton logs the cancellations but the python "
        "backend runs every cancelled request to its end, so both router instances stay busy "
        "with work nobody waits for while the queue grows",
        (("instance_saturation", "asr_router"),),
        injections=(
            Injection(
                5,
                3,
                {"asr_fault": "slow", "router_slow_s": 6},
                1.5,
                "6 s requests, client deadline 1.5 s, resent for 15 s",
                repeat_s=15,
                request_ids=True,
            ),
        ),
    ),
    Scenario(
        "asr_state_doubling",
        "asr",
        "one request switches on a bug in asr_encoder: the instance(s) that encode its two "
        "chunks concatenate their streaming context with itself on every request instead of "
        "resetting it, so STATE [1, T, 4] doubles per request (dynamic batching) up to "
        "8192 rows",
        (("shape_growth", "asr_encoder"),),
        injections=(
            Injection(5, 1, {"asr_fault": "double"}, 60, "encoder context doubles from now"),
        ),
    ),
)

_MISWIRED_NOTE = (
    "The miswired config is the shipped one with a single edit: vis_embed's input_map names "
    "'RESIZED', vis_resize's model-side output, instead of the ensemble tensor 'thumb' that "
    "vis_resize's output_map writes (the usual mistake when fanning one tensor out to two "
    "steps). The correct fan-out (both consumers reading 'thumb') is what the healthy twin "
    "serves: it loads and works on 2.51 and must not be reported."
)
_EMBED_HANG: dict[str, str | int | float] = {"vis_fault": "embed_hang", "hang_s": 300}

_VISION = (
    Scenario(
        "vis_healthy",
        "vision",
        "the vision pipeline (a pure batched ensemble: vis_resize's one output, the ensemble "
        "tensor 'thumb', fans out to vis_classify and to vis_embed, a dynamically batched "
        "python model with 2 instances; vis_merge joins them) under a healthy id-less load, "
        "verbose log: the twin of every vis_* fault",
        (),
    ),
    Scenario(
        "vis_ensemble_miswired",
        "vision",
        "model control explicit: 5 s in, an edited vis_ensemble config whose vis_embed step "
        "reads vis_resize's model-side output name instead of the ensemble tensor is written "
        "into the served repository and the ensemble is loaded again; Triton refuses it "
        "('is not written ... is not connected')",
        (("ensemble_fanout", "vis_ensemble"),),
        model_control="explicit",
        injections=(
            Injection(
                5,
                1,
                {},
                60,
                "deploy a miswired vis_ensemble config and load it",
                "swap_config",
                "vis_ensemble",
                source="variants/vision/vis_ensemble.miswired.pbtxt",
            ),
        ),
        note=_MISWIRED_NOTE,
    ),
    Scenario(
        "vis_ensemble_miswired_iso",
        "vision",
        "`--log-format ISO8601` (second resolution): model control explicit: 5 s in, an "
        "edited vis_ensemble config whose vis_embed step reads vis_resize's model-side output "
        "name instead of the ensemble tensor is written into the served repository and the "
        "ensemble is loaded again; Triton refuses it ('is not written ... is not connected')",
        (("ensemble_fanout", "vis_ensemble"),),
        log_format="ISO8601",
        model_control="explicit",
        injections=(
            Injection(
                5,
                1,
                {},
                60,
                "deploy a miswired vis_ensemble config and load it",
                "swap_config",
                "vis_ensemble",
                source="variants/vision/vis_ensemble.miswired.pbtxt",
            ),
        ),
        note=_MISWIRED_NOTE,
    ),
    Scenario(
        "vis_step_hang",
        "vision",
        "one request whose vis_embed batch (a plain python step of the ensemble, no BLS) "
        "never returns (a stuck forward pass): its ensemble request never completes; the "
        "other vis_embed instance keeps serving",
        (("hung_request", "vis_embed"),),
        injections=(Injection(5, 1, _EMBED_HANG, 60, "vis_embed sleeps 300 s in execute"),),
    ),
    Scenario(
        "vis_ensemble_miswired_quiet",
        "vision",
        "vis_ensemble_miswired without --log-verbose and without trace files: the refused "
        "load's error line is all the log holds",
        (("ensemble_fanout", "vis_ensemble"),),
        log_verbose=0,
        trace=False,
        model_control="explicit",
        injections=(
            Injection(
                5,
                1,
                {},
                60,
                "deploy a miswired vis_ensemble config and load it",
                "swap_config",
                "vis_ensemble",
                source="variants/vision/vis_ensemble.miswired.pbtxt",
            ),
        ),
        note=_MISWIRED_NOTE,
    ),
    Scenario(
        "vis_step_stall_quiet",
        "vision",
        "without --log-verbose: two requests, 1 s apart (so that they are not batched "
        "together), whose vis_embed batch never returns hold both vis_embed instances; every "
        "later ensemble request queues at vis_embed and its client times out",
        (("model_stalled", "vis_embed"),),
        log_verbose=0,
        trace=False,
        injections=tuple(
            Injection(at, 1, _EMBED_HANG, 60, "vis_embed sleeps 300 s in execute") for at in (5, 6)
        ),
    ),
    Scenario(
        "vis_healthy_quiet",
        "vision",
        "the vision pipeline under a healthy id-less load, without --log-verbose: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
    ),
)

_SEQ_HANG: dict[str, str | int | float] = {
    "st_fault": "hang",
    "hang_s": 300,
    "seq_fault_step": 2,
    "seq_version": "1",
    "seq_gap_s": 0.5,
}
_SEQ_HANG_TEXT = (
    "one sequence (HTTP, version 1) whose second step's sess_tracker batch never returns (a "
    "stuck step); its third and fourth steps are sent 0.5 s apart without waiting and queue "
    "behind it in the sequence batcher, as does every background sequence bound to the same "
    "instance; version 2 and the other version-1 instance keep serving"
)

_STATEFUL = (
    Scenario(
        "st_healthy",
        "stateful",
        "the stateful pipeline (HTTP clients; sess_norm, not batched, then sess_tracker behind "
        "the sequence batcher, two versions served at once, each client pinned to one) under "
        "a healthy id-less load of 4-step sequences, verbose log (TRAIL [1, k, 6] grows "
        "k = 1..4 within each sequence and starts again at the next): the twin of every st_* "
        "fault",
        (),
    ),
    Scenario(
        "st_healthy_quiet",
        "stateful",
        "the stateful pipeline under a healthy id-less load, without --log-verbose: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "st_sequence_hang",
        "stateful",
        _SEQ_HANG_TEXT,
        (("hung_request", "sess_tracker"),),
        injections=(Injection(5, 1, _SEQ_HANG, 60, "sess_tracker step 2 sleeps 300 s"),),
    ),
    Scenario(
        "st_sequence_hang_iso",
        "stateful",
        "st_sequence_hang_one_version (both background clients pinned to version 1) with "
        f"`--log-format ISO8601` (second resolution): {_SEQ_HANG_TEXT}",
        (("hung_request", "sess_tracker"),),
        log_format="ISO8601",
        pins=("1", "1"),
        injections=(Injection(5, 1, _SEQ_HANG, 60, "sess_tracker step 2 sleeps 300 s"),),
    ),
    Scenario(
        "st_state_growth",
        "stateful",
        "STATE_LEAK=1: sess_tracker (both versions) appends every reading to one "
        "instance-wide trail that a sequence's START never resets (state keyed by the "
        "instance instead of the CORRID), so TRAIL [1, k, 6] grows by one row per request "
        "across sequences and never starts again",
        (("shape_growth", "sess_tracker"),),
        env={"STATE_LEAK": "1"},
    ),
    Scenario(
        "st_sequence_hang_one_version",
        "stateful",
        "st_sequence_hang with both background clients pinned to version 1 (version 2 is "
        "served but gets no request): the control that tells the hang from the two versions' "
        "shared instance names",
        (("hung_request", "sess_tracker"),),
        pins=("1", "1"),
        injections=(Injection(5, 1, _SEQ_HANG, 60, "sess_tracker step 2 sleeps 300 s"),),
    ),
    Scenario(
        "st_state_growth_one_version",
        "stateful",
        "st_state_growth with both background clients pinned to version 1 (version 2 is "
        "served but gets no request): the control that tells the leak from the two versions' "
        "shared instance names",
        (("shape_growth", "sess_tracker"),),
        env={"STATE_LEAK": "1"},
        pins=("1", "1"),
    ),
    Scenario(
        "st_v2_cold_start_one_version",
        "stateful",
        "st_v2_cold_start with both background clients pinned to version 2 (version 1 is "
        "served but gets no request after the warm-up): the control that tells the cold start "
        "from the two versions' shared instance names",
        (("cold_start", "sess_tracker"),),
        env={"STATE_V2_COLD_START_S": "4"},
        model_control="explicit",
        log_from_start=False,
        warmup=2,
        pins=("2", "2"),
        injections=(
            Injection(
                5, 1, {}, 60, "reload sess_tracker (repository API)", "reload", "sess_tracker"
            ),
        ),
    ),
    Scenario(
        "st_v2_cold_start",
        "stateful",
        "STATE_V2_COLD_START_S=4, model control explicit: the server is up and warmed (a "
        "2-step sequence to each version) before the capture starts, so the bundle's log "
        "lacks the first load; 5 s in, sess_tracker is loaded again through the repository "
        "API (both versions) and version 2's first execute after the load takes 4 s, while "
        "version 1 answers at once",
        (("cold_start", "sess_tracker"),),
        env={"STATE_V2_COLD_START_S": "4"},
        model_control="explicit",
        log_from_start=False,
        warmup=2,
        injections=(
            Injection(
                5, 1, {}, 60, "reload sess_tracker (repository API)", "reload", "sess_tracker"
            ),
        ),
    ),
)

_LEAF_HANG: dict[str, str | int | float] = {"ch_fault": "leaf_hang", "worker_hang_s": 300}
_LEAF_HANG_TEXT = (
    "one request whose second sub-query's first ch_worker batch never returns (a stuck "
    "forward pass): the stuck chain is ch_gateway (awaiting its 3 gathered async_exec "
    "calls) -> ch_planner (its only instance blocked in a synchronous exec()) -> ch_worker; "
    "every later sub-query queues at ch_planner, so both ch_gateway instances end up waiting"
)
_CHAIN_NOTE = (
    "One hang, one alert: `hung_request` is expected on the client's model (ch_gateway), "
    "and it must name the chain down to the batch that is stuck (ch_worker): `mentions` in "
    "expected.json."
)

_CHAIN = (
    Scenario(
        "ch_healthy",
        "chain",
        "the three-level BLS chain (ch_gateway, async execute, 2 instances, fans each query "
        "out into 3 concurrent async_exec calls to ch_planner, sync exec(), 1 instance, which "
        "calls ch_worker, dynamic batching, 2 instances, twice in turn) under a healthy "
        "id-less load, verbose log: the twin of every ch_* fault",
        (),
    ),
    Scenario(
        "ch_leaf_hang",
        "chain",
        _LEAF_HANG_TEXT,
        (("hung_request", "ch_gateway"),),
        injections=(Injection(5, 1, _LEAF_HANG, 60, "ch_worker sleeps 300 s in execute"),),
        note=_CHAIN_NOTE,
    ),
    Scenario(
        "ch_gather_error",
        "chain",
        "one request whose second sub-query ch_planner answers an error response ('plan "
        "budget exceeded'); ch_gateway's done-callback turns it into a RuntimeError, so "
        "asyncio prints 'Exception in callback ...', the gathered future is never resolved "
        "and the gateway's response is never sent (its instance waits)",
        (("callback_error", "ch_gateway"),),
        injections=(
            Injection(5, 1, {"ch_fault": "plan_error"}, 60, "ch_planner answers an error"),
        ),
    ),
    Scenario(
        "ch_self_deadlock",
        "chain",
        "one request takes ch_planner's rare re-planning path: the planner exec()s ch_planner "
        "(itself) through BLS while its only instance is busy with that very call, so the "
        "call never starts; every later sub-query queues at ch_planner and both ch_gateway "
        "instances wait",
        (("bls_deadlock", "ch_planner"),),
        injections=(Injection(5, 1, {"ch_fault": "replan"}, 60, "ch_planner exec()s itself"),),
    ),
    Scenario(
        "ch_self_deadlock_iso",
        "chain",
        "`--log-format ISO8601` (second resolution): one request takes ch_planner's rare "
        "re-planning path: the planner exec()s ch_planner (itself) through BLS while its only "
        "instance is busy with that very call, so the call never starts; every later "
        "sub-query queues at ch_planner and both ch_gateway instances wait",
        (("bls_deadlock", "ch_planner"),),
        log_format="ISO8601",
        injections=(Injection(5, 1, {"ch_fault": "replan"}, 60, "ch_planner exec()s itself"),),
    ),
    Scenario(
        "ch_leaf_hang_quiet",
        "chain",
        f"without --log-verbose and without trace files: {_LEAF_HANG_TEXT}",
        (("model_stalled", "ch_gateway"),),
        log_verbose=0,
        trace=False,
        injections=(Injection(5, 1, _LEAF_HANG, 60, "ch_worker sleeps 300 s in execute"),),
    ),
)

_RAG_EMBED_HANG: dict[str, str | int | float] = {"rag_fault": "embed_hang", "embed_hang_s": 300}
_RAG_EMBED_HANG_TEXT = (
    "one request whose rag_embed batch never returns (a stuck forward pass): its "
    "rag_orchestrator instance awaits the gathered embed call forever (the generator's "
    "stream of the same request ends normally); the other orchestrator instance and the "
    "two other embed instances keep serving"
)
_RAG_ONE_ALERT = (
    "One hang, one alert: `hung_request` is expected on the ensemble step that holds the "
    "request (rag_orchestrator, the BLS parent), and it must name the child that is stuck "
    "(`mentions` in expected.json), as in ocr_backbone_hang and asr_beam_stall."
)

_RAG_RAISES = Injection(
    5,
    1,
    {"retrieve_top_k": 8},
    60,
    "reload rag_orchestrator with retrieve_top_k (repository API)",
    "reload",
    "rag_orchestrator",
)
_RAG_RAISES_TEXT = (
    "model control explicit; 5 s in, rag_orchestrator is loaded again through the repository "
    "API with a new config parameter retrieve_top_k=8 (a deploy): its _retrieve helper "
    "slices with the parameter's string value, so from then on every request raises "
    "TypeError in execute (bad operand type for unary -: 'str'), whoever sends it; the "
    "healthy load continues and fails"
)
_RAG_RAISES_NOTE = (
    "One bug, one alert: `model_failing` is expected on the model whose execute raises "
    "(rag_orchestrator; the ensemble rag_pipeline fails with it), and it must name the "
    "exception (`mentions` in expected.json)."
)

_RAG = (
    Scenario(
        "rag_healthy",
        "rag",
        "the RAG pipeline (an ensemble: rag_tokenize, dynamic batching, then rag_orchestrator, "
        "python BLS with async execute, 2 instances, which gathers an async_exec call to "
        "rag_embed, dynamic batching, 3 instances, and an async_exec(decoupled=True) stream "
        "from rag_generate, decoupled, 1 instance) under a healthy id-less load, verbose "
        "log: the twin of every rag_* fault",
        (),
    ),
    Scenario(
        "rag_healthy_quiet",
        "rag",
        "the RAG pipeline under a healthy id-less load, without --log-verbose: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "rag_generate_stall",
        "rag",
        "one request whose decoupled rag_generate stream sends 2 of its 6 pieces and returns "
        "without the final flag (the sender kept in a session table): the orchestrator's "
        "`for` over the stream never ends, so its instance and the ensemble request "
        "wait forever; the generator itself keeps serving",
        (("hung_request", "rag_orchestrator"),),
        injections=(
            Injection(
                5, 1, {"rag_fault": "generate_stall"}, 60, "rag_generate stops after 2 pieces"
            ),
        ),
        note=_RAG_ONE_ALERT,
    ),
    Scenario(
        "rag_embed_hang",
        "rag",
        _RAG_EMBED_HANG_TEXT,
        (("hung_request", "rag_orchestrator"),),
        injections=(Injection(5, 1, _RAG_EMBED_HANG, 60, "rag_embed sleeps 300 s in execute"),),
        note=_RAG_ONE_ALERT,
    ),
    Scenario(
        "rag_prompt_growth",
        "rag",
        "one request switches on a bug in the rag_orchestrator instance that serves it: from "
        "then on it keeps the conversation context across requests and appends the new "
        "pieces and the whole kept context to it on every request, so CONTEXT_IDS [1, n] "
        "more than doubles per request (up to 8192 ids)",
        (("shape_growth", "rag_orchestrator"),),
        injections=(Injection(5, 1, {"rag_fault": "grow"}, 60, "orchestrator context grows"),),
    ),
    Scenario(
        "rag_cold_start",
        "rag",
        "EMBED_COLD_START_S=4, model control explicit: the server is up and warmed (2 "
        "requests) before the capture starts, so the bundle's log lacks the first load; 5 s "
        "in, rag_embed is loaded again through the repository API (with an edited config "
        "parameter, as a deploy does) and each new instance's first execute takes 4 s",
        (("cold_start", "rag_embed"),),
        env={"EMBED_COLD_START_S": "4"},
        model_control="explicit",
        log_from_start=False,
        warmup=2,
        injections=(
            Injection(5, 1, {}, 60, "reload rag_embed (repository API)", "reload", "rag_embed"),
        ),
    ),
    Scenario(
        "rag_embed_hang_quiet",
        "rag",
        "without --log-verbose and without trace files: two requests, 1 s apart, whose "
        "rag_embed batch never returns hold both rag_orchestrator instances (each awaiting "
        "its gathered embed call); the healthy load queues at rag_orchestrator",
        (("model_stalled", "rag_orchestrator"),),
        log_verbose=0,
        trace=False,
        injections=tuple(
            Injection(at, 1, _RAG_EMBED_HANG, 60, "rag_embed sleeps 300 s in execute")
            for at in (5, 6)
        ),
    ),
    Scenario(
        "rag_orchestrator_raises",
        "rag",
        f"{_RAG_RAISES_TEXT}, verbose log",
        (("model_failing", "rag_orchestrator"),),
        model_control="explicit",
        injections=(_RAG_RAISES,),
        note=_RAG_RAISES_NOTE,
    ),
    Scenario(
        "rag_orchestrator_raises_quiet",
        "rag",
        f"without --log-verbose and without trace files: {_RAG_RAISES_TEXT}",
        (("model_failing", "rag_orchestrator"),),
        log_verbose=0,
        trace=False,
        model_control="explicit",
        injections=(_RAG_RAISES,),
        note=_RAG_RAISES_NOTE,
    ),
)


_FR_ENRICH_HANG: dict[str, str | int | float] = {"fr_fault": "enrich_hang", "enrich_hang_s": 300}
_FR_ENRICH_HANG_TEXT = (
    "one request whose fr_enrich batch (the second step of the ensemble fr_features, which "
    "fr_gateway calls through async_exec) never returns (a stuck history lookup): its "
    "ensemble request never completes and its fr_gateway instance awaits it forever; the "
    "other gateway instance and the other fr_enrich instance keep serving"
)
_FR_ONE_ALERT = (
    "One hang, one alert: `hung_request` is expected on the model the client called "
    "(fr_gateway, the BLS parent whose request never completes), and it must name the "
    "ensemble step that is stuck, fr_enrich (`mentions` in expected.json), as in "
    "ch_leaf_hang and rag_embed_hang: the ensemble fr_features only relays the call."
)
_FR_QUIET_NOTE = (
    "Why two requests and why fr_gateway: without the verbose log and trace files only "
    "/metrics and /v2/models/stats are left, and they count completions and queued "
    "requests only. One hung request holds one fr_gateway and one fr_enrich instance while "
    "the other instance of each absorbs the load: nothing queues, no counter stops, and no "
    "detector can see it (as rec_quiet_hang). With both fr_gateway instances held, every "
    "later client request queues at fr_gateway (its pending gauge rises, its success "
    "counter stops): that is the model a user watching /metrics sees stall. fr_enrich's own "
    "hung batches are executing, not queued (its pending stays 0), and nothing reaches the "
    "ensemble any more, so neither can be named from /metrics."
)
_FR_RAISES = Injection(
    5,
    1,
    {"risk_table": "merchant_v2"},
    60,
    "reload fr_score with risk_table=merchant_v2 (repository API)",
    "reload",
    "fr_score",
)
_FR_RAISES_NOTE = (
    "One bug: `model_failing` is expected on the model whose execute raises (fr_score), "
    "naming the exception (`mentions` in expected.json: KeyError). fr_gateway fails every "
    "request too, but only because it re-raises its child's error response; a second "
    "alert on fr_gateway is acceptable only if it points at fr_score (PROVENANCE and the "
    "README say what was reported)."
)

_FRAUD = (
    Scenario(
        "fr_healthy",
        "fraud",
        "the fraud pipeline (fr_gateway, python BLS, async execute, 2 instances, "
        "max_batch_size 0, calls the ENSEMBLE fr_features, fr_parse, dynamic batching, 1 "
        "instance, then fr_enrich, 2 instances, through async_exec, then the plain scorer "
        "fr_score, dynamic batching, 2 instances, with the ensemble's SIGNALS) under a "
        "healthy id-less load, verbose log: the twin of every fr_* fault",
        (),
    ),
    Scenario(
        "fr_healthy_quiet",
        "fraud",
        "the fraud pipeline under a healthy id-less load, without --log-verbose and without "
        "trace files: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "fr_enrich_hang",
        "fraud",
        _FR_ENRICH_HANG_TEXT,
        (("hung_request", "fr_gateway"),),
        injections=(Injection(5, 1, _FR_ENRICH_HANG, 60, "fr_enrich sleeps 300 s in execute"),),
        note=_FR_ONE_ALERT,
    ),
    Scenario(
        "fr_enrich_hang_quiet",
        "fraud",
        "without --log-verbose and without trace files: two requests, 1 s apart, whose "
        "fr_enrich batches never return hold both fr_enrich instances and both fr_gateway "
        "instances (each awaiting its ensemble call); the healthy load queues at fr_gateway",
        (("model_stalled", "fr_gateway"),),
        log_verbose=0,
        trace=False,
        injections=tuple(
            Injection(at, 1, _FR_ENRICH_HANG, 60, "fr_enrich sleeps 300 s in execute")
            for at in (5, 6)
        ),
        note=_FR_QUIET_NOTE,
    ),
    Scenario(
        "fr_score_raises",
        "fraud",
        "model control explicit; 5 s in, fr_score is loaded again through the repository API "
        "with a new config parameter risk_table=merchant_v2 (a deploy naming a table this "
        "version does not ship): from then on every fr_score execute raises KeyError in "
        "_weights, and fr_gateway, which raises on a child's error response, fails every "
        "request too; the healthy load continues and fails, verbose log",
        (("model_failing", "fr_score"),),
        model_control="explicit",
        injections=(_FR_RAISES,),
        note=_FR_RAISES_NOTE,
    ),
    Scenario(
        "fr_parse_cold_start",
        "fraud",
        "FR_PARSE_COLD_START_S=4, model control explicit: the server is up and warmed (2 "
        "requests) before the capture starts, so the bundle's log lacks the first load; 5 s "
        "in, fr_parse (the first step of the ensemble fr_features) is loaded again through "
        "the repository API (a deploy) and its first execute takes 4 s",
        (("cold_start", "fr_parse"),),
        env={"FR_PARSE_COLD_START_S": "4"},
        model_control="explicit",
        log_from_start=False,
        warmup=2,
        injections=(
            Injection(5, 1, {}, 60, "reload fr_parse (repository API)", "reload", "fr_parse"),
        ),
    ),
    Scenario(
        "fr_features_growth",
        "fraud",
        "one request switches on a bug in the fr_enrich instance that serves it: from then "
        "on it keeps every signal it produced and appends the whole kept list to itself on "
        "each request, so the ensemble fr_features' output SIGNALS [1, n] doubles per "
        "request of that instance (16, 32, ... up to 8192) and fr_score is fed ever larger "
        "inputs",
        (("shape_growth", "fr_enrich"),),
        injections=(Injection(5, 1, {"fr_fault": "grow"}, 60, "fr_enrich history doubles"),),
        note=(
            "`shape_growth` is expected on fr_enrich, the model whose code keeps the state "
            "and whose output grows: the ensemble fr_features only relays SIGNALS, and "
            "fr_score's input grows because it is fed, its own output stays RISK [1, 1]."
        ),
    ),
)

_NZ_PIPELINE = (
    "the noisy pipeline (nz_router, python BLS, async execute, 2 instances, awaits an "
    "async_exec call to nz_embed, dynamic batching, 2 instances, through a done-callback, "
    "then an async_exec call to nz_rank, dynamic batching, 1 instance) under eight id-less "
    "gRPC clients; every model prints debug lines to stdout and stderr on every batch, logs "
    "with Python's logging (INFO, stderr) and pb_utils.Logger (info, and a warning every 4th "
    "router request), and every 5th request of a router instance prints a handled KeyError "
    "with traceback.print_exc() (a cache miss it retries)"
)
_NZ_RANK_HANG: dict[str, str | int | float] = {"nz_fault": "rank_hang", "rank_hang_s": 300}
_NZ_RANK_HANG_TEXT = (
    "one request whose nz_rank batch never returns (a stuck forward pass): nz_rank has one "
    "instance, so every later rank call queues behind it and both nz_router instances end up "
    "awaiting nz_rank; the eight clients time out (10 s) and send again"
)
_NZ_NOTE = (
    "Noise is not a fault: the printed debug lines, logging and pb_utils.Logger lines "
    "(INFO and WARNING) and the handled tracebacks are in every scenario, healthy or not, "
    "and must yield no finding of warning or above. One hang, one alert: `hung_request` is "
    "expected on the model the clients call (nz_router), naming the batch that is stuck "
    "(nz_rank: `mentions` in expected.json)."
)

_NOISY = (
    Scenario(
        "nz_healthy",
        "noisy",
        f"{_NZ_PIPELINE}, verbose log in glog format: the twin of every nz_* fault",
        (),
        clients=8,
        note=_NZ_NOTE,
    ),
    Scenario(
        "nz_healthy_iso",
        "noisy",
        f"{_NZ_PIPELINE}, verbose log with --log-format ISO8601: the twin of nz_rank_hang_iso",
        (),
        clients=8,
        log_format="ISO8601",
        note=_NZ_NOTE,
    ),
    Scenario(
        "nz_rank_hang",
        "noisy",
        f"{_NZ_PIPELINE}; {_NZ_RANK_HANG_TEXT}, glog format",
        (("hung_request", "nz_router"),),
        clients=8,
        injections=(Injection(5, 1, _NZ_RANK_HANG, 60, "nz_rank sleeps 300 s in execute"),),
        note=_NZ_NOTE,
    ),
    Scenario(
        "nz_rank_hang_iso",
        "noisy",
        f"{_NZ_PIPELINE}; {_NZ_RANK_HANG_TEXT}, --log-format ISO8601",
        (("hung_request", "nz_router"),),
        clients=8,
        log_format="ISO8601",
        injections=(Injection(5, 1, _NZ_RANK_HANG, 60, "nz_rank sleeps 300 s in execute"),),
        note=_NZ_NOTE,
    ),
    Scenario(
        "nz_callback_error",
        "noisy",
        f"{_NZ_PIPELINE}; one request whose nz_embed done-callback raises RuntimeError instead "
        "of delivering EMB (unhandled: asyncio prints 'Exception in callback ...'), so that "
        "router request waits 5 s for its embedding and answers an error; glog format",
        (("callback_error", "nz_router"),),
        clients=8,
        injections=(
            Injection(5, 1, {"nz_fault": "callback_error"}, 60, "nz_router's callback raises"),
        ),
        note="The handled tracebacks (printed by the router, recovered from) must not be "
        "taken for the unhandled one: one `callback_error` on nz_router is expected.",
    ),
    Scenario(
        "nz_cold_then_hang",
        "noisy",
        f"{_NZ_PIPELINE}; NZ_EMBED_COLD_START_S=4, model control explicit, --log-format "
        "ISO8601: the server is up and warmed (4 requests) before the capture starts, so the "
        "bundle's log lacks the first load; 5 s in, nz_embed is loaded again through the "
        "repository API (a deploy) and each new instance's first execute takes 4 s; 20 s "
        f"in, {_NZ_RANK_HANG_TEXT}",
        (("cold_start", "nz_embed"), ("hung_request", "nz_router")),
        clients=8,
        log_format="ISO8601",
        env={"NZ_EMBED_COLD_START_S": "4"},
        model_control="explicit",
        log_from_start=False,
        warmup=4,
        duration_s=40.0,
        injections=(
            Injection(5, 1, {}, 60, "reload nz_embed (repository API)", "reload", "nz_embed"),
            Injection(20, 1, _NZ_RANK_HANG, 60, "nz_rank sleeps 300 s in execute"),
        ),
        note=_NZ_NOTE,
    ),
)

_DOC_ARGS = (
    "--rate-limit=execution_count",
    "--cache-config=local,size=1048576",
    "--cache-directory={caches}",
)
_DOC_PIPELINE = (
    "the document pipeline (doc_router, python BLS, async execute, 2 instances, splits each "
    "document into its 2 to 4 pages and gathers one async_exec call per page to doc_layout, "
    "dynamic batching, preferred 4 and 8, 5 ms, 2 instances that each need the "
    "rate-limiter resource R of which the server has 1 (--rate-limit=execution_count: they "
    "never execute at once), then one async_exec call to doc_extract, 1 instance, with "
    "Triton's response cache, --cache-config local,size=1048576) under two id-less gRPC "
    "clients"
)
_DOC_HANG: dict[str, str | int | float] = {"doc_fault": "layout_hang", "layout_hang_s": 300}
_DOC_HANG_TEXT = (
    "one document whose page-1 doc_layout batch never returns (a stuck forward pass): its "
    "doc_router instance awaits the gathered layout calls forever, and the stuck doc_layout "
    "instance keeps the one copy of R, so the rate limiter never lets the other doc_layout "
    "instance run: every later page queues, both doc_router instances end up waiting, and "
    "the clients time out (10 s) and send again"
)
_DOC_ONE_ALERT = (
    "One hang, one alert: `hung_request` is expected on the model the clients call "
    "(doc_router, whose requests never complete), and it must name the child that is stuck, "
    "doc_layout (`mentions` in expected.json), as in nz_rank_hang."
)
_DOC_EXTRACT_HANG = Injection(
    5,
    1,
    {"doc_fault": "extract_hang", "extract_hang_s": 300},
    60,
    "doc_extract sleeps 300 s in execute",
)
_DOC_EXTRACT_HANG_TEXT = (
    "one document whose doc_extract batch never returns (a stuck lookup): doc_extract has "
    "one instance, so every later call that the response cache does not answer queues "
    "behind it, both doc_router instances end up waiting, and the clients time out (10 s) "
    "and send again (until a miss holds the second doc_router instance too, documents "
    "whose signature is in the cache still get answers)"
)
_DOC_COLD = Injection(
    5,
    1,
    {"extract_cold_start_s": 4},
    60,
    "reload doc_extract with extract_cold_start_s=4 (repository API)",
    "reload",
    "doc_extract",
)

_DOC = (
    Scenario(
        "doc_healthy",
        "doc",
        f"{_DOC_PIPELINE}, verbose log: the twin of every doc_* fault",
        (),
        server_args=_DOC_ARGS,
    ),
    Scenario(
        "doc_healthy_quiet",
        "doc",
        f"{_DOC_PIPELINE}, without --log-verbose and without trace files: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
        server_args=_DOC_ARGS,
    ),
    Scenario(
        "doc_healthy_iso",
        "doc",
        f"{_DOC_PIPELINE}, verbose log with --log-format ISO8601: the twin of doc_layout_hang_iso",
        (),
        log_format="ISO8601",
        server_args=_DOC_ARGS,
    ),
    Scenario(
        "doc_layout_hang",
        "doc",
        f"{_DOC_PIPELINE}; {_DOC_HANG_TEXT}, glog format",
        (("hung_request", "doc_router"),),
        server_args=_DOC_ARGS,
        injections=(Injection(5, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note=_DOC_ONE_ALERT,
    ),
    Scenario(
        "doc_layout_hang_iso",
        "doc",
        f"{_DOC_PIPELINE}; {_DOC_HANG_TEXT}, --log-format ISO8601",
        (("hung_request", "doc_router"),),
        log_format="ISO8601",
        server_args=_DOC_ARGS,
        injections=(Injection(5, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note=_DOC_ONE_ALERT,
    ),
    Scenario(
        "doc_layout_hang_quiet",
        "doc",
        f"{_DOC_PIPELINE}; without --log-verbose and without trace files: {_DOC_HANG_TEXT}",
        (("model_stalled", "doc_layout"),),
        log_verbose=0,
        trace=False,
        server_args=_DOC_ARGS,
        injections=(Injection(5, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note="Why doc_layout: without the verbose log only /metrics and /v2/models/stats are "
        "left. Here, unlike fr_enrich_hang_quiet, the stuck child is visible there: the rate "
        "limiter holds every later doc_layout page queued behind the stuck batch (its pending "
        "gauge rises, its success counter stops), so the model that stalled first and "
        "holds the rest can be named. doc_router stalls too, as a consequence.",
    ),
    Scenario(
        "doc_router_pool_deadlock",
        "doc",
        f"{_DOC_PIPELINE}; 5 s in, four concurrent documents whose first page holds an "
        "embedded document: the doc_layout batch that runs such a page sends it back to "
        "doc_router through BLS exec() (A -> B -> A) 0.5 s later, while both doc_router "
        "instances are awaiting doc_layout: the call back can never start, the stuck "
        "doc_layout instance keeps the one copy of R, and the healthy load queues behind "
        "them",
        (("bls_deadlock", "doc_router"),),
        server_args=_DOC_ARGS,
        injections=(
            Injection(
                5, 4, {"doc_fault": "embedded"}, 60, "doc_layout exec()s doc_router (embedded)"
            ),
        ),
        note="One cycle, one alert: `bls_deadlock` is expected on doc_router (the model "
        "whose instances are all held, waiting on children that wait on it), naming "
        "doc_layout (`mentions` in expected.json), as ocr_cycle_deadlock and ch_self_deadlock.",
    ),
    Scenario(
        "doc_extract_hang",
        "doc",
        f"{_DOC_PIPELINE}; {_DOC_EXTRACT_HANG_TEXT}, verbose log",
        (("hung_request", "doc_router"),),
        server_args=_DOC_ARGS,
        injections=(_DOC_EXTRACT_HANG,),
        note="One hang, one alert: `hung_request` is expected on doc_router, the model the "
        "clients call, naming doc_extract and the instance that holds the stuck call, "
        "doc_extract_0_0 (`mentions` in expected.json), as doc_layout_hang names "
        "doc_layout_0_0; the cache hits, answered without an execution, must not be taken "
        "for queued calls.",
    ),
    Scenario(
        "doc_extract_hang_quiet",
        "doc",
        f"{_DOC_PIPELINE}; without --log-verbose and without trace files: {_DOC_EXTRACT_HANG_TEXT}",
        (("model_stalled", "doc_extract"),),
        log_verbose=0,
        trace=False,
        server_args=_DOC_ARGS,
        injections=(_DOC_EXTRACT_HANG,),
        note="doc_extract's pending gauge rises and its execution count stops while its "
        "success counter still rises with each cache hit: `model_stalled` is expected on "
        "doc_extract.",
    ),
    Scenario(
        "doc_extract_cold_start",
        "doc",
        f"{_DOC_PIPELINE}; model control explicit: the server is up and warmed (4 requests) "
        "before the capture starts, so the bundle's log lacks the first load; 5 s in, "
        "doc_extract is loaded again through the repository API with a new config parameter "
        "extract_cold_start_s=4 (a deploy) and its new instance's first execute loads its "
        "weights for 4 s; requests whose layout signature is in the response cache do not "
        "wait for it",
        (("cold_start", "doc_extract"),),
        model_control="explicit",
        log_from_start=False,
        warmup=4,
        server_args=_DOC_ARGS,
        injections=(_DOC_COLD,),
    ),
    Scenario(
        "doc_extract_cold_then_hang",
        "doc",
        f"{_DOC_PIPELINE}; model control explicit, warmed (4 requests) before the capture; "
        "5 s in, doc_extract is loaded again with extract_cold_start_s=4 and "
        "extract_lock_bug=1 (a deploy): its first execute loads its weights for 4 s and "
        "keeps the instance lock, so every later execute waits for the lock (300 s): "
        "doc_extract answers once, then never again; cache hits still answer, the misses "
        "hold both doc_router instances",
        (("cold_start", "doc_extract"), ("hung_request", "doc_router")),
        model_control="explicit",
        log_from_start=False,
        warmup=4,
        duration_s=35.0,
        server_args=_DOC_ARGS,
        injections=(
            Injection(
                5,
                1,
                {"extract_cold_start_s": 4, "extract_lock_bug": 1},
                60,
                "reload doc_extract with extract_cold_start_s=4, extract_lock_bug=1",
                "reload",
                "doc_extract",
            ),
        ),
        note="Two faults of one deploy: `cold_start` on doc_extract (its first execute "
        "after the load takes 4 s), then `hung_request` on doc_router, the model the "
        "clients call, naming doc_extract (`mentions` in expected.json), whose executes "
        "wait for a lock that is never released.",
    ),
    Scenario(
        "doc_extract_slow_init_reload",
        "doc",
        f"{_DOC_PIPELINE}; model control explicit, warmed (4 requests) before the capture; "
        "5 s in, doc_extract is loaded again with extract_init_s=4 (a deploy whose "
        "initialize takes 4 s): Triton keeps serving the loaded doc_extract until the new "
        "one is ready, so no request waits",
        (),
        model_control="explicit",
        log_from_start=False,
        warmup=4,
        server_args=_DOC_ARGS,
        injections=(
            Injection(
                5,
                1,
                {"extract_init_s": 4},
                60,
                "reload doc_extract with extract_init_s=4 (repository API)",
                "reload",
                "doc_extract",
            ),
        ),
        note="'healthy' in expected.json: a slow initialize during a reload is not a cold "
        "start that anyone waits for (if the clients' latencies in 'What the clients saw' "
        "say otherwise, this expectation is wrong).",
    ),
    Scenario(
        "doc_extract_raises_cached",
        "doc",
        f"{_DOC_PIPELINE}; model control explicit; 5 s in, doc_extract is loaded again "
        "through the repository API with a new config parameter extract_fields=12 (a deploy "
        "of a new schema): from then on every execute raises ValueError (cannot reshape "
        "array of size 8 into shape (12,)) and doc_router answers the error, except for the "
        "documents whose layout signature is already in Triton's response cache, which "
        "never reach execute and still succeed",
        (("model_failing", "doc_extract"),),
        model_control="explicit",
        server_args=_DOC_ARGS,
        injections=(
            Injection(
                5,
                1,
                {"extract_fields": 12},
                60,
                "reload doc_extract with extract_fields=12 (repository API)",
                "reload",
                "doc_extract",
            ),
        ),
        note="One bug, one alert: `model_failing` is expected on the model whose execute "
        "raises (doc_extract; doc_router only relays its error), and it must name the "
        "exception (`mentions` in expected.json), as rag_orchestrator_raises; the response "
        "cache's hits, which keep succeeding, must not hide it.",
    ),
    Scenario(
        "doc_extract_raises_cached_quiet",
        "doc",
        f"{_DOC_PIPELINE}; without --log-verbose and without trace files; model control "
        "explicit; 5 s in, doc_extract is loaded again "
        "through the repository API with a new config parameter extract_fields=12 (a deploy "
        "of a new schema): from then on every execute raises ValueError (cannot reshape "
        "array of size 8 into shape (12,)) and doc_router answers the error, except for the "
        "documents whose layout signature is already in Triton's response cache, which "
        "never reach execute and still succeed",
        (("model_failing", "doc_extract"),),
        log_verbose=0,
        trace=False,
        model_control="explicit",
        server_args=_DOC_ARGS,
        injections=(
            Injection(
                5,
                1,
                {"extract_fields": 12},
                60,
                "reload doc_extract with extract_fields=12 (repository API)",
                "reload",
                "doc_extract",
            ),
        ),
        note="One bug, one alert: `model_failing` is expected on the model whose execute "
        "raises (doc_extract; doc_router only relays its error), and it must name the "
        "exception (`mentions` in expected.json), as rag_orchestrator_raises; the response "
        "cache's hits, which keep succeeding, must not hide it.",
    ),
    Scenario(
        "doc_layout_rate_saturation",
        "doc",
        f"{_DOC_PIPELINE}; 5 s in, 4 more clients join the 2 for 20 s with high-resolution "
        "documents whose every page costs doc_layout 60 ms more: doc_layout has 2 "
        "instances, but the rate limiter lets one execute at a time (one copy of R), so it "
        "cannot keep up; its queue grows while its other instance sits idle, and both "
        "doc_router instances wait on it",
        (("instance_saturation", "doc_layout"),),
        server_args=_DOC_ARGS,
        injections=(
            Injection(
                5,
                4,
                {"doc_fault": "slow_layout", "layout_slow_ms": 60},
                15,
                "4 more clients, 60 ms more per page in doc_layout, each resending for 20 s",
                repeat_s=20,
            ),
        ),
        note="One bottleneck, one alert: `instance_saturation` is expected on doc_layout, "
        "the model that cannot keep up (its rate-limiter resource, not its instance count, "
        "is the limit), not on doc_router, whose instances only wait on it (`absent` in "
        "expected.json), as rec_instance_saturation names rec_scorer.",
    ),
    Scenario(
        "doc_layout_shape_growth",
        "doc",
        f"{_DOC_PIPELINE}; 5 s in, one document switches on a bug in the doc_layout "
        "instance that runs its pages: from then on it appends every batch's boxes to an "
        "instance buffer and answers the whole buffer, so BOXES [1, n, 4] grows with every "
        "batch of that instance (up to 8192 rows)",
        (("shape_growth", "doc_layout"),),
        server_args=_DOC_ARGS,
        injections=(Injection(5, 1, {"doc_fault": "grow"}, 60, "doc_layout's boxes grow"),),
    ),
)


_TTS_PIPELINE = (
    "the text-to-speech pipeline (tts_frontend, python BLS, async execute, 2 instances, "
    "gathers one async_exec call per sentence to tts_acoustic, dynamic batching, 2 ms, 2 "
    "instances, a bounded queue of 4, then reads the stream of the decoupled tts_vocoder, 2 "
    "instances, 3 to 6 AUDIO chunks and a final flag, through exec(decoupled=True)) under two "
    "id-less gRPC clients"
)
_TTS_VOCODER_ERRORS = Injection(
    5,
    1,
    {"max_frames": 8},
    60,
    "reload tts_vocoder with max_frames=8 (repository API)",
    "reload",
    "tts_vocoder",
)
_TTS_VOCODER_ERRORS_TEXT = (
    "model control explicit; 5 s in, tts_vocoder is loaded again through the repository API "
    "with a new config parameter max_frames=8 (meant in seconds, read as frames): from then "
    "on it answers every request with one error response and the final flag ('mel of N "
    "frames exceeds max_frames 8'), raising nothing, and tts_frontend answers its clients an "
    "error response in turn"
)
_TTS_VOCODER_ERRORS_NOTE = (
    "One bug, one alert: `model_failing` is expected on tts_vocoder, the model that refuses "
    "its requests (tts_frontend only relays the error). Nothing is raised and no stub "
    "dies: `stub_unhealthy` on tts_vocoder is `absent` in expected.json."
)
_TTS_ACOUSTIC_V2 = Injection(
    5,
    1,
    {"lexicon": "v2"},
    60,
    "reload tts_acoustic with lexicon=v2 (repository API)",
    "reload",
    "tts_acoustic",
)

_TTS_BURST = Injection(
    5, 12, {"chunking": "word"}, 10, "12 clients, one acoustic call per word", repeat_s=10
)
_TTS_BURST_TEXT = (
    "5 s in, twelve more clients send for 10 s, each again as soon as answered, with "
    "chunking=word (a low-latency mode: one tts_acoustic call per word, gathered): more "
    "calls wait at tts_acoustic than its queue of 4 holds, and Triton rejects the rest"
)

_TTS_QUIET_ERRORS_NOTE = (
    "'healthy' in expected.json means: no finding is expected, not that nothing is wrong "
    "(80% of the clients' requests fail). Without the verbose log Triton writes nothing for "
    "an error response, and an error response counts as a success: "
    "nv_inference_request_success of tts_vocoder and tts_frontend keep rising, every "
    "nv_inference_request_failure stays 0, /v2/models/stats says success too. No signal in "
    "the bundle tells this window from tts_healthy_quiet; only the clients (or the model's "
    "own metrics) see it."
)
_TTS_REJECTED_NOTE = (
    "No kind of the catalogue fits: tts_acoustic is not saturated (its instances are idle "
    "most of the time; each burst of gathered calls overflows a queue of 4 within "
    "microseconds) and not failing in its backend. What a user must be told is that "
    "tts_acoustic rejects requests because its queue is full (max_queue_size 4): the kind "
    "`requests_rejected`, which does not exist yet (a gap in test_foreign.GAPS)."
)
_TTS_QUIET_REJECTED_NOTE = (
    "'healthy' in expected.json means: no finding is expected, not that nothing is wrong "
    "(a third of the requests are rejected). A request rejected because the queue is full "
    "(max_queue_size) is counted nowhere on 2.51 (nv_inference_request_failure "
    "reason=REJECTED stays 0 for these BLS calls) and, without the verbose log, logged "
    "nowhere: only the clients see 'Exceeds maximum queue size'."
)
_TTS_CRASH_NOTE = (
    "What happened: tritonserver itself crashed (SIGSEGV, 'Signal (11) received.' and a "
    "backtrace through TRITONBACKEND_RequestRelease from the python backend's "
    "TRITONBACKEND_ModelInstanceExecute) a second after the first BLS children were "
    "rejected (FAILED_ENQUEUE) with trace files on and children built with "
    "trace=request.trace() (tts_queue_full_untraced and tts_queue_full_quiet, without "
    "trace files, did not crash). A user must be told that Triton is down: `target_down` "
    "(model ''), not a hang of any model (`absent`)."
)

_TTS = (
    Scenario(
        "tts_healthy",
        "tts",
        f"{_TTS_PIPELINE}, verbose log: the twin of every tts_* fault",
        (),
    ),
    Scenario(
        "tts_healthy_quiet",
        "tts",
        f"{_TTS_PIPELINE}, without --log-verbose and without trace files: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "tts_vocoder_errors",
        "tts",
        f"{_TTS_PIPELINE}; {_TTS_VOCODER_ERRORS_TEXT}, verbose log",
        (("model_failing", "tts_vocoder"),),
        model_control="explicit",
        injections=(_TTS_VOCODER_ERRORS,),
        note=_TTS_VOCODER_ERRORS_NOTE,
    ),
    Scenario(
        "tts_vocoder_errors_quiet",
        "tts",
        f"{_TTS_PIPELINE}; without --log-verbose and without trace files: "
        f"{_TTS_VOCODER_ERRORS_TEXT}",
        (),
        log_verbose=0,
        trace=False,
        model_control="explicit",
        injections=(_TTS_VOCODER_ERRORS,),
        note=_TTS_QUIET_ERRORS_NOTE,
    ),
    Scenario(
        "tts_acoustic_partial_errors",
        "tts",
        f"{_TTS_PIPELINE}; model control explicit; 5 s in, tts_acoustic is loaded again "
        "through the repository API with lexicon=v2 (a lexicon without digit phones, the "
        "frontend not redeployed): a batch that holds a text with a number (one text in "
        "five) raises KeyError in execute, the others succeed; verbose log",
        (("model_failing", "tts_acoustic"),),
        model_control="explicit",
        injections=(_TTS_ACOUSTIC_V2,),
        note="Part of the requests fail, by a real exception in tts_acoustic: "
        "`model_failing` on tts_acoustic (warning or above) naming KeyError (`mentions`); "
        "tts_frontend answers those requests with an error response but is not at fault.",
    ),
    Scenario(
        "tts_vocoder_hang",
        "tts",
        f"{_TTS_PIPELINE}; one request whose tts_vocoder stream sends 2 chunks and then "
        "sleeps 300 s in execute (a stuck forward pass): the tts_frontend instance that "
        "serves it blocks in its loop over the exec(decoupled=True) stream; the other "
        "frontend instance and the other vocoder instance keep serving",
        (("hung_request", "tts_frontend"),),
        injections=(
            Injection(5, 1, {"tts_fault": "vocoder_hang"}, 60, "tts_vocoder stops after 2 chunks"),
        ),
        note="One hang, one alert: `hung_request` is expected on the model the client "
        "called (tts_frontend, whose request never completes), naming the decoupled child "
        "that is stuck, tts_vocoder (`mentions` in expected.json).",
    ),
    Scenario(
        "tts_queue_full",
        "tts",
        f"{_TTS_PIPELINE}; {_TTS_BURST_TEXT}, verbose log",
        (("target_down", ""),),
        injections=(_TTS_BURST,),
        note=_TTS_CRASH_NOTE,
    ),
    Scenario(
        "tts_queue_full_quiet",
        "tts",
        f"{_TTS_PIPELINE}; without --log-verbose and without trace files: {_TTS_BURST_TEXT}",
        (),
        log_verbose=0,
        trace=False,
        injections=(_TTS_BURST,),
        note=_TTS_QUIET_REJECTED_NOTE,
    ),
    Scenario(
        "tts_queue_full_child_untraced",
        "tts",
        f"{_TTS_PIPELINE}; verbose log and trace files as tts_queue_full, but "
        "TTS_CHILD_TRACE=0: tts_frontend builds its BLS children without "
        f"trace=request.trace(); {_TTS_BURST_TEXT}",
        (("requests_rejected", "tts_acoustic"),),
        env={"TTS_CHILD_TRACE": "0"},
        injections=(_TTS_BURST,),
        note=_TTS_REJECTED_NOTE,
    ),
    Scenario(
        "tts_queue_full_untraced",
        "tts",
        f"{_TTS_PIPELINE}; verbose log, without trace files: {_TTS_BURST_TEXT}",
        (("requests_rejected", "tts_acoustic"),),
        trace=False,
        injections=(_TTS_BURST,),
        note=_TTS_REJECTED_NOTE,
    ),
)

_EMB_PIPELINE = (
    "the embedding service (emb_ensemble, an ensemble: emb_tokenize, python, 2 instances -> "
    "emb_encode, python, dynamic batching, preferred 8 and 16, 10 ms, up to 16, 2 instances, "
    "2 priority levels (default 2) and a queue policy that rejects a request queued for more "
    "than 200 ms (timeout_action REJECT, default_timeout_microseconds 200000, overridable); "
    "5 ms plus 35 ms a request per batch -> emb_pool, python, 1 instance) under six id-less "
    "gRPC clients"
)
_EMB_SLOW = Injection(
    5,
    1,
    {"request_ms": 500},
    60,
    "reload emb_encode with request_ms=500 (repository API)",
    "reload",
    "emb_encode",
)
_EMB_SURGE = Injection(5, 12, {}, 10, "12 more clients, each resending for 15 s", repeat_s=15)
_EMB_COLD = Injection(
    5,
    1,
    {"cold_start_s": 4},
    60,
    "reload emb_tokenize with cold_start_s=4 (repository API)",
    "reload",
    "emb_tokenize",
)

_EMB = (
    Scenario(
        "emb_healthy",
        "emb",
        f"{_EMB_PIPELINE}, verbose log: the twin of every emb_* fault",
        (),
        clients=6,
    ),
    Scenario(
        "emb_healthy_quiet",
        "emb",
        f"{_EMB_PIPELINE}, without --log-verbose and without trace files: the quiet twin",
        (),
        clients=6,
        log_verbose=0,
        trace=False,
    ),
    Scenario(
        "emb_healthy_iso",
        "emb",
        f"{_EMB_PIPELINE}, verbose log with --log-format ISO8601: the twin of "
        "emb_tokenize_cold_start_iso",
        (),
        clients=6,
        log_format="ISO8601",
    ),
    Scenario(
        "emb_encode_slow_queue_timeouts",
        "emb",
        f"{_EMB_PIPELINE}; model control explicit; 5 s in, emb_encode is loaded again through "
        "the repository API with request_ms=500 (a heavier checkpoint): each request of a batch "
        "costs 500 ms, the six clients queue behind the two instances, and requests that wait "
        "in the queue past its 200 ms timeout are rejected by Triton; verbose log",
        (("requests_rejected", "emb_encode"),),
        clients=6,
        model_control="explicit",
        injections=(_EMB_SLOW,),
    ),
    Scenario(
        "emb_encode_saturated",
        "emb",
        f"{_EMB_PIPELINE}; 5 s in, twelve more clients send for 15 s, each again as soon as "
        "answered: emb_encode at its normal speed has more work than its 2 instances can "
        "serve; verbose log",
        (("instance_saturation", "emb_encode"),),
        clients=6,
        injections=(_EMB_SURGE,),
    ),
    Scenario(
        "emb_server_restart",
        "emb",
        f"{_EMB_PIPELINE}; 10 s in, the tritonserver process is killed (SIGKILL, as the "
        "kernel's OOM killer does) and 4 s later started again on the same ports (a "
        "supervisor's restart); the capture and the clients keep running; verbose log",
        (("target_down", ""),),
        clients=6,
        injections=(
            Injection(
                10,
                1,
                {"down_s": 4},
                0,
                "kill -9 tritonserver, start it again 4 s later",
                "restart_server",
            ),
        ),
    ),
    Scenario(
        "emb_server_killed",
        "emb",
        f"{_EMB_PIPELINE}; 10 s in, the tritonserver process is killed (SIGKILL) and not "
        "started again; the capture and the clients keep running; verbose log",
        (("target_down", ""),),
        clients=6,
        injections=(Injection(10, 1, {}, 0, "kill -9 tritonserver", "kill_server"),),
    ),
    Scenario(
        "emb_pool_stub_oom",
        "emb",
        f"{_EMB_PIPELINE}; 5 s in, the python stub of emb_pool_0_0 (emb_pool's only "
        "instance, the ensemble's last step) is killed with SIGKILL (as the OOM killer "
        "does); verbose log",
        (("stub_unhealthy", "emb_pool"),),
        clients=6,
        injections=(
            Injection(5, 1, {}, 0, "kill -9 the stub of emb_pool_0_0", "kill_stub", "emb_pool_0_0"),
        ),
    ),
    Scenario(
        "emb_tokenize_cold_start_iso",
        "emb",
        f"{_EMB_PIPELINE}; `--log-format ISO8601` (second resolution), model control "
        "explicit; 5 s in, emb_tokenize is loaded again through the repository API with "
        "cold_start_s=4: the first execute of each of its two new instances takes 4 s",
        (("cold_start", "emb_tokenize"),),
        clients=6,
        log_format="ISO8601",
        model_control="explicit",
        injections=(_EMB_COLD,),
    ),
)


_VID_PIPELINE = (
    "the video-analytics pipeline (vid_gateway, python BLS, 2 instances, no batching, calls "
    "vid_detect, dynamic batching, 4 ms, up to 8, 2 instances, then vid_track, 1 instance, "
    "dynamic batching up to 4, with exec(), children without ids built with "
    "trace=request.trace(), the vid_track call with a BLS timeout of 1 s) under three "
    "id-less HTTP clients"
)


def _vid_reload(model: str, **params: str | int | float) -> Injection:
    text = ", ".join(f"{k}={v}" for k, v in params.items())
    return Injection(
        10, 1, params, 60, f"reload {model} with {text} (repository API)", "reload", model
    )


_VID_SHORT = _vid_reload("vid_detect", contract="short")
_VID_DTYPE = _vid_reload("vid_detect", contract="dtype")
_VID_NAME = _vid_reload("vid_detect", contract="name")
_VID_NONE = _vid_reload("vid_detect", contract="none")
_VID_SLOW_TRACK = _vid_reload("vid_track", delay_s=3)
_VID_UNLOAD = Injection(10, 1, {}, 60, "unload vid_track (repository API)", "unload", "vid_track")
_VID_RELOAD_TEXT = (
    "model control explicit; 10 s in, {model} is loaded again through the repository API "
    "with a new config parameter {param}: "
)
_VID_SHORT_NOTE = (
    "What Triton does: the python backend fails every request of the batch, not only the "
    "one left without a response (pb_stub.cc:714 'Failed to process the request(s) ... "
    "Number of InferenceResponse objects do not match the number of InferenceRequest "
    "objects', one line per batch, and nv_inference_request_failure reason=BACKEND). One "
    "bug, one alert: `model_failing` on vid_detect naming that text (`mentions`); "
    "vid_gateway only relays its children's errors (`absent`)."
)
_VID_CONTRACT_NOTE = (
    "No kind of the catalogue fits: Triton 2.51 checks neither the dtype nor the name of a "
    "python model's response outputs against its config. What a user must be told is that "
    "vid_detect answers outside its contract since its reload: the kind `output_contract` "
    "(a response output whose dtype or name disagrees with the model's config), which does "
    "not exist yet (a gap in test_foreign.GAPS). vid_gateway, which fails because of it, is "
    "not at fault (`absent`)."
)
_VID_NONE_NOTE = (
    "What Triton does: a None in the list execute returns is taken as 'answered through the "
    "response sender': nothing is written, the batch is released, the request is never "
    "answered. The vid_gateway instance whose exec() waits on it blocks for good (both within "
    "seconds); `hung_request` on vid_gateway naming vid_detect (`mentions`)."
)
_VID_UNLOADED_NOTE = (
    "A user must be told that vid_gateway fails every request (`model_failing`) because "
    "vid_track, which it calls, was unloaded ('successfully unloaded' in the log): the "
    "finding must name vid_track (`mentions`). The clients' 'Model vid_track is not ready' "
    "is logged nowhere."
)
_VID_TIMEOUT_NOTE = (
    "One instance of vid_track is busy without a pause from the reload on while calls queue "
    "behind it: `instance_saturation` on vid_track. Whether the BLS calls' timeout (1 s, "
    "'timeout (us): 1000000' on their prepared lines) applies depends on vid_track's queue "
    "policy: Triton 2.51 ignored it without one (vid_gateway_bls_timeout) and with "
    "allow_timeout_override alone (vid_gateway_bls_timeout_override); with a nonzero "
    "default_timeout_microseconds too (vid_gateway_bls_timeout_default) the calls queued "
    "past 1 s are released from PENDING and their callers get 'Request timeout expired'."
)

_VID = (
    Scenario(
        "vid_healthy",
        "vid",
        f"{_VID_PIPELINE}, verbose log: the twin of every vid_* fault",
        (),
        clients=3,
    ),
    Scenario(
        "vid_healthy_quiet",
        "vid",
        f"{_VID_PIPELINE}, without --log-verbose and without trace files: the quiet twin",
        (),
        log_verbose=0,
        trace=False,
        clients=3,
    ),
    Scenario(
        "vid_detect_short_responses",
        "vid",
        f"{_VID_PIPELINE}; "
        + _VID_RELOAD_TEXT.format(model="vid_detect", param="contract=short")
        + "from then on its execute returns one response fewer than the requests of its "
        "batch (an off-by-one in the batch loop), verbose log",
        (("model_failing", "vid_detect"),),
        clients=3,
        model_control="explicit",
        injections=(_VID_SHORT,),
        note=_VID_SHORT_NOTE,
    ),
    Scenario(
        "vid_detect_wrong_dtype",
        "vid",
        f"{_VID_PIPELINE}; "
        + _VID_RELOAD_TEXT.format(model="vid_detect", param="contract=dtype")
        + "from then on BOXES is answered as float64 against the config's TYPE_FP32, and "
        "vid_gateway hands it to vid_track, verbose log",
        (("output_contract", "vid_detect"),),
        clients=3,
        model_control="explicit",
        injections=(_VID_DTYPE,),
        note=_VID_CONTRACT_NOTE,
    ),
    Scenario(
        "vid_detect_wrong_output_name",
        "vid",
        f"{_VID_PIPELINE}; "
        + _VID_RELOAD_TEXT.format(model="vid_detect", param="contract=name")
        + "from then on its output is answered as BOX, a name its config does not declare "
        "(BOXES), verbose log",
        (("output_contract", "vid_detect"),),
        clients=3,
        model_control="explicit",
        injections=(_VID_NAME,),
        note=_VID_CONTRACT_NOTE,
    ),
    Scenario(
        "vid_detect_returns_none",
        "vid",
        f"{_VID_PIPELINE}; "
        + _VID_RELOAD_TEXT.format(model="vid_detect", param="contract=none")
        + "from then on its execute puts None in its list of responses for a frame whose "
        "first value is below 0.3 (about 3 in 10), verbose log",
        (("hung_request", "vid_gateway"),),
        clients=3,
        model_control="explicit",
        injections=(_VID_NONE,),
        note=_VID_NONE_NOTE,
    ),
    Scenario(
        "vid_track_unloaded",
        "vid",
        f"{_VID_PIPELINE}; model control explicit; 10 s in, vid_track is unloaded through "
        "the repository API (an operator retiring it while vid_gateway still calls it): "
        "every later BLS call of vid_gateway to vid_track fails, and vid_gateway answers "
        "its clients an error response; verbose log",
        (("model_failing", "vid_gateway"),),
        clients=3,
        model_control="explicit",
        injections=(_VID_UNLOAD,),
        note=_VID_UNLOADED_NOTE,
    ),
    Scenario(
        "vid_gateway_bls_timeout",
        "vid",
        f"{_VID_PIPELINE}; "
        + _VID_RELOAD_TEXT.format(model="vid_track", param="delay_s=3")
        + "from then on each vid_track batch takes 3 s, and vid_gateway's calls to it carry "
        "a BLS timeout of 1 s; verbose log",
        (("instance_saturation", "vid_track"),),
        clients=3,
        model_control="explicit",
        injections=(_VID_SLOW_TRACK,),
        note=_VID_TIMEOUT_NOTE,
    ),
    Scenario(
        "vid_gateway_bls_timeout_override",
        "vid",
        f"{_VID_PIPELINE}; model control explicit; 10 s in, vid_track's config.pbtxt is "
        "replaced in the served copy and vid_track loaded again: 3 s per batch (delay_s=3) "
        "and a queue policy with allow_timeout_override: true, so that the 1 s timeout of "
        "vid_gateway's BLS calls applies while they wait in vid_track's queue; verbose log",
        (("instance_saturation", "vid_track"),),
        clients=3,
        model_control="explicit",
        injections=(
            Injection(
                10,
                1,
                {},
                60,
                "vid_track: 3 s per batch, request timeouts honoured",
                "swap_config",
                "vid_track",
                source="variants/vid/vid_track_slow_override.pbtxt",
            ),
        ),
        note=_VID_TIMEOUT_NOTE,
    ),
    Scenario(
        "vid_gateway_bls_timeout_default",
        "vid",
        f"{_VID_PIPELINE}; model control explicit; 10 s in, vid_track's config.pbtxt is "
        "replaced in the served copy and vid_track loaded again: 3 s per batch (delay_s=3) "
        "and a queue policy with allow_timeout_override: true and "
        "default_timeout_microseconds: 5000000, so that the 1 s timeout of vid_gateway's "
        "BLS calls (below the default) applies while they wait in vid_track's queue; "
        "verbose log",
        (("instance_saturation", "vid_track"),),
        clients=3,
        model_control="explicit",
        injections=(
            Injection(
                10,
                1,
                {},
                60,
                "vid_track: 3 s per batch, a 5 s default queue timeout, overrides allowed",
                "swap_config",
                "vid_track",
                source="variants/vid/vid_track_slow_default.pbtxt",
            ),
        ),
        note=_VID_TIMEOUT_NOTE,
    ),
)


_KWS_PIPELINE = (
    "the keyword-spotting pipeline (kws_gateway, python BLS, async def execute, 2 instances, "
    "no batching, awaits kws_frontend, python, dynamic batching up to 8, 2 ms, 2 instances, "
    "then kws_classifier, python, 1 instance, no batching, versions 1 and 2 in the "
    "repository with version_policy latest 1 (version 2 served), through async_exec(), "
    "children without ids built with trace=request.trace()) under three id-less gRPC clients"
)
_KWS_RELOAD_FAILS = Injection(
    10,
    1,
    {"init_fail": 1},
    60,
    "reload kws_classifier with init_fail=1 (repository API): its initialize raises",
    "reload",
    "kws_classifier",
)
_KWS_LOAD_HANGS = Injection(
    8,
    1,
    {"init_sleep_s": 60},
    60,
    "reload kws_classifier with init_sleep_s=60 (repository API): its initialize sleeps 60 s",
    "reload",
    "kws_classifier",
)
_KWS_HANG = Injection(
    5,
    1,
    {"kws_fault": "classify_hang", "classify_hang_s": 300},
    60,
    "kws_classifier sleeps 300 s in execute for this request",
)
_KWS_UNLOAD = Injection(
    10, 1, {}, 60, "unload kws_classifier (repository API)", "unload", "kws_classifier"
)

_KWS = (
    Scenario(
        "kws_healthy",
        "kws",
        f"{_KWS_PIPELINE}; model control explicit, verbose log: the twin of every kws_* fault",
        (),
        clients=3,
        model_control="explicit",
    ),
    Scenario(
        "kws_classifier_reload_fails",
        "kws",
        f"{_KWS_PIPELINE}; model control explicit; 10 s in, kws_classifier is loaded again "
        "through the repository API with a new config parameter init_fail=1: the new "
        "version's initialize raises RuntimeError (a checkpoint that does not load); "
        "verbose log",
        (("model_load_failed", "kws_classifier"),),
        clients=3,
        model_control="explicit",
        injections=(_KWS_RELOAD_FAILS,),
    ),
    Scenario(
        "kws_classifier_load_hangs",
        "kws",
        f"{_KWS_PIPELINE}; model control explicit; 8 s in, kws_classifier is loaded again "
        "through the repository API with a new config parameter init_sleep_s=60: the new "
        "instance's initialize sleeps 60 s, so the load does not finish within the window "
        "while the clients keep calling; verbose log",
        (("model_load_stuck", "kws_classifier"),),
        clients=3,
        model_control="explicit",
        injections=(_KWS_LOAD_HANGS,),
    ),
    Scenario(
        "kws_classifier_unload_blocked",
        "kws",
        f"{_KWS_PIPELINE}; model control explicit; 5 s in, one request whose kws_classifier "
        "execute sleeps 300 s (a stuck forward pass); 10 s in, kws_classifier is unloaded "
        "through the repository API (an operator retiring it): the unload waits on the "
        "request in flight; verbose log",
        (("hung_request", "kws_gateway"),),
        clients=3,
        model_control="explicit",
        injections=(_KWS_HANG, _KWS_UNLOAD),
    ),
    Scenario(
        "kws_frontend_stub_restart",
        "kws",
        f"{_KWS_PIPELINE}; model control explicit; 8 s in, the python stub of "
        "kws_frontend_0_0 (one of kws_frontend's two instances) is killed with SIGKILL (as "
        "the OOM killer does) while the clients keep calling; verbose log",
        (("stub_unhealthy", "kws_frontend"),),
        clients=3,
        model_control="explicit",
        injections=(
            Injection(
                8, 1, {}, 0, "kill -9 the stub of kws_frontend_0_0", "kill_stub", "kws_frontend_0_0"
            ),
        ),
    ),
)

_SUM_PIPELINE = (
    "the streaming summarizer (sum_router, python BLS, decoupled, async def execute, 1 "
    "instance, no batching, awaits sum_chunker, python, dynamic batching up to 8, 3 ms, 2 "
    "instances, through async_exec() and a done-callback, then per chunk (at most 4) reads the "
    "decoupled sum_lm, python, 1 instance, with exec(decoupled=True) in a worker thread and "
    "calls sum_detok, python, 1 instance, no batching, sending one PIECE per chunk; children "
    "without ids and without trace=request.trace(): see sum_router/1/model.py) under three "
    "id-less gRPC streaming clients; "
    "model control explicit"
)
_SUM_LM_STALL = Injection(
    5,
    1,
    {"lm_stall_chunk": 1, "lm_stall_s": 300},
    60,
    "sum_lm's generator stops after 1 token of the second chunk (no final flag)",
)
_SUM_CALLBACK = Injection(
    5,
    1,
    {"layout": "ragged"},
    60,
    "sum_router's done-callback on sum_chunker raises AttributeError (CHUNK_LENS missing)",
)
_SUM_STALL_NOTE = (
    "The client's stream on sum_router stops after its first PIECE and never ends: "
    "`stream_stalled` on sum_router (warning or above), naming the decoupled child whose "
    "stream stopped, sum_lm (`mentions` in expected.json), as tts_vocoder_hang names "
    "tts_vocoder. sum_lm's single instance is not held (its execute returned): everything "
    "else is served."
)
_SUM_CALLBACK_NOTE = (
    "The exception is raised in a done-callback in sum_router/1/streaming.py (a module next "
    "to the model's model.py); asyncio prints it, the router swallows nothing else, and the "
    "client's stream never ends: `callback_error` on sum_router (warning or above)."
)

_SUM = (
    Scenario(
        "sum_healthy",
        "sum",
        f"{_SUM_PIPELINE}, verbose log: the twin of every sum_* fault",
        (),
        clients=3,
        model_control="explicit",
    ),
    Scenario(
        "sum_lm_hang",
        "sum",
        f"{_SUM_PIPELINE}; 5 s in, one stream whose second chunk's sum_lm generator yields "
        "one token and then waits 300 s for a decode slot nobody frees, never sending the "
        "final flag: the router's reader thread blocks in its loop over the stream; verbose "
        "log",
        (("stream_stalled", "sum_router"),),
        clients=3,
        model_control="explicit",
        injections=(_SUM_LM_STALL,),
        note=_SUM_STALL_NOTE,
    ),
    Scenario(
        "sum_lm_hang_iso",
        "sum",
        f"`--log-format ISO8601` (second resolution): {_SUM_PIPELINE}; 5 s in, one stream "
        "whose second chunk's sum_lm generator yields one token and then waits 300 s for a "
        "decode slot nobody frees, never sending the final flag; verbose log",
        (("stream_stalled", "sum_router"),),
        clients=3,
        model_control="explicit",
        log_format="ISO8601",
        injections=(_SUM_LM_STALL,),
        note=_SUM_STALL_NOTE,
    ),
    Scenario(
        "sum_router_callback_raises",
        "sum",
        f"{_SUM_PIPELINE}; 5 s in, one stream with layout=ragged: sum_router's done-callback "
        "on the sum_chunker call reads CHUNK_LENS, which sum_chunker does not return, and "
        "raises AttributeError; the future is never resolved and the stream never ends; "
        "verbose log",
        (("callback_error", "sum_router"),),
        clients=3,
        model_control="explicit",
        injections=(_SUM_CALLBACK,),
        note=_SUM_CALLBACK_NOTE,
    ),
    Scenario(
        "sum_router_callback_raises_quiet",
        "sum",
        f"without --log-verbose and trace files: {_SUM_PIPELINE}; 5 s in, one stream with "
        "layout=ragged: sum_router's done-callback on the sum_chunker call raises "
        "AttributeError; the future is never resolved and the stream never ends",
        (("callback_error", "sum_router"),),
        clients=3,
        model_control="explicit",
        log_verbose=0,
        trace=False,
        injections=(_SUM_CALLBACK,),
        note=_SUM_CALLBACK_NOTE
        + " Without the verbose log the asyncio traceback (printed whatever the verbosity) "
        "is still in the log, and its frames name sum_router/1/streaming.py.",
    ),
    Scenario(
        "sum_chunker_grows",
        "sum",
        f"{_SUM_PIPELINE}; SUM_CHUNKER_REUSE_BUG=1: each sum_chunker instance appends every "
        "call's chunks to its instance-level list instead of clearing it, so CHUNKS [1, k, 40] "
        "grows by 1 to 4 chunks on every call and never resets (sum_router still summarizes "
        "only the first 4: the summaries go stale, the latency does not grow); verbose log",
        (("shape_growth", "sum_chunker"),),
        clients=3,
        model_control="explicit",
        env={"SUM_CHUNKER_REUSE_BUG": "1"},
    ),
    Scenario(
        "sum_router_child_trace_crash",
        "sum",
        f"{_SUM_PIPELINE}; SUM_CHILD_TRACE=1: sum_router builds its BLS children with "
        "trace=request.trace(), but decoupled async execute runs in the background and Triton "
        "has already released the parent request (and its trace) when the children are sent: "
        "tritonserver dies of SIGSEGV in TRITONSERVER_ServerInferAsync within the first "
        "requests; verbose log, trace files on",
        (("target_down", ""),),
        clients=3,
        model_control="explicit",
        env={"SUM_CHILD_TRACE": "1"},
        note="The server is gone for the rest of the window: `target_down` (critical), "
        "naming the segmentation fault. The streams open at the crash are not stalled streams "
        "of a live server.",
    ),
    Scenario(
        "sum_lm_cold_start",
        "sum",
        f"{_SUM_PIPELINE}; 8 s in, sum_lm is loaded again through the repository API with a "
        "new config parameter lazy_weights_s=4: the new instance's first execute sleeps 4 s "
        "(weights mapped in lazily) while the streams wait on it; verbose log",
        (("cold_start", "sum_lm"),),
        clients=3,
        model_control="explicit",
        injections=(
            Injection(
                8,
                1,
                {"lazy_weights_s": 4},
                60,
                "reload sum_lm with lazy_weights_s=4 (repository API)",
                "reload",
                "sum_lm",
            ),
        ),
    ),
)


_GEO_PIPELINE = (
    "the map-tile pipeline (geo_pipeline, an ensemble batched up to 4: geo_decode, python, "
    "dynamic batching up to 4, 4 ms, 1 instance -> the ensemble tensor tile_grid fans out to "
    "geo_enrich, python BLS, async def execute, 2 instances, which sends one async_exec() call "
    "per cell (4) to geo_lookup, python, 1 instance, max_batch_size 0, and awaits them with "
    "asyncio.gather, and to geo_render, python, 2 instances, about 300 ms) under two id-less "
    "gRPC clients at constant concurrency (each sends again as soon as it is answered)"
)
_GEO_HANG = Injection(
    5,
    1,
    {"geo_fault": "lookup_hang", "hang_s": 300},
    60,
    "the first geo_lookup call of this request sleeps 300 s",
)
_GEO_HANG_TEXT = (
    "one request whose first geo_lookup call never returns (a key-value store connection that "
    "never answers): geo_lookup's only instance is held, its geo_enrich instance awaits the "
    "gathered calls forever, the other geo_enrich instance's calls queue behind it at "
    "geo_lookup, and every later tile waits"
)
_GEO_NOTE = (
    "One hang, one alert: `hung_request` is expected on geo_enrich, the BLS parent whose "
    "instance waits (the model the ensemble step is stuck in), and it must name geo_lookup, "
    "the call that never returns (`mentions` in expected.json), as in ocr_backbone_hang and "
    "ch_leaf_hang. `bls_call_hung` needs the in-model library, which these models do not use."
)
_GEO_MISWIRED_NOTE = (
    "The miswired config is the shipped one with one edit: to give each consumer of GRID its "
    "own ensemble tensor, geo_decode's output_map names GRID twice ('grid_for_enrich', "
    "'grid_for_render'). output_map is a protobuf map: the second entry replaces the first, so "
    "'grid_for_enrich' is never written and geo_enrich's input is not connected. The correct "
    "fan-out (both consumers reading 'tile_grid') is what every other geo_* scenario serves."
)
_GEO = (
    Scenario(
        "geo_healthy",
        "geo",
        f"{_GEO_PIPELINE}, verbose log: the twin of every geo_* fault",
        (),
    ),
    Scenario(
        "geo_lookup_hang",
        "geo",
        f"{_GEO_PIPELINE}; {_GEO_HANG_TEXT}; verbose log",
        (("hung_request", "geo_enrich"),),
        injections=(_GEO_HANG,),
        note=_GEO_NOTE,
    ),
    Scenario(
        "geo_lookup_hang_quiet",
        "geo",
        f"{_GEO_PIPELINE}; without --log-verbose and without trace files: {_GEO_HANG_TEXT}",
        (("model_stalled", "geo_lookup"),),
        log_verbose=0,
        trace=False,
        injections=(_GEO_HANG,),
    ),
    Scenario(
        "geo_fanout_miswired",
        "geo",
        f"{_GEO_PIPELINE}; model control explicit: 5 s in, an edited geo_pipeline config whose "
        "geo_decode step maps its GRID output to two ensemble tensors (one per consumer) is "
        "written into the served repository and the ensemble is loaded again",
        (("ensemble_fanout", "geo_pipeline"),),
        model_control="explicit",
        injections=(
            Injection(
                5,
                1,
                {},
                60,
                "deploy a geo_pipeline config that maps GRID twice and load it",
                "swap_config",
                "geo_pipeline",
                source="variants/geo/geo_pipeline.miswired.pbtxt",
            ),
        ),
        note=_GEO_MISWIRED_NOTE,
    ),
    Scenario(
        "geo_lookup_saturated",
        "geo",
        f"{_GEO_PIPELINE}; 5 s in, four more clients send 'detailed' tiles for 15 s, each again "
        "as soon as it is answered: every such geo_enrich request fans out 8 geo_lookup calls "
        "of 60 ms (instead of 4 of 3 ms) while both geo_enrich instances are busy, so "
        "geo_lookup's one instance is sent up to 16 calls at a time (each stub's asyncio "
        "executor runs 6 async_exec calls at once on this 2-core host) and the children queue "
        "behind the parents that wait on them",
        (("instance_saturation", "geo_lookup"),),
        injections=(
            Injection(
                5,
                4,
                {"geo_fault": "fanout", "fanout": 8, "lookup_ms": 60},
                10,
                "4 more clients, 8 lookups of 60 ms per tile, each resending for 15 s",
                repeat_s=15,
            ),
        ),
    ),
    Scenario(
        "geo_self_call_deadlock",
        "geo",
        f"{_GEO_PIPELINE}; 5 s in, two concurrent requests take geo_enrich's 'refine' path: "
        "0.5 s into their execute each calls geo_enrich (itself) through BLS while both "
        "geo_enrich instances are held by the two callers, so neither call can start; every "
        "later tile queues at geo_enrich",
        (("bls_deadlock", "geo_enrich"),),
        injections=(
            Injection(5, 2, {"geo_fault": "self_call"}, 60, "geo_enrich async_exec()s itself"),
        ),
    ),
    Scenario(
        "geo_render_raises",
        "geo",
        f"{_GEO_PIPELINE}; GEO_RENDER_GLYPHS=missing in the server's environment (a build "
        "shipped without its glyph atlas): geo_render's execute raises RuntimeError on every "
        "request when it places the labels, after its 300 ms of raster work, so every tile "
        "fails after decode and enrich succeeded",
        (("model_failing", "geo_render"),),
        env={"GEO_RENDER_GLYPHS": "missing"},
    ),
)


_MED_PIPELINE = (
    "the medical image triage pipeline (med_gateway, python BLS, 3 instances, batched input "
    "up to 4 without a dynamic batcher, synchronous exec() children without ids built with "
    "trace=request.trace(): med_normalize, python, dynamic batching, preferred 4 and 8, 5 ms, "
    "up to 16, 2 instances -> med_classifier, python, versions 1 and 3 both served "
    "(version_policy specific), 2 instances each, batched up to 8, the gateway pinning "
    "version 3 with model_version -> med_report, python, 1 instance, max_batch_size 0, "
    "STRING outputs) under three id-less HTTP clients sending batches of 1 to 4 FP16 scans, "
    "each also calling med_classifier version 1 directly after every other request"
)


def _med_hang(at_s: float) -> Injection:
    return Injection(
        at_s,
        1,
        {"med_fault": "classify_hang", "hang_s": 300},
        60,
        "med_classifier version 3 sleeps 300 s in execute for this request",
    )


_MED_HANG = _med_hang(5)
_MED_SLOW_NORMALIZE = Injection(
    5,
    1,
    {"batch_delay_s": 2},
    60,
    "reload med_normalize with batch_delay_s=2 (repository API): every batch takes 2 s",
    "reload",
    "med_normalize",
)
_MED_REPORT_LOCALE = Injection(
    5,
    1,
    {"locale": "de-CH"},
    60,
    "reload med_report with locale=de-CH (repository API): every request is answered "
    "with an error response",
    "reload",
    "med_report",
)
_MED_GATEWAY_COLD = Injection(
    5,
    1,
    {"cold_start_s": 4},
    60,
    "reload med_gateway with cold_start_s=4 (repository API)",
    "reload",
    "med_gateway",
)
_MED_VERSIONS_NOTE = (
    "Both versions of med_classifier run instances named med_classifier_0_0 and "
    "med_classifier_0_1; only version 3 (pinned by med_gateway) is stuck, version 1 keeps "
    "answering the viewer's direct calls: the finding must name med_classifier as the child "
    "med_gateway waits on, and say that it is version 3 (the same-named instance of version "
    "1 is healthy): both are `mentions` in expected.json."
)
_MED_QUIET_NOTE = (
    "Without the verbose log a hung execute leaves no line, so two hung requests are sent "
    "(5 s and 6 s in): they hold both version-3 instances of med_classifier, and every later "
    "med_gateway request queues at version 3 (nv_inference_pending_request_count of "
    "med_classifier version 3 rises and stays up, its success counter stops) while version 1 "
    "keeps serving the viewer. What metrics allow: `model_stalled` on med_classifier."
)
_MED_REPORT_NOTE = (
    "One bug, one alert: `model_failing` is expected on med_report, the model that refuses "
    "its requests (med_gateway only relays the error). Nothing is raised and no stub dies: "
    "`stub_unhealthy` on med_report is `absent` in expected.json."
)

_MED = (
    Scenario(
        "med_healthy",
        "med",
        f"{_MED_PIPELINE}; model control explicit, verbose log: the twin of every med_* fault",
        (),
        clients=3,
        model_control="explicit",
    ),
    Scenario(
        "med_healthy_iso",
        "med",
        f"{_MED_PIPELINE}; model control explicit, verbose log with --log-format ISO8601: the "
        "twin of med_gateway_cold_start_iso",
        (),
        clients=3,
        model_control="explicit",
        log_format="ISO8601",
    ),
    Scenario(
        "med_classifier_v3_hang",
        "med",
        f"{_MED_PIPELINE}; model control explicit; 5 s in, one request whose med_classifier "
        "version 3 execute sleeps 300 s (a stuck forward pass): the med_gateway instance that "
        "sent it waits in exec() while version 1 keeps serving the viewer; verbose log",
        (("hung_request", "med_gateway"),),
        clients=3,
        model_control="explicit",
        injections=(_MED_HANG,),
        note=_MED_VERSIONS_NOTE,
    ),
    Scenario(
        "med_classifier_hang_quiet",
        "med",
        f"{_MED_PIPELINE}; model control explicit; without --log-verbose and without trace "
        "files: 5 s and 6 s in, one request each whose med_classifier version 3 execute "
        "sleeps 300 s: both version-3 instances are held",
        (("model_stalled", "med_classifier"),),
        clients=3,
        model_control="explicit",
        log_verbose=0,
        trace=False,
        injections=(_MED_HANG, _med_hang(6)),
        note=_MED_QUIET_NOTE,
    ),
    Scenario(
        "med_normalize_slow_saturation",
        "med",
        f"{_MED_PIPELINE}; model control explicit; 5 s in, med_normalize is loaded again "
        "through the repository API with batch_delay_s=2 (a denoising step that fell back to "
        "the CPU): every batch takes 2 s, both instances are busy and the gateways' calls "
        "queue behind them; verbose log",
        (("instance_saturation", "med_normalize"),),
        clients=3,
        model_control="explicit",
        injections=(_MED_SLOW_NORMALIZE,),
    ),
    Scenario(
        "med_report_errors",
        "med",
        f"{_MED_PIPELINE}; model control explicit; 5 s in, med_report is loaded again through "
        "the repository API with locale=de-CH: from then on it answers every request with an "
        "error response ('no report template for locale ...'), raising nothing, and "
        "med_gateway answers its clients an error response in turn; verbose log",
        (("model_failing", "med_report"),),
        clients=3,
        model_control="explicit",
        injections=(_MED_REPORT_LOCALE,),
        note=_MED_REPORT_NOTE,
    ),
    Scenario(
        "med_gateway_cold_start_iso",
        "med",
        f"{_MED_PIPELINE}; `--log-format ISO8601` (second resolution), model control explicit; "
        "5 s in, med_gateway is loaded again through the repository API with cold_start_s=4: "
        "the first execute of each of its three new instances takes 4 s",
        (("cold_start", "med_gateway"),),
        clients=3,
        model_control="explicit",
        log_format="ISO8601",
        injections=(_MED_GATEWAY_COLD,),
    ),
)


_WARM_PIPELINE = (
    "the product-search pipeline (warm_gateway, python BLS, synchronous exec(), 2 instances, "
    "no batching, no model_warmup, calls warm_encoder, python, dynamic batching up to 8, 3 ms, "
    "2 instances, model_warmup of 5 executes per instance (zero sample x3, random batch of 4 "
    "x2) that pays its 3 s lazy set-up during the load, then warm_ranker, python, 1 instance, "
    "no batching, model_warmup of 2 executes that pays its 1 s set-up, children without ids "
    "built with trace=request.trace()) under three id-less gRPC clients; model control "
    "explicit"
)


def _warm_reload(at_s: float, what: str, **params: str | int | float) -> Injection:
    return Injection(
        at_s, 1, params, 90, f"reload warm_encoder with {what}", "reload", "warm_encoder"
    )


_WARM_SLOW = _warm_reload(
    5,
    "warmup_step_s=1 (repository API): each of the new copy's warmup executes sleeps 1 s",
    warmup_step_s=1,
)
_WARM_HANGS = _warm_reload(
    5,
    "warmup_hang_s=300 (repository API): the new copy's first warmup execute sleeps 300 s",
    warmup_hang_s=300,
)
_WARM_RAISES = _warm_reload(
    5,
    "warmup_fail=1 (repository API): the new copy's first warmup execute raises",
    warmup_fail=1,
)
_WARM_ONE_RAISES = _warm_reload(
    5,
    "warmup_fail=warm_encoder_0_1 (repository API): the first warmup execute of the new "
    "copy's warm_encoder_0_1 raises, warm_encoder_0_0's warmup succeeds",
    warmup_fail="warm_encoder_0_1",
)
_WARM_RANKER_RAISES = Injection(
    5,
    1,
    {"warmup_fail": 1},
    90,
    "reload warm_ranker with warmup_fail=1 (repository API): the new copy's first warmup "
    "execute raises",
    "reload",
    "warm_ranker",
)
_WARM_UNWARMED = Injection(
    5,
    1,
    {},
    90,
    "warm_ranker's config.pbtxt replaced by one without model_warmup whose set-up takes 4 s, "
    "then loaded again",
    "swap_config",
    "warm_ranker",
    source="variants/warm/warm_ranker_unwarmed.pbtxt",
)
_WARM_SLOW_NOTE = (
    "'healthy' in expected.json: the reload's warmup took long but finished, the old copy "
    "served meanwhile and no client waited on it; nothing for a user to act on (a load that "
    "ends is not stuck, and warmup executes run before 'successfully loaded', so no client "
    "paid a cold start)."
)
_WARM_HANGS_NOTE = (
    "The server environment sets WARM_ENCODER_SETUP_S=0, so warm_encoder's first load (with "
    "its warmup) takes well under a second: model_load_stuck's bar (ten times the model's "
    "last completed load, at least 10 s) is passed within the window. The stuck execute is a "
    "warmup request no client sent: a user must be told that the load is stuck, not that a "
    "client request hangs."
)
_WARM_CRASH_NOTE = (
    "On Triton 2.51 a warmup that fails on an instance of a model of two instances, during a "
    "reload under load, often crashes the server: 'model 'warm_encoder' instance "
    "warm_encoder_0_1 failed to run warmup sample 'zeros_single'', two 'non-pinned memory "
    "deallocation' lines (the warmup sample's buffers freed), then 'Signal (11) received.' "
    "(unstamped) and a backtrace in libtritonserver, before any 'failed to load' line (6 of "
    "7 tries: 2 of 3 of warm_warmup_raises, where both instances fail, 2 of 2 of this "
    "scenario, one on a two-instance warm_ranker, one without trace files; a one-instance "
    "warm_ranker's failed warmup failed its load cleanly, 1 of 1: warm_ranker_warmup_raises). "
    "A re-recording may not crash: then only model_load_failed is expected. A user must be "
    "told that the server crashed (target_down) and that warm_encoder's reload had just "
    "failed its warmup, the crash's trigger (model_load_failed: each instance's 'failed to "
    "run warmup sample' line and the python backend's error line with the RuntimeError are "
    "in the log)."
)
_WARM_RAISES_NOTE = (
    "The recording kept is the one of three in which Triton 2.51 did not crash: both "
    "instances' 'failed to run warmup sample' lines 33 ms apart, then 'failed to load "
    "'warm_encoder' version 1: Invalid argument: failed to run warmup sample ...'. In the two "
    "others the server died with SIGSEGV right after an instance's 'failed to run warmup "
    "sample' line (warm_warmup_raises_one is such a crash). A re-recording that crashes "
    "expects target_down as well."
)
_WARM = (
    Scenario(
        "warm_healthy",
        "warm",
        f"{_WARM_PIPELINE}; verbose log: the twin of every warm_* fault",
        (),
        clients=3,
        model_control="explicit",
    ),
    Scenario(
        "warm_healthy_iso",
        "warm",
        f"{_WARM_PIPELINE}; verbose log, --log-format ISO8601: the healthy twin on whole seconds",
        (),
        clients=3,
        model_control="explicit",
        log_format="ISO8601",
    ),
    Scenario(
        "warm_reload_slow_warmup",
        "warm",
        f"{_WARM_PIPELINE}; 5 s in, warm_encoder is loaded again through the repository API "
        "with a new config parameter warmup_step_s=1: each of the new copy's warmup executes "
        "takes 1 s more, so its load takes about 8 s (slow, but it ends) while the old copy "
        "serves; verbose log",
        (),
        clients=3,
        model_control="explicit",
        injections=(_WARM_SLOW,),
        note=_WARM_SLOW_NOTE,
    ),
    Scenario(
        "warm_warmup_hangs",
        "warm",
        f"{_WARM_PIPELINE}; warm_encoder's set-up 0 s (WARM_ENCODER_SETUP_S=0); 5 s in, "
        "warm_encoder is loaded again through the repository API with a new config parameter "
        "warmup_hang_s=300: the new copy's first warmup execute never returns within the "
        "window, so the load never ends while the old copy serves; verbose log",
        (("model_load_stuck", "warm_encoder"),),
        clients=3,
        model_control="explicit",
        env={"WARM_ENCODER_SETUP_S": "0"},
        injections=(_WARM_HANGS,),
        duration_s=35.0,
        note=_WARM_HANGS_NOTE,
    ),
    Scenario(
        "warm_warmup_raises",
        "warm",
        f"{_WARM_PIPELINE}; 5 s in, warm_encoder is loaded again through the repository API "
        "with a new config parameter warmup_fail=1: the first warmup execute of each of the "
        "new copy's two instances raises RuntimeError, so Triton fails the load and the old "
        "copy keeps serving (in two of the three recordings made, Triton 2.51 crashed with "
        "SIGSEGV instead, as in warm_warmup_raises_one); verbose log",
        (("model_load_failed", "warm_encoder"),),
        clients=3,
        model_control="explicit",
        injections=(_WARM_RAISES,),
        note=_WARM_RAISES_NOTE,
    ),
    Scenario(
        "warm_warmup_raises_one",
        "warm",
        f"{_WARM_PIPELINE}; 5 s in, warm_encoder is loaded again through the repository API "
        "with a new config parameter warmup_fail=warm_encoder_0_1: the first warmup execute "
        "of the new copy's second instance raises RuntimeError while the first instance "
        "warms up fine (Triton 2.51 crashes with SIGSEGV all the same); verbose log",
        (("target_down", ""), ("model_load_failed", "warm_encoder")),
        clients=3,
        model_control="explicit",
        injections=(_WARM_ONE_RAISES,),
        note=_WARM_CRASH_NOTE,
    ),
    Scenario(
        "warm_ranker_warmup_raises",
        "warm",
        f"{_WARM_PIPELINE}; 5 s in, warm_ranker (1 instance) is loaded again through the "
        "repository API with a new config parameter warmup_fail=1: the new copy's first "
        "warmup execute raises RuntimeError, so Triton fails the load; verbose log",
        (("model_load_failed", "warm_ranker"),),
        clients=3,
        model_control="explicit",
        injections=(_WARM_RANKER_RAISES,),
    ),
    Scenario(
        "warm_cold_start_unwarmed",
        "warm",
        f"{_WARM_PIPELINE}; 5 s in, warm_ranker's config.pbtxt is replaced by one without "
        "model_warmup whose lazy set-up takes 4 s, and warm_ranker is loaded again through "
        "the repository API: the first client request after the load pays the 4 s (the twin "
        "that shows what the warmup spares); verbose log",
        (("cold_start", "warm_ranker"),),
        clients=3,
        model_control="explicit",
        injections=(_WARM_UNWARMED,),
    ),
)


_IMG_PIPELINE = (
    "the image-tagging pipeline (img_gateway, python BLS, synchronous exec() run for each "
    "request of a batch in the instance's pool of 8 threads, 2 instances, dynamic batching up "
    "to 8 (0.5 ms), calls img_preprocess, python, 4 instances, dynamic batching preferred 4 or "
    "8 (0.5 ms) up to 8, then img_tagger, python, 2 instances, no batching, children without "
    "ids built with trace=request.trace()) under eight id-less gRPC clients in a closed loop"
)
_IMG_HANG_ENV = {"IMG_PREP_HANG_INSTANCE": "img_preprocess_0_2", "IMG_PREP_HANG_AFTER_S": "5"}
"""img_preprocess_0_2 wedges 5 s after its first execute: every execute of it from then on
sleeps 300 s (only the first is ever reached: Triton sends a busy instance nothing more)."""
_IMG_SURGE = {"img_direct": 1, "img_pause_s": 0.2}
"""The surge clients send a batch of 8 thumbnails (PIXELS [8, 256]) straight to
img_preprocess (a bulk re-tagging job), pausing 0.2 s after each answer."""
_IMG_BURST = Injection(
    5,
    16,
    _IMG_SURGE,
    10,
    "16 more clients, each sending img_preprocess a batch of 8 for 10 s (0.2 s pause)",
    repeat_s=10,
)
_IMG_HANG_NOTE = (
    "One hang, one alert: the stuck batch holds requests of img_preprocess on one of its four "
    "instances (img_preprocess_0_2) for the rest of the window, while the other three serve. "
    "The clients of that batch time out (10 s); img_gateway's execute that waits on it gives "
    "up after its guard (20 s) and answers an error (to clients that are gone), so at the "
    "window's end only img_preprocess holds the hung requests: a user must be told that "
    "model and the instance."
)
_IMG_ERRORS_NOTE = (
    "About 3% of img_tagger's executes raise RuntimeError (a label lookup): the clients of "
    "those requests get the error through img_gateway; the other 97% are served. An "
    "intermittent exception that reaches clients must be told (the traceback is in the log "
    "and /metrics counts img_tagger's failures), at warning: the model serves most requests."
)
_IMG_CREEP_NOTE = (
    "No request fails: every execute of each img_preprocess instance takes 5 ms longer than "
    "its previous one (44 ms a batch in the first 3 s, 373 ms in the last 3 s). The queue "
    "builds at img_gateway, not img_preprocess: each img_gateway execute waits for its "
    "batch's img_preprocess calls, so both img_gateway instances are busy 27.8 s of the 30 "
    "and its queue holds 1 to 4 requests, while img_preprocess never has more than 2 or 3 "
    "of its 4 instances busy (all 4 for 0.1 s). A user must be told that img_gateway "
    "cannot keep up because its img_preprocess calls keep getting slower (the finding must "
    "name img_preprocess), not that img_preprocess's instances are all busy."
)
_IMG_QUIET_HANG_NOTE = (
    "In this recording the wedged batch of img_preprocess_0_2 held calls of both "
    "img_gateway instances, so for 19 s (until img_gateway's 20 s guard answered them an "
    "error) nothing completed: img_gateway's nv_inference_pending_request_count 3 then 11, "
    "every model's nv_inference_exec_count flat; eight clients timed out. Then the pipeline "
    "served again on img_gateway's two instances and img_preprocess's other three. Without "
    "the verbose log the hung batch itself is invisible (the pending gauge counts queued "
    "requests, not executing ones, and the statistics count completions), so what a user can "
    "and must be told is the 19 s stall of img_gateway (model_stalled)."
)
_IMG_REJECT_NOTE = (
    "Served with --model-config-name=bounded: img_preprocess's configs/bounded.pbtxt bounds "
    "its queue to 4 requests. Trace files are off: on 2.51 a traced BLS child rejected at "
    "enqueue can crash tritonserver (tts_queue_full)."
)
_IMG_SURGE_NOTE = (
    "The same surge as img_preprocess_queue_full, without the queue bound: the four instances "
    "absorb it (a batch of 8 costs about 11 ms), nothing is rejected and nothing waits long. "
    "Nothing of warning or above is expected."
)
_IMG = (
    Scenario(
        "img_healthy",
        "img",
        f"{_IMG_PIPELINE}; verbose log: the twin of every img_* fault",
        (),
        clients=8,
    ),
    Scenario(
        "img_preprocess_hang",
        "img",
        f"{_IMG_PIPELINE}; IMG_PREP_HANG_INSTANCE=img_preprocess_0_2, IMG_PREP_HANG_AFTER_S=5: "
        "5 s after its first execute, img_preprocess_0_2's execute blocks (300 s) on the batch "
        "it holds, and Triton sends it nothing more; the other three instances keep serving; "
        "the clients of that batch time out (10 s), img_gateway answers them an error after "
        "its 20 s guard; verbose log",
        (("hung_request", "img_preprocess"),),
        clients=8,
        env=_IMG_HANG_ENV,
        note=_IMG_HANG_NOTE,
    ),
    Scenario(
        "img_tagger_intermittent_errors",
        "img",
        f"{_IMG_PIPELINE}; IMG_TAGGER_FAIL_RATE=0.03: img_tagger raises RuntimeError on about "
        "3% of its requests for the whole window, the error goes back to the client through "
        "img_gateway; verbose log",
        (("model_failing", "img_tagger"),),
        clients=8,
        env={"IMG_TAGGER_FAIL_RATE": "0.03"},
        note=_IMG_ERRORS_NOTE,
    ),
    Scenario(
        "img_preprocess_latency_creep",
        "img",
        f"{_IMG_PIPELINE}; IMG_PREP_CREEP_MS=5: each execute of an img_preprocess instance "
        "takes 5 ms longer than its previous one, no errors, until the queue builds (at "
        "img_gateway, whose executes wait on those calls); verbose log",
        (("instance_saturation", "img_gateway"),),
        clients=8,
        env={"IMG_PREP_CREEP_MS": "5"},
        note=_IMG_CREEP_NOTE,
    ),
    Scenario(
        "img_preprocess_queue_full",
        "img",
        f"{_IMG_PIPELINE}; img_preprocess's queue bounded to 4 (configs/bounded.pbtxt, "
        "--model-config-name=bounded); 5 s in, 16 more clients send img_preprocess a batch of "
        "8 thumbnails each for 10 s (0.2 s pause): requests beyond the 4 waiting are rejected, "
        "the surge's and img_gateway's children alike; verbose log, no trace files",
        (("requests_rejected", "img_preprocess"),),
        clients=8,
        trace=False,
        server_args=("--model-config-name=bounded",),
        injections=(_IMG_BURST,),
        note=_IMG_REJECT_NOTE,
    ),
    Scenario(
        "img_healthy_surge",
        "img",
        f"{_IMG_PIPELINE}; 5 s in, the surge of img_preprocess_queue_full (16 more clients, a "
        "batch of 8 thumbnails each to img_preprocess for 10 s, 0.2 s pause) against the "
        "unbounded queue: absorbed; verbose log, no trace files",
        (),
        clients=8,
        trace=False,
        injections=(_IMG_BURST,),
        note=_IMG_SURGE_NOTE,
    ),
    Scenario(
        "img_preprocess_hang_quiet",
        "img",
        f"{_IMG_PIPELINE}; without --log-verbose, no trace files: img_preprocess_hang "
        "(img_preprocess_0_2 blocks on its batch 5 s after its first execute, the other three "
        "instances serve)",
        (("model_stalled", "img_gateway"),),
        clients=8,
        log_verbose=0,
        trace=False,
        env=_IMG_HANG_ENV,
        note=_IMG_QUIET_HANG_NOTE,
    ),
)


_XL_PIPELINE = (
    "the translation pipeline (xl_gateway, python BLS, async def execute, 2 instances, no "
    "batching, fans out one async_exec() per sentence to xl_translate, python, dynamic "
    "batching up to 8, 3 ms, 2 instances, gathered with asyncio.gather and merged in the "
    "gather's done-callback, then one async_exec() to xl_detok, python, 1 instance, no "
    "batching; children without ids built with trace=request.trace()) under three id-less "
    "gRPC clients; Triton in OpenTelemetry trace mode (OTLP/HTTP spans to the capture, no "
    "trace file)"
)
_XL_HANG = Injection(
    5,
    1,
    {"xl_fault": "hang"},
    10,
    "the first sentence's xl_translate call carries hang_s=300: its batch sleeps 300 s",
)
_XL_HANG_TEXT = (
    "5 s in, one request (2 sentences) whose first sentence's xl_translate call makes its "
    "batch sleep 300 s (a stuck decode): that xl_translate instance and the xl_gateway "
    "instance awaiting the gather are held (Triton runs one async execute per instance at a "
    "time), as is any other gateway request with a sentence in the same batch; the client "
    "gives up after 10 s"
)
_XL_QUIET_HANG_NOTE = (
    "'healthy' in expected.json means: no finding is expected, not that nothing is wrong. "
    "Without the verbose log the hung request leaves almost nothing in the window: Triton 2.51 "
    "posts an OpenTelemetry span when a request ends, so the hung request's trace (its gRPC "
    "InferRequest span, its xl_gateway span, both xl_translate spans, in the stuck batch, "
    "and their compute spans) never posts a single span; /metrics and /v2/models/stats "
    "count completions only, and the pending gauges stay 0 because the second instance of "
    "xl_gateway and of xl_translate absorbs the three clients' load. The one sign is in the "
    "spans' triton.trace_id attribute, a counter over every traced request of the server "
    "(BLS children included): the hung request's three numbers are never posted while later "
    "ones are, but no posted span says which model they belonged to. Holding both gateway "
    "instances (xl_translate_stall_quiet) is what model_stalled can see."
)
_XL_CALLBACK = Injection(
    5,
    1,
    {"xl_fault": "callback"},
    10,
    "the gather's done-callback raises KeyError (glossary 'customer-acme' missing)",
)
_XL = (
    Scenario(
        "xl_healthy",
        "xl",
        f"{_XL_PIPELINE}; verbose log: the twin of every xl_* fault",
        (),
        clients=3,
        trace_mode="opentelemetry",
    ),
    Scenario(
        "xl_healthy_quiet",
        "xl",
        f"{_XL_PIPELINE}; without --log-verbose (spans and metrics only): the quiet twin",
        (),
        clients=3,
        trace_mode="opentelemetry",
        log_verbose=0,
    ),
    Scenario(
        "xl_translate_hang",
        "xl",
        f"{_XL_PIPELINE}; verbose log; {_XL_HANG_TEXT}",
        (("hung_request", "xl_gateway"),),
        clients=3,
        trace_mode="opentelemetry",
        injections=(_XL_HANG,),
    ),
    Scenario(
        "xl_translate_hang_quiet",
        "xl",
        f"{_XL_PIPELINE}; without --log-verbose (spans and metrics only); {_XL_HANG_TEXT}. "
        "Nothing of warning or above is expected (PROVENANCE.md says why)",
        (),
        clients=3,
        trace_mode="opentelemetry",
        log_verbose=0,
        injections=(_XL_HANG,),
        note=_XL_QUIET_HANG_NOTE,
    ),
    Scenario(
        "xl_translate_stall_quiet",
        "xl",
        f"{_XL_PIPELINE}; without --log-verbose (spans and metrics only); 5 s in, two "
        "concurrent requests whose first sentence's xl_translate batch never returns (300 s): "
        "each holds one of the two xl_gateway instances (Triton runs one async execute per "
        "instance at a time), so every later request queues at xl_gateway and its client "
        "gives up after 10 s",
        (("model_stalled", "xl_gateway"),),
        clients=3,
        trace_mode="opentelemetry",
        log_verbose=0,
        injections=(replace(_XL_HANG, count=2),),
    ),
    Scenario(
        "xl_callback_error",
        "xl",
        f"{_XL_PIPELINE}; verbose log; 5 s in, one request whose merge, in the gather's "
        "done-callback, raises KeyError: asyncio logs 'Exception in callback ...', the future "
        "the request awaits is never resolved, no response and no error is counted, the "
        "client gives up after 10 s",
        (("callback_error", "xl_gateway"),),
        clients=3,
        trace_mode="opentelemetry",
        injections=(_XL_CALLBACK,),
    ),
    Scenario(
        "xl_callback_error_quiet",
        "xl",
        f"{_XL_PIPELINE}; without --log-verbose (spans, metrics and the stubs' own output); "
        "5 s in, one request whose merge, in the gather's done-callback, raises KeyError: "
        "asyncio logs 'Exception in callback ...', the future the request awaits is never "
        "resolved, no response and no error is counted, the client gives up after 10 s",
        (("callback_error", "xl_gateway"),),
        clients=3,
        trace_mode="opentelemetry",
        log_verbose=0,
        injections=(_XL_CALLBACK,),
    ),
    Scenario(
        "xl_detok_leak",
        "xl",
        f"{_XL_PIPELINE}; verbose log; XL_DETOK_LEAK=1: xl_detok appends the ids it emits "
        "to its kept carry buffer instead of replacing it, so TEXT_IDS (and the gateway's "
        "TGT) about doubles on every call until the buffer passes 65536 ids and is cut back",
        (("shape_growth", "xl_detok"),),
        clients=3,
        trace_mode="opentelemetry",
        env={"XL_DETOK_LEAK": "1"},
    ),
    Scenario(
        "xl_translate_cold_start",
        "xl",
        f"{_XL_PIPELINE}; verbose log; XL_TRANSLATE_SETUP_S=4: each xl_translate instance's "
        "first execute after the load pays a 4 s lazy set-up; the first requests wait",
        (("cold_start", "xl_translate"),),
        clients=3,
        trace_mode="opentelemetry",
        env={"XL_TRANSLATE_SETUP_S": "4"},
    ),
    Scenario(
        "xl_translate_cold_start_quiet",
        "xl",
        f"{_XL_PIPELINE}; without --log-verbose (spans and metrics only); "
        "XL_TRANSLATE_SETUP_S=4: each xl_translate instance's first execute after the load "
        "pays a 4 s lazy set-up; the first requests wait",
        (("cold_start", "xl_translate"),),
        clients=3,
        trace_mode="opentelemetry",
        log_verbose=0,
        env={"XL_TRANSLATE_SETUP_S": "4"},
    ),
)


_GEN_PIPELINE = (
    "a TensorRT-LLM-style generation repository (gen_ensemble: ensemble, decoupled, "
    "max_batch_size 8: gen_preprocessing, python, dynamic batching up to 8, 1 instance -> "
    "gen_llm, python, decoupled, dynamic batching up to 8, 1 instance, one output_ids "
    "response per token from a worker thread, about 15 ms a token, the last with the final "
    "flag -> gen_postprocessing, python, dynamic batching up to 8, 1 instance, once per "
    "token; gen_bls: python BLS, decoupled, 2 instances, calling the same three with exec() "
    "and exec(decoupled=True) inside execute, as tensorrt_llm_bls does; children without ids "
    "and without trace=request.trace())"
)
_GEN_GRPC = "three id-less gRPC streaming clients alternating gen_ensemble and gen_bls"
_GEN_HTTP = (
    "three id-less HTTP generate_stream (server-sent events) clients alternating "
    "gen_ensemble and gen_bls"
)


def _gen_stall(front_door: str, http: bool = False) -> Injection:
    params: dict[str, str | int | float] = {
        "gen_model": front_door,
        "gen_stall_after": 4,
        "gen_stall_s": 300,
    }
    if http:
        params["gen_http"] = 1
    how = "HTTP generate_stream" if http else "gRPC stream"
    return Injection(
        5,
        1,
        params,
        60,
        f"one {how} to {front_door} whose gen_llm worker stops after 4 tokens (no final flag)",
    )


_GEN_STALL_NOTE = (
    "The client's stream stops after 4 of its 12 tokens and never ends (the client waits "
    "up to 60 s, past the window): what stopped is gen_llm's generation (its worker waits "
    "on a KV block nobody frees; its execute had returned, so its single instance serves "
    "everyone else). A user must hear that a stream stalled, and that gen_llm is where it "
    "stopped: `stream_stalled` on the front door the client called, mentioning gen_llm "
    "(`mentions` in expected.json), as sum_lm_hang names sum_lm."
)

_GEN_KV_NOTE = (
    "gen_llm raises on the long prompts, but Triton 2.51 tells two stories. Through "
    "gen_ensemble the client gets 9 or 10 tokens, then `in ensemble 'gen_ensemble', gen_llm: "
    "KV cache exhausted: ...` and no final flag; Triton counts it in "
    '`nv_inference_request_failure{model="gen_ensemble",reason="OTHER"}` and logs '
    "`stream_infer_handler.cc:711 Failed for ID: <id_unknown>`, but nowhere the message, and "
    "gen_llm's own counters show only successes. Through gen_bls the error response never "
    "reaches the BLS: `exec(decoupled=True)` yields the tokens sent before it and then the "
    "empty final response, so gen_bls's clients get a truncated answer as a success. What a "
    "user must be told: gen_ensemble fails about a third of its streams (`model_failing` on "
    "gen_ensemble); `absent`: `model_failing` on gen_bls (it did not fail anything a counter "
    "or log line shows) and `callback_error` (no callback raised)."
)
_GEN_QUIET_NOTE = (
    "'healthy' in expected.json means: no finding is expected, not that nothing is wrong. "
    "At --log-verbose 0 a gRPC stream writes no line, and the counters count completions: "
    "the stalled stream shows only as gen_preprocessing's nv_inference_count staying at "
    "least 1 above gen_ensemble's plus gen_bls's from 5 s on (up to 4 with the streams in "
    "flight at a scrape), which needs the ensemble's steps and the BLS's calls to read "
    "(neither is in the bundle)."
)
_GEN_HTTP_STALL_NOTE = (
    "The client's HTTP stream stops after 4 of its 12 tokens: gen_llm's worker waits on a KV "
    "block nobody frees, and its single instance serves everyone else. The stream's `HTTP "
    "request: 2 /v2/models/gen_ensemble/generate_stream` line names the front door, but no "
    "line ends an HTTP stream or counts its responses, and nothing ties gen_llm's responses "
    "to it; gen_ensemble's completions (/metrics, /v2/models/stats) stay one behind its "
    "`generate_stream` lines from 5 s on. A user must hear that a gen_ensemble stream "
    "stalled (`stream_stalled` on gen_ensemble; naming gen_llm is not required here). The "
    "client read 4 events and then nothing until the server's shutdown closed the "
    "connection after the window (its outcome reads `ok` at 30.9 s: an SSE stream has no "
    "final event to miss)."
)

_GEN = (
    Scenario(
        "gen_healthy",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_GRPC}; verbose log: the twin of every gen_* fault",
        (),
        clients=3,
    ),
    Scenario(
        "gen_llm_stall",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_GRPC}; 5 s in, one more gRPC stream to gen_ensemble "
        "with gen_stall_after=4: gen_llm's worker sends 4 tokens, then waits 300 s for a KV "
        "block nobody frees, never sending the final flag; verbose log",
        (("stream_stalled", "gen_ensemble"),),
        clients=3,
        injections=(_gen_stall("gen_ensemble"),),
        note=_GEN_STALL_NOTE,
    ),
    Scenario(
        "gen_llm_stall_bls",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_GRPC}; 5 s in, one more gRPC stream to gen_bls with "
        "gen_stall_after=4 (forwarded to gen_llm): gen_llm's worker sends 4 tokens, then waits "
        "300 s, never sending the final flag; the gen_bls instance reading that stream is "
        "held; verbose log",
        (("stream_stalled", "gen_bls"),),
        clients=3,
        injections=(_gen_stall("gen_bls"),),
        note=_GEN_STALL_NOTE,
    ),
    Scenario(
        "gen_llm_kv_errors",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_GRPC}; GEN_LLM_KV_TOKENS=22: a sequence whose prompt "
        "plus generated tokens reach 22 (prompts of 11 or 12 words, about one in five) raises "
        "RuntimeError in gen_llm's worker after 10 or 11 tokens; the worker sends an error "
        "response, then the final flag; verbose log",
        (("model_failing", "gen_ensemble"),),
        clients=3,
        env={"GEN_LLM_KV_TOKENS": "22"},
        note=_GEN_KV_NOTE,
    ),
    Scenario(
        "gen_postprocessing_leak",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_GRPC}; GEN_POST_LEAK=1: gen_postprocessing appends "
        "every piece it decodes to its instance's buffer instead of replacing it and answers "
        "the whole buffer: OUTPUT grows by one piece on every call (cut back past 4096); "
        "verbose log",
        (("shape_growth", "gen_postprocessing"),),
        clients=3,
        env={"GEN_POST_LEAK": "1"},
        note="gen_postprocessing keeps state across requests; the front doors only pass its "
        "OUTPUT on (`absent`: `shape_growth` on gen_ensemble and gen_bls).",
    ),
    Scenario(
        "gen_healthy_http",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_HTTP}; verbose log: HTTP streams write no gRPC stream lines",
        (),
        clients=3,
        streams="http",
    ),
    Scenario(
        "gen_llm_stall_http",
        "gen",
        f"{_GEN_PIPELINE} under {_GEN_HTTP}; 5 s in, one more HTTP generate_stream to "
        "gen_ensemble with gen_stall_after=4: gen_llm's worker sends 4 tokens, then waits "
        "300 s, never sending the final flag; verbose log",
        (("stream_stalled", "gen_ensemble"),),
        clients=3,
        streams="http",
        injections=(_gen_stall("gen_ensemble", http=True),),
        note=_GEN_HTTP_STALL_NOTE,
    ),
    Scenario(
        "gen_llm_stall_quiet",
        "gen",
        f"without --log-verbose and trace files: {_GEN_PIPELINE} under {_GEN_GRPC}; 5 s in, "
        "one more gRPC stream to gen_ensemble with gen_stall_after=4: gen_llm's worker sends "
        "4 tokens, then waits 300 s, never sending the final flag",
        (),
        clients=3,
        log_verbose=0,
        trace=False,
        injections=(_gen_stall("gen_ensemble"),),
        note=_GEN_QUIET_NOTE,
    ),
)


_OPS_PIPELINE = (
    "the document-moderation pipeline (ops_router, python BLS, async def execute, 2 "
    "instances, no batching: one async_exec() per page to ops_classify, python, dynamic "
    "batching up to 8 (2 ms), 2 instances, gathered with asyncio.gather and merged in the "
    "gather's done-callback, then one async_exec() to ops_enrich, python, 1 instance, no "
    "batching, about 20 ms a call, awaited at most 1 s (a late enrichment is served as zeros "
    "with a logged warning, the call left to finish); beside it ops_ensemble, an ensemble of "
    "two steps, ops_classify then ops_enrich, for single pages; children without ids) under "
    "id-less gRPC clients alternating ops_router and ops_ensemble"
)
_OPS_CLIENT = {"ops_pause_s": 0.6}
"""An injected client that behaves as a background one: 0.6 s pause after each answer."""
_OPS_RAMP = (
    Injection(10, 1, _OPS_CLIENT, 10, "1 more client for 70 s", repeat_s=70),
    Injection(20, 1, _OPS_CLIENT, 10, "1 more client for 50 s", repeat_s=50),
    Injection(30, 2, _OPS_CLIENT, 10, "2 more clients for 30 s", repeat_s=30),
    Injection(40, 1, _OPS_CLIENT, 10, "1 more client for 10 s", repeat_s=10),
)
"""With the one background client: 1, 2, 3, 5, 6, 5, 3, 2, 1 clients in the ten-second
stretches from 0 to 90 s."""
_OPS_ENRICH_HANG = Injection(
    15,
    1,
    {"ops_front": "router", "enrich_hang_s": 300},
    10,
    "one ops_router request whose ops_enrich call sleeps 300 s (a policy store that never answers)",
)
_OPS_DOUBLING_ENV = {"OPS_CLASSIFY_DOUBLE_AFTER_S": "40"}
"""Each ops_classify instance's label table doubles on every execute from 40 s after its
first (about 40 s into the window), cut back to 4 past 16384."""
_OPS_CALLBACK = Injection(
    10,
    1,
    {"ops_front": "router", "ops_fault": "callback"},
    10,
    "one ops_router request whose gather done-callback raises KeyError (tenant-zeta missing "
    "from the policy table)",
)
_OPS_RELOAD = Injection(
    50,
    1,
    {"setup_s": 4},
    60,
    "reload ops_classify (repository API) with setup_s=4: each new instance's first execute "
    "takes 4 s",
    "reload",
    "ops_classify",
)
_OPS_BURST = Injection(
    30,
    10,
    {"ops_pause_s": 0.0},
    10,
    "10 more clients for 8 s, each sending again as soon as it is answered",
    repeat_s=8,
)
_OPS_TWO_FAULTS = (
    f"{_OPS_PIPELINE}; 15 s in, one ops_router request whose ops_enrich call sleeps 300 s: "
    "the enricher's only instance is held to the end, every later enrich call queues behind "
    "it (ops_router serves its verdicts without tags after its 1 s guard, ops_ensemble's "
    "clients time out); OPS_CLASSIFY_DOUBLE_AFTER_S=40: from about 40 s in, SCORES of each "
    "ops_classify instance doubles in width on every call"
)
_OPS_RAMP_NOTE = (
    "Nothing of warning or above is expected: at 6 clients the pipeline has headroom "
    "(ops_enrich, the one single-instance step, about 20 ms a call, is busy well under half "
    "the time); every request is served within 0.13 s."
)
_OPS_TWO_FAULTS_NOTE = (
    "Two faults in two branches, each owed its own finding: the hung ops_enrich call (its "
    "only instance held from 15 s to the end, every later enrich call queued behind it: "
    "hung_request on ops_enrich, naming ops_enrich_0_0 and saying its own execute is stuck, "
    "as it makes no BLS call) and ops_classify's doubling SCORES from about 40 s "
    "(shape_growth on ops_classify). What followed is true and may be told too: each "
    "ops_router request served after the 1 s guard leaves its enrich call outstanding, and "
    "each outstanding async_exec holds a thread of the router stub's default asyncio "
    "executor (min(32, cpu + 4) = 6 on this 2-core host), so after six late calls an "
    "ops_router instance cannot start its next page call and is held too (hung_request on "
    "ops_router is not false). ops_ensemble's clients time out from 15 s on."
)
_OPS_CALLBACK_COLD_NOTE = (
    "Two faults, each owed its own finding: the done-callback's KeyError (callback_error on "
    "ops_router; its instance ops_router_0_0 stays held to the end, so hung_request on it is "
    "true as well) and ops_classify's 4 s first executes after the reload (cold_start on "
    "ops_classify). Triton reloads ops_ensemble after its reloaded step; the ensemble has no "
    "set-up of its own, its first request only waited on ops_classify (`absent`: cold_start "
    "on ops_ensemble)."
)
_OPS_RELEASED_NOTE = (
    "The hang ended: ops_enrich_0_0's execute returned after 40 s (20 s to 60 s in), the "
    "queue behind it drained within a second and the pipeline was healthy to the end. A "
    "40 s stop of the enricher's only instance, which timed out 12 ops_ensemble clients and "
    "stripped the tags from ops_router's answers, is still worth a warning at the window's "
    "end (a stall that ended, model_stalled on ops_enrich), while nothing may say that "
    "anything is hung now."
)
_OPS_BURST_NOTE = (
    "Nothing of warning or above is expected: the burst took the pipeline from about 6 to "
    "45 requests a second for 8 s; ops_enrich's one instance was busy throughout with up to "
    "3 queued (ops_router's queue 6 to 10), both queues drained at once when it stopped, and "
    "every request of the burst and of the background was served (max 0.52 s against a 10 s "
    "timeout). A saturation that lasts as long as the surge that caused it and costs no "
    "error is capacity headroom (an info), not a fault."
)
_OPS_V0_NOTE = (
    "At --log-verbose 0 the hung enricher shows on /metrics (ops_enrich's pending gauge "
    "rising to 30 while its nv_inference_exec_count stays still from 15 s on: model_stalled "
    "on ops_enrich; ops_router's instances stall later too, see ops_enrich_hang_classify_"
    "growth, so model_stalled on ops_router is true). ops_classify's doubling SCORES is in no "
    "signal at this level (response shapes are verbose lines; the statistics and trace "
    "timestamps carry no shapes): it cannot be required, and the coverage notes say "
    "shape_growth cannot be seen."
)
_OPS = (
    Scenario(
        "ops_healthy_ramp",
        "ops",
        f"{_OPS_PIPELINE}; 90 s, the load ramping from 1 to 6 clients and back (1, 2, 3, 5, "
        "6, 5, 3, 2, 1 in the ten-second stretches); no fault; verbose log",
        (),
        clients=1,
        duration_s=90,
        injections=_OPS_RAMP,
        note=_OPS_RAMP_NOTE,
    ),
    Scenario(
        "ops_enrich_hang_classify_growth",
        "ops",
        f"{_OPS_TWO_FAULTS}; 90 s, four clients; verbose log",
        (("hung_request", "ops_enrich"), ("shape_growth", "ops_classify")),
        clients=4,
        duration_s=90,
        env=_OPS_DOUBLING_ENV,
        injections=(_OPS_ENRICH_HANG,),
        note=_OPS_TWO_FAULTS_NOTE,
    ),
    Scenario(
        "ops_router_callback_classify_cold",
        "ops",
        f"{_OPS_PIPELINE}; model control explicit; 10 s in, one ops_router request whose "
        "gather done-callback raises KeyError: the future it awaits is never resolved, its "
        "instance's execute never returns, the client gives up after 10 s; 50 s in, "
        "ops_classify is reloaded with setup_s=4: each new instance's first execute takes 4 "
        "s; 90 s, four clients; verbose log",
        (("callback_error", "ops_router"), ("cold_start", "ops_classify")),
        clients=4,
        duration_s=90,
        model_control="explicit",
        injections=(_OPS_CALLBACK, _OPS_RELOAD),
        note=_OPS_CALLBACK_COLD_NOTE,
    ),
    Scenario(
        "ops_enrich_hang_released",
        "ops",
        f"{_OPS_PIPELINE}; 20 s in, one ops_router request whose ops_enrich call sleeps 40 s: "
        "the enricher's only instance is held from 20 s to 60 s, every enrich call queues "
        "behind it, then the queue drains and the pipeline is healthy to the end; 90 s, four "
        "clients; verbose log",
        (("model_stalled", "ops_enrich"),),
        clients=4,
        duration_s=90,
        injections=(
            replace(
                _OPS_ENRICH_HANG,
                at_s=20,
                params={"ops_front": "router", "enrich_hang_s": 40},
                what="one ops_router request whose ops_enrich call sleeps 40 s, then returns",
            ),
        ),
        note=_OPS_RELEASED_NOTE,
    ),
    Scenario(
        "ops_healthy_burst",
        "ops",
        f"{_OPS_PIPELINE}; 30 s in, 10 more clients for 8 s, each sending again as soon as "
        "it is answered (a burst), then the four background clients alone again; 75 s; "
        "verbose log",
        (),
        clients=4,
        duration_s=75,
        injections=(_OPS_BURST,),
        note=_OPS_BURST_NOTE,
    ),
    Scenario(
        "ops_enrich_hang_classify_growth_v0",
        "ops",
        f"`--log-verbose 0` (trace files kept): {_OPS_TWO_FAULTS}; 90 s, four clients",
        (("model_stalled", "ops_enrich"),),
        clients=4,
        duration_s=90,
        log_verbose=0,
        env=_OPS_DOUBLING_ENV,
        injections=(_OPS_ENRICH_HANG,),
        note=_OPS_V0_NOTE,
    ),
)

_BG_PIPELINE = (
    "a chunked-search and live-captioning repository whose decoupled front doors answer from "
    "background threads after execute returned None (bg_stream: python, decoupled, 1 "
    "instance, no batching, each request's response sender handed to a ThreadPoolExecutor of "
    "4 workers; the worker makes one BLS exec() to bg_embed per chunk from the worker thread "
    "and sends one HITS [4] + SCORE [1] response per chunk, 3 to 6, 25 ms apart, then the "
    "final flag; bg_caption: python, decoupled, 1 instance, no batching, one daemon "
    "threading.Thread per request as Triton's repeat_int32 example, one BLS exec() to "
    "bg_embed from the thread, then 3 to 8 WORD [1] responses 30 ms apart and the final "
    "flag; bg_embed: python, dynamic batching up to 8 (2 ms), 2 instances; children without "
    "ids and without trace)"
)
_BG_GRPC = "three id-less gRPC streaming clients alternating bg_stream and bg_caption"


def _bg(model: str, count: int, params: Mapping[str, str | int | float], what: str) -> Injection:
    return Injection(5, count, {"bg_model": model, **params}, 60, what)


_BG_DIES = _bg(
    "bg_caption",
    1,
    {"bg_die_after": 2},
    "one bg_caption stream whose thread raises RuntimeError after 2 words (no final flag)",
)

_BG_DIES_NOTE = (
    "The thread's exception is the cause and the only server-side trace of it: Python's "
    "threading.excepthook prints `Exception in thread Thread-16 (_caption):` and the "
    "traceback (frames in bg_caption/1/model.py, `RuntimeError: bg_caption: decoder lost its "
    "beam at word 2`) on the stub's stderr, which lands in Triton's log without a prefix, at "
    "any verbosity. The client's stream stops after 2 words and never ends. A user must hear "
    "both: the stalled stream (`stream_stalled` on bg_caption, from the verbose stream lines) "
    "and the exception that swallowed its response (`callback_error` on bg_caption naming "
    "RuntimeError: the catalogue's 'an exception in an asyncio callback or task swallowed "
    "the response', here in a worker thread, which Python prints the same way). bg_stream "
    "and bg_embed did nothing wrong (`absent`)."
)
_BG_QUIET_NOTE = (
    "At --log-verbose 0 the stream leaves no line, and the counters cannot show it: a "
    "decoupled python model's nv_inference_count and request_success move when execute "
    "returns (the stalled request counted as a success at once). The traceback, printed "
    "whatever the verbosity, is the one witness: `callback_error` on bg_caption naming "
    "RuntimeError."
)
_BG_STREAM_NOTE = (
    "The client's stream stops without the final flag and never ends (the client waits up "
    "to 60 s, past the window); nothing is printed. bg_stream's single instance is not held "
    "(its execute returned): everything else is served. `stream_stalled` on bg_stream; "
    "bg_caption and bg_embed are not at fault (`absent`)."
)
_BG_POOL_NOTE = (
    "Triton sees bg_stream's execute return within a millisecond for every request; its "
    "instance and queue look idle. But its pool's 4 workers are all held by the slow streams "
    "(one response each, then silence), so every bg_stream request after 5 s is queued "
    "inside the model and gets no response at all: the background clients time out (10 s) "
    "and cancel, and Triton logs the cancellations but nothing reaches the model. A user "
    "must hear that bg_stream's streams stall (`stream_stalled` on bg_stream). bg_caption "
    "served every stream it was sent (`absent`: `stream_stalled` on bg_caption)."
)
_BG_CHILD_NOTE = (
    "The bg_embed batch holding the hang_s call sleeps 300 s on bg_embed_0_0 (its other "
    "instance serves everyone else); the bg_stream worker waits in exec() and its client's "
    "stream stops after one response. A user must hear the hung child, on its instance "
    "(`hung_request` on bg_embed), and that the stalled bg_stream stream waits on it "
    "(`stream_stalled` on bg_stream naming bg_embed_0_0, `mentions`). bg_caption is not at "
    "fault (`absent`)."
)

_BG = (
    Scenario(
        "bg_healthy",
        "bg",
        f"{_BG_PIPELINE} under {_BG_GRPC}; verbose log: the twin of every bg_* fault",
        (),
        clients=3,
        duration_s=35,
    ),
    Scenario(
        "bg_healthy_busy",
        "bg",
        f"{_BG_PIPELINE} under six id-less gRPC streaming clients alternating bg_stream and "
        "bg_caption (twice the usual load: up to 6 streams at once for bg_stream's pool of 4 "
        "workers); verbose log",
        (),
        clients=6,
        duration_s=35,
    ),
    Scenario(
        "bg_thread_dies",
        "bg",
        f"{_BG_PIPELINE} under {_BG_GRPC}; 5 s in, one more stream to bg_caption with "
        "bg_die_after=2: its thread sends 2 WORD responses, then raises RuntimeError (printed "
        "by threading.excepthook to the stub's stderr); the final flag is never sent; verbose "
        "log",
        (("stream_stalled", "bg_caption"), ("callback_error", "bg_caption")),
        clients=3,
        duration_s=35,
        injections=(_BG_DIES,),
        note=_BG_DIES_NOTE,
    ),
    Scenario(
        "bg_thread_dies_pool",
        "bg",
        f"{_BG_PIPELINE} under {_BG_GRPC}; 5 s in, one more stream to bg_stream with "
        "bg_die_after=2: its pool worker sends 2 HITS responses, then raises RuntimeError, "
        "which the never-read future keeps (nothing printed); the final flag is never sent; "
        "verbose log",
        (("stream_stalled", "bg_stream"),),
        clients=3,
        duration_s=35,
        injections=(
            _bg(
                "bg_stream",
                1,
                {"bg_die_after": 2},
                "one bg_stream stream whose pool worker raises after 2 responses (swallowed)",
            ),
        ),
        note=_BG_STREAM_NOTE,
    ),
    Scenario(
        "bg_no_final",
        "bg",
        f"{_BG_PIPELINE} under {_BG_GRPC}; 5 s in, two more streams to bg_stream with "
        "bg_exact=1: the exact-match shortcut sends every chunk's response and returns "
        "without sending the final flag; verbose log",
        (("stream_stalled", "bg_stream"),),
        clients=3,
        duration_s=35,
        injections=(
            _bg(
                "bg_stream",
                2,
                {"bg_exact": 1},
                "two bg_stream streams answered in full without the final flag",
            ),
        ),
        note=_BG_STREAM_NOTE,
    ),
    Scenario(
        "bg_pool_exhausted",
        "bg",
        f"{_BG_PIPELINE} under {_BG_GRPC}; 5 s in, four more streams to bg_stream with "
        "bg_hold_s=300: each worker sends one response, then waits 300 s on a slow shard, "
        "holding all 4 threads of bg_stream's pool; every later bg_stream request is queued "
        "inside the model's pool while Triton sees its execute return at once; verbose log",
        (("stream_stalled", "bg_stream"),),
        clients=3,
        duration_s=35,
        injections=(
            _bg(
                "bg_stream",
                4,
                {"bg_hold_s": 300},
                "four bg_stream streams whose workers wait 300 s after one response",
            ),
        ),
        note=_BG_POOL_NOTE,
    ),
    Scenario(
        "bg_child_hang",
        "bg",
        f"{_BG_PIPELINE} under {_BG_GRPC}; 5 s in, one more stream to bg_stream with "
        "bg_embed_hang_s=300: its second chunk's BLS call to bg_embed carries hang_s=300 and "
        "the bg_embed batch holding it sleeps 300 s (one of its 2 instances held); the "
        "worker thread waits in exec(); verbose log",
        (("hung_request", "bg_embed"), ("stream_stalled", "bg_stream")),
        clients=3,
        duration_s=35,
        injections=(
            _bg(
                "bg_stream",
                1,
                {"bg_embed_hang_s": 300},
                "one bg_stream stream whose second bg_embed call hangs 300 s",
            ),
        ),
        note=_BG_CHILD_NOTE,
    ),
    Scenario(
        "bg_thread_dies_quiet",
        "bg",
        f"without --log-verbose: {_BG_PIPELINE} under {_BG_GRPC}; 5 s in, one more stream to "
        "bg_caption with bg_die_after=2: its thread sends 2 WORD responses, then raises "
        "RuntimeError (printed by threading.excepthook); the final flag is never sent",
        (("callback_error", "bg_caption"),),
        clients=3,
        duration_s=35,
        log_verbose=0,
        injections=(_BG_DIES,),
        note=_BG_QUIET_NOTE,
    ),
)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "ocr_healthy",
            "ocr",
            "the OCR ensemble under a healthy id-less load, verbose log: the twin of every "
            "ocr_* fault",
            (),
        ),
        Scenario(
            "ocr_backbone_hang",
            "ocr",
            "one request whose det_backbone batch never returns (a stuck forward pass): its "
            "text_det instance awaits async_exec() forever; the other instance keeps serving",
            (("hung_request", "text_det"),),
            injections=(Injection(5, 1, _HANG, 60, "det_backbone sleeps 300 s in execute"),),
        ),
        Scenario(
            "ocr_cycle_deadlock",
            "ocr",
            "two concurrent requests whose det_backbone calls text_det back through BLS (A -> B "
            "-> A) while both text_det instances wait on det_backbone: the calls back can "
            "never start, and the healthy load queues behind them",
            (("bls_deadlock", "text_det"),),
            injections=(
                Injection(5, 2, {"ocr_fault": "cycle"}, 60, "det_backbone exec()s text_det"),
            ),
        ),
        Scenario(
            "ocr_cycle_deadlock_iso",
            "ocr",
            "`--log-format ISO8601` (second resolution): two concurrent requests whose "
            "det_backbone calls text_det back through BLS (A -> B -> A) while both text_det "
            "instances wait on det_backbone: the calls back can never start, and the healthy "
            "load queues behind them",
            (("bls_deadlock", "text_det"),),
            log_format="ISO8601",
            injections=(
                Injection(5, 2, {"ocr_fault": "cycle"}, 60, "det_backbone exec()s text_det"),
            ),
        ),
        Scenario(
            "ocr_callback_error",
            "ocr",
            "one request whose det_backbone result is delivered by a done-callback (in a "
            "shared helper package outside the model repository) that raises ValueError; the "
            "awaited future is never resolved, text_det waits (verbose log)",
            (("callback_error", "text_det"),),
            injections=(
                Injection(5, 1, {"ocr_fault": "callback"}, 60, "done-callback raises ValueError"),
            ),
        ),
        Scenario(
            "ocr_callback_error_quiet",
            "ocr",
            "without --log-verbose: one request whose det_backbone result is delivered by a "
            "done-callback (in a shared helper package outside the model repository) that "
            "raises ValueError; the awaited future is never resolved, text_det waits",
            (("callback_error", "text_det"),),
            log_verbose=0,
            trace=False,
            injections=(
                Injection(5, 1, {"ocr_fault": "callback"}, 60, "done-callback raises ValueError"),
            ),
        ),
        Scenario(
            "ocr_stall_quiet",
            "ocr",
            "without --log-verbose: two concurrent requests whose det_backbone batch never "
            "returns hold both text_det instances; the healthy load queues at text_det",
            (("model_stalled", "text_det"),),
            log_verbose=0,
            trace=False,
            injections=(Injection(5, 2, _HANG, 60, "det_backbone sleeps 300 s in execute"),),
        ),
        Scenario(
            "ocr_healthy_quiet",
            "ocr",
            "the OCR ensemble under a healthy id-less load, without --log-verbose: the twin "
            "of the *_quiet faults",
            (),
            log_verbose=0,
            trace=False,
        ),
        Scenario(
            "llm_healthy",
            "llm",
            "the decoupled LLM BLS pipeline streaming tokens over gRPC to id-less clients, "
            "verbose log (PRESENT grows by one row per step within each request and resets): "
            "the twin of every llm_* fault",
            (),
        ),
        Scenario(
            "llm_stream_stall",
            "llm",
            "one stream whose worker thread dies at step 3 (exception swallowed) without the "
            "final flag: the client waits with 3 pieces",
            (("stream_stalled", "llm_bls"),),
            injections=(Injection(5, 1, {"stall_after": 3}, 60, "worker dies at step 3"),),
        ),
        Scenario(
            "llm_kv_leak",
            "llm",
            "KV_LEAK=1: kv_decoder appends each step's key/value to an instance cache instead "
            "of the request's PAST, so PRESENT [2, T, 8] grows by one row per step across "
            "every request and never resets",
            (("shape_growth", "kv_decoder"),),
            env={"KV_LEAK": "1"},
        ),
        Scenario(
            "llm_cold_start",
            "llm",
            "KV_COLD_START_S=4: kv_decoder loads its weights lazily in its first execute after "
            "load (4 s); the first streams wait for it",
            (("cold_start", "kv_decoder"),),
            env={"KV_COLD_START_S": "4"},
        ),
        *_RECSYS,
        *_ASR,
        *_VISION,
        *_STATEFUL,
        *_CHAIN,
        *_RAG,
        *_FRAUD,
        *_NOISY,
        *_DOC,
        *_TTS,
        *_VID,
        *_EMB,
        *_KWS,
        *_SUM,
        *_GEO,
        *_MED,
        *_WARM,
        *_IMG,
        *_XL,
        *_GEN,
        *_OPS,
        *_BG,
    )
}

_V2_OF = (
    "doc_healthy",
    "doc_layout_hang",
    "ch_self_deadlock",
    "geo_lookup_saturated",
    "fr_parse_cold_start",
    "llm_stream_stall",
    "med_report_errors",
    "rec_thread_pool_exhaustion",
    "ocr_cycle_deadlock",
    "kws_classifier_load_hangs",
    "kws_classifier_unload_blocked",
    "tts_queue_full",
)
"""Scenarios recorded again at ``--log-verbose 2`` (a user raising the verbosity on a bad
day), everything else the same: ``<name>_v2``, with the original's expected.json."""

SCENARIOS.update(
    {
        f"{name}_v2": replace(
            SCENARIOS[name],
            name=f"{name}_v2",
            summary=f"`--log-verbose 2`: {SCENARIOS[name].summary}",
            log_verbose=2,
        )
        for name in _V2_OF
    }
)


# Round 26: the doc pipeline again, captured as users capture: scrapes every 15 s or 5 s, a
# capture that starts after the fault began (the log copied from the capture's start only),
# a server that has run for minutes before the capture. Only the capture differs.
_CAP_LATE_TEXT = (
    "the capture starts {lead:g} s after the clients (the log copied from the capture's start "
    "only: the server's start, the model loads and everything before are not in the bundle)"
)
_CAP = (
    Scenario(
        "cap_doc_healthy_15s",
        "doc",
        f"{_DOC_PIPELINE}, verbose log, a 60 s capture scraping every 15 s (Prometheus's "
        "default): the twin of cap_doc_layout_hang_15s",
        (),
        server_args=_DOC_ARGS,
        duration_s=60.0,
        interval_s=15.0,
    ),
    Scenario(
        "cap_doc_layout_hang_15s",
        "doc",
        f"{_DOC_PIPELINE}; {_DOC_HANG_TEXT}, verbose log, a 60 s capture scraping every 15 s",
        (("hung_request", "doc_router"),),
        server_args=_DOC_ARGS,
        duration_s=60.0,
        interval_s=15.0,
        injections=(Injection(5, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note=_DOC_ONE_ALERT,
    ),
    Scenario(
        "cap_doc_layout_hang_quiet_15s",
        "doc",
        f"{_DOC_PIPELINE}; without --log-verbose and without trace files: {_DOC_HANG_TEXT}; a "
        "60 s capture scraping every 15 s: /metrics and /v2/models/stats are all there is, "
        "five snapshots of each",
        (("model_stalled", "doc_layout"),),
        log_verbose=0,
        trace=False,
        server_args=_DOC_ARGS,
        duration_s=60.0,
        interval_s=15.0,
        injections=(Injection(5, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note="As doc_layout_hang_quiet: the stuck child holds the rate limiter's one R, so "
        "doc_layout's pending gauge rises while its counters stop; with a scrape every 15 s "
        "the question is how many scrapes it takes to say so.",
    ),
    Scenario(
        "cap_doc_layout_hang_late",
        "doc",
        f"{_DOC_PIPELINE}; {_DOC_HANG_TEXT}; the hang began 20 s before the capture: "
        + _CAP_LATE_TEXT.format(lead=30)
        + ", so the hung request's prepared line and its doc_layout batch's executing line "
        "are not in the bundle",
        (("model_stalled", "doc_layout"),),
        server_args=_DOC_ARGS,
        lead_s=30.0,
        log_from_start=False,
        injections=(Injection(-20, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note="Why model_stalled and not hung_request: the stuck doc_layout batch and the "
        "doc_router executes awaiting it began before the capture, so the bundle's log has "
        "none of their lines; what the window shows is what doc_layout_hang_quiet shows "
        "(doc_layout's pending gauge above zero and its counters still at every scrape, "
        "/v2/models/stats's last_inference 20 s before the first scrape), plus the verbose "
        "log's doc_router requests prepared and never executed until their clients cancel.",
    ),
    Scenario(
        "cap_doc_extract_cold_before",
        "doc",
        f"{_DOC_PIPELINE}; model control explicit, warmed (4 requests); 20 s before the "
        "capture, doc_extract is loaded again with extract_cold_start_s=4 (a deploy whose "
        "first execute loads its weights for 4 s): "
        + _CAP_LATE_TEXT.format(lead=30)
        + ", so the cold start is over when it begins",
        (),
        model_control="explicit",
        warmup=4,
        server_args=_DOC_ARGS,
        lead_s=30.0,
        log_from_start=False,
        injections=(replace(_DOC_COLD, at_s=-20),),
        note="'healthy' in expected.json: the cold start ended about 15 s before the capture "
        "began; nothing in the window waited for it, and neither a cold start nor a hang may "
        "be reported from what is left of it (the counters already moved, the reload's lines "
        "are not in the bundle).",
    ),
    Scenario(
        "cap_doc_layout_growth_5s_late",
        "doc",
        f"{_DOC_PIPELINE}; 15 s before the capture, one document switches on the bug in the "
        "doc_layout instance that runs its pages (it appends every batch's boxes to an "
        "instance buffer and answers the whole buffer: BOXES [1, n, 4] grows with every "
        "batch, up to 8192 rows); "
        + _CAP_LATE_TEXT.format(lead=20)
        + ", scraping every 5 s: the growth's start is not in the bundle",
        (("shape_growth", "doc_layout"),),
        server_args=_DOC_ARGS,
        lead_s=20.0,
        log_from_start=False,
        interval_s=5.0,
        injections=(Injection(-15, 1, {"doc_fault": "grow"}, 60, "doc_layout's boxes grow"),),
    ),
    Scenario(
        "cap_doc_layout_hang_quiet_late_15s",
        "doc",
        f"{_DOC_PIPELINE}; without --log-verbose and without trace files: {_DOC_HANG_TEXT}; "
        "the hang began 20 s before the capture, which scrapes every 15 s for 30 s (three "
        "snapshots of /metrics and /v2/models/stats): " + _CAP_LATE_TEXT.format(lead=30),
        (("model_stalled", "doc_layout"),),
        log_verbose=0,
        trace=False,
        server_args=_DOC_ARGS,
        lead_s=30.0,
        log_from_start=False,
        interval_s=15.0,
        injections=(Injection(-20, 1, _DOC_HANG, 60, "doc_layout sleeps 300 s in execute"),),
        note="The capture a user starts once an alert fired, as Prometheus would scrape: "
        "the stall is older than the window, and three scrapes are all there is to see it.",
    ),
    Scenario(
        "cap_doc_healthy_long",
        "doc",
        f"{_DOC_PIPELINE}, verbose log, no trace files: a long-running server, the clients "
        "running 150 s before a 30 s capture (the log copied from the capture's start only, "
        "every counter and statistic far from zero when it begins)",
        (),
        server_args=_DOC_ARGS,
        trace=False,
        lead_s=150.0,
        log_from_start=False,
        note="No trace files: 180 s of them would make the bundle several megabytes; a "
        "server that has run for minutes is rarely tracing.",
    ),
)
SCENARIOS.update({s.name: s for s in _CAP})


# ------------------------------------------------------------------------------ cx (round 28)

_CX_PIPELINE = (
    "the quote-pricing pipeline (cx_gateway, python BLS, plain def execute, 2 instances, "
    "max_batch_size 0: ROUNDS exec() calls of cx_score, then one of cx_enrich; cx_score, "
    "python, 1 instance, dynamic batching up to 16 with a 2 ms queue delay and a queue policy "
    "that rejects a request queued 60 s and lets a request set a shorter timeout, a batch "
    "costing its largest QUERY[0] ms; "
    "cx_enrich, python, 1 instance, 2 to 4 ms) under three id-less clients with client-side "
    "deadlines (`tests.foreign.cxload`)"
)


def _cx_clients(plan: str) -> str:
    return f"clients' plan `{plan}`: {cxload.PLANS[plan].text()}"


_CX_HANG = Injection(
    8,
    1,
    {"cx_fault": "score_hang", "hang_s": 300, "cx_plan": "hang"},
    60,
    "one quote whose first cx_score call makes cx_score's only instance sleep 300 s; its "
    "client (deadline 1 s) gives up and retries once (2 s), as the others do",
)
_CX_HANG_TEXT = (
    "8 s in, one quote makes cx_score's only instance sleep 300 s in one batch; every later "
    "cx_score call queues behind it, both cx_gateway instances block in exec(), and every "
    "client's quote times out at its 1 s deadline and is retried once with 2 s (a retry "
    "storm against a stuck model)"
)
_CX_HANG_NOTE = (
    "One hang, one alert: the clients' quotes are stuck in cx_gateway, whose two instances "
    "each wait on a cx_score call behind the batch that cx_score_0_0 never releases; "
    "`hung_request` on cx_gateway naming cx_score_0_0 (`mentions`), as geo_lookup_hang "
    "names geo_lookup. The timed-out quotes and their retries stay in cx_gateway's queue "
    "(cancelled by their clients, never dropped). `bls_deadlock` on cx_gateway is `absent`: "
    "nothing waits on itself."
)
_CX_TIMEOUT_NOTE = (
    "Client deadlines are the clients' choice: a quote abandoned at 0.25 s on a pipeline that "
    "answers it in 0.3 to 0.75 s is not a fault of Triton or of any model (the server "
    "finishes or cancels each one, every instance free again within a second). Nothing of "
    "warning or above is owed; `hung_request` and `model_stalled` on cx_gateway and cx_score "
    "are `absent`."
)
_CX_IGNORES_NOTE = (
    "cx_gateway_heeds_cancel is the same load with the cancellation checks on. Here every "
    "abandoned quote is priced to its end, and the ones still queued when their client gave "
    "up are priced too: cx_gateway's queue (nv_inference_pending_request_count) grows while "
    "both instances are busy, and the quick quotes behind them miss their deadline as well. "
    "`instance_saturation` on cx_gateway, whose instances do the abandoned work; cx_score "
    "answers each of its two callers' calls at once (its queue at most 2, one per gateway "
    "instance): `instance_saturation` on cx_score is `absent`."
)
_CX_BLS_TIMEOUT_NOTE = (
    "cx_score's queue policy rejects the calls that waited past the 100 ms their request set "
    "('Request timeout expired', nv_inference_request_failure reason REJECTED); cx_gateway "
    "only relays the rejection to its client as an error. One cause, one alert: "
    "`requests_rejected` on cx_score naming the timeout (`mentions`); `model_failing` on "
    "cx_gateway and `hung_request` anywhere are `absent`."
)
_CX = (
    Scenario(
        "cx_healthy",
        "cx",
        f"{_CX_PIPELINE}, verbose log; {_cx_clients('calm')}: the deadline almost never fires",
        (),
        clients=3,
        duration_s=35.0,
        cx="calm",
    ),
    Scenario(
        "cx_healthy_timeouts",
        "cx",
        f"{_CX_PIPELINE}, verbose log; {_cx_clients('tight')}: the slow tail of quotes "
        "outlives the deadline and is abandoned (gRPC: cancelled; HTTP: the client stops "
        "waiting); cx_gateway asks is_cancelled() before each round",
        (),
        clients=3,
        duration_s=35.0,
        cx="tight",
        note=_CX_TIMEOUT_NOTE,
    ),
    Scenario(
        "cx_healthy_retry",
        "cx",
        f"{_CX_PIPELINE}, verbose log; {_cx_clients('retry')}: a quote abandoned at its "
        "deadline is sent again once",
        (),
        clients=3,
        duration_s=35.0,
        cx="retry",
        note=_CX_TIMEOUT_NOTE,
    ),
    Scenario(
        "cx_score_hang",
        "cx",
        f"{_CX_PIPELINE}, verbose log; {_cx_clients('hang')}; {_CX_HANG_TEXT}",
        (("hung_request", "cx_gateway"),),
        clients=3,
        duration_s=35.0,
        cx="hang",
        injections=(_CX_HANG,),
        note=_CX_HANG_NOTE,
    ),
    Scenario(
        "cx_score_hang_quiet",
        "cx",
        f"{_CX_PIPELINE}; without --log-verbose and without trace files; "
        f"{_cx_clients('hang')}; {_CX_HANG_TEXT}",
        (("model_stalled", "cx_score"),),
        log_verbose=0,
        trace=False,
        clients=3,
        duration_s=35.0,
        cx="hang",
        injections=(_CX_HANG,),
    ),
    Scenario(
        "cx_gateway_ignores_cancel",
        "cx",
        f"{_CX_PIPELINE}, verbose log, server environment CX_CHECK_CANCEL=0: cx_gateway never "
        f"asks is_cancelled() and prices every abandoned quote to its end; "
        f"{_cx_clients('heavy')}",
        (("instance_saturation", "cx_gateway"),),
        clients=3,
        duration_s=35.0,
        cx="heavy",
        env={"CX_CHECK_CANCEL": "0"},
        note=_CX_IGNORES_NOTE,
    ),
    Scenario(
        "cx_gateway_heeds_cancel",
        "cx",
        f"{_CX_PIPELINE}, verbose log: cx_gateway_ignores_cancel's load with cx_gateway asking "
        f"is_cancelled() before each round (its default); {_cx_clients('heavy')}",
        (),
        clients=3,
        duration_s=35.0,
        cx="heavy",
        note="A third of the quotes are slow and abandoned at 0.2 s, by the clients' choice; "
        "cx_gateway stops pricing each at its next round, its queue stays short and the quick "
        "quotes are answered: nothing is owed.",
    ),
    Scenario(
        "cx_bls_timeout",
        "cx",
        f"{_CX_PIPELINE}, verbose log, server environment CX_SCORE_TIMEOUT_US=100000: each "
        "cx_score call is built with InferenceRequest(timeout=100000) (100 ms); "
        f"{_cx_clients('one')}: a heavy quote holds cx_score's instance 0.3 to 0.9 s and the "
        "calls queued behind it outlive their 100 ms",
        (("requests_rejected", "cx_score"),),
        clients=3,
        duration_s=35.0,
        cx="one",
        note=_CX_BLS_TIMEOUT_NOTE,
        env={"CX_SCORE_TIMEOUT_US": "100000"},
    ),
)
SCENARIOS.update({s.name: s for s in _CX})


# ------------------------------------------------------------------ pz (round 29)
# The retail-search family: the least-recorded pathologies (ensemble_fanout,
# thread_pool_exhaustion, stub_unhealthy) in a new pipeline shape. Everything pz-specific
# lives in this block and in the ``if repo == "pz"`` branches of _inputs and _send.

_PZ_PIPELINE = (
    "the retail-search pipeline (pz_ensemble, a pure batched ensemble: pz_clean's output, the "
    "ensemble tensor 'clean_q', fans out to two steps, pz_rank and pz_decode; pz_orchestrator, "
    "python BLS, `async def execute`, 2 instances, one async_exec() per catalogue shard (4 "
    "shards) to pz_worker, python, dynamic batching up to 8, 2 instances, 20 ms a batch, all "
    "gathered at once with asyncio.gather; children without ids) under id-less gRPC clients "
    "alternating pz_orchestrator and pz_ensemble"
)


def _pz_bad_args(variant: str) -> tuple[str, ...]:
    """A second model repository (``variants/pz/<variant>``) holding one miswired ensemble,
    loaded at start beside the healthy models; the server must start despite its failed
    load."""
    return (
        "--exit-on-error=false",
        "--strict-readiness=false",
        f"--model-repository={{foreign}}/variants/pz/{variant}",
    )


def _pz_caller(front: str, what: str) -> Injection:
    """A third client calling ``front`` (``broken`` or ``partial``) every 0.5 s for 28 s."""
    return Injection(3, 1, {"pz_front": front, "pz_pause_s": 0.5}, 10, what, repeat_s=28)


_PZ_MISWIRED_NOTE = (
    "pz_ensemble_broken is pz_ensemble with one edit: pz_decode's input_map names 'CLEAN', "
    "pz_clean's model-side output, instead of the ensemble tensor 'clean_q' that pz_clean's "
    "output_map writes (the usual mistake when one step's output feeds two steps). It is "
    "served from a second model repository and fails to load at start (the server runs on "
    "with --exit-on-error=false); its caller gets an error on every request. The correct "
    "fan-out is pz_ensemble itself, served beside it: it loads and works and must not be "
    "reported."
)
_PZ_PARTIAL_NOTE = (
    "pz_ensemble_partial is pz_ensemble with one more output in its contract, FACETS, which "
    "no step's output_map writes (a release that added the output to the ensemble before the "
    "ranker returned it). It is served from a second model repository and fails to load at "
    "start; its caller gets an error on every request. pz_ensemble, served beside it, is "
    "fine and must not be reported."
)

_PZ_POOL_NOTE = (
    "What happened: each pz_orchestrator request's 12 pz_worker calls reached Triton 2 per "
    "instance at a time, in 6 waves one worker batch (about 24 ms) apart, so a request took "
    "about 0.145 s (0.026 s for the healthy twin's 4 calls, which run at once), while "
    "pz_worker ran one batch at a time, of 2 or 4 calls of the 8 it may batch, its other "
    "instance idle: the orchestrator's own 2-thread pool is the limit (thread_pool_exhaustion "
    "on pz_orchestrator), not pz_worker (`absent`: instance_saturation on pz_worker) and "
    "nothing hangs (`absent`: hung_request on pz_orchestrator)."
)
_PZ_STUB_NOTE = (
    "What happened: pz_worker_0_1's stub was killed inside execute while it held a batch of 4 "
    "(the injected request's 4 calls). Triton did not restart it: every later batch sent to "
    "pz_worker_0_1 was 'executing' for 1.0 s, then released and failed with 'Stub process "
    "'pz_worker_0_1' is not healthy.' (in the error returned to the caller only: no log line "
    "says it), while pz_worker_0_0 served; pz_worker's BACKEND failures rose by 4 a batch. "
    "pz_orchestrator only relays its children's error (its instances stay free; its error "
    "responses count as successes): stub_unhealthy on pz_worker; `absent`: model_failing, "
    "stub_unhealthy and hung_request on pz_orchestrator."
)
_PZ_APPEND_NOTE = (
    "pz_decode's TOKENS grows by 4 ids at each request on its only instance ([1,4] to "
    "[1,432]); pz_ensemble relays it (its TOKENS grows with it: the same fault, not a second "
    "one) and pz_rank's SCORES stays [1,8]: `absent` shape_growth on pz_rank and "
    "pz_ensemble."
)
_PZ_BUSY_NOTE = (
    "Nothing of warning or above is expected: each pz_orchestrator request's 6 calls reach "
    "Triton at once and pz_worker runs them as one batch of 6 (no waves), 0.026 s p50 as in "
    "the twin with 2 clients."
)

_PZ = (
    Scenario(
        "pz_healthy",
        "pz",
        f"{_PZ_PIPELINE}; two clients; nothing injected (each pz_orchestrator request's 4 "
        "calls stay under the stub's asyncio executor, 6 threads on this 2-core host); "
        "verbose log: the twin of every pz_* fault",
        (),
        duration_s=35,
    ),
    Scenario(
        "pz_ensemble_miswired",
        "pz",
        f"{_PZ_PIPELINE}; two clients; a miswired copy of the ensemble, pz_ensemble_broken "
        "(pz_decode reads pz_clean's model-side output name instead of the ensemble tensor), "
        "loaded at start from a second repository beside the healthy models: Triton refuses "
        "it; 3 s in, a third client calls it every 0.5 s for 28 s",
        (("ensemble_fanout", "pz_ensemble_broken"),),
        duration_s=35,
        server_args=_pz_bad_args("miswired"),
        injections=(_pz_caller("broken", "a third client calls pz_ensemble_broken"),),
        note=_PZ_MISWIRED_NOTE,
    ),
    Scenario(
        "pz_ensemble_miswired_v2",
        "pz",
        f"{_PZ_PIPELINE}; two clients; a copy of the ensemble whose contract declares an "
        "output no step writes (pz_ensemble_partial: FACETS), loaded at start from a second "
        "repository beside the healthy models: Triton refuses it; 3 s in, a third client "
        "calls it every 0.5 s for 28 s",
        (("ensemble_fanout", "pz_ensemble_partial"),),
        duration_s=35,
        server_args=_pz_bad_args("unwritten"),
        injections=(_pz_caller("partial", "a third client calls pz_ensemble_partial"),),
        note=_PZ_PARTIAL_NOTE,
    ),
    Scenario(
        "pz_pool_exhausted",
        "pz",
        f"{_PZ_PIPELINE}; two clients; PZ_ORCH_POOL=2 PZ_ORCH_SHARDS=12 in the server's "
        "environment (a release that searches 12 shards and runs each call as a synchronous "
        "exec() submitted to a ThreadPoolExecutor(max_workers=2) per instance): each "
        "pz_orchestrator request's 12 calls run 2 at a time, in 6 waves",
        (("thread_pool_exhaustion", "pz_orchestrator"),),
        duration_s=35,
        env={"PZ_ORCH_POOL": "2", "PZ_ORCH_SHARDS": "12"},
        note=_PZ_POOL_NOTE,
    ),
    Scenario(
        "pz_pool_exhausted_one_client",
        "pz",
        f"{_PZ_PIPELINE}; one client (each pz_orchestrator request runs alone: no other "
        "parent's calls are admitted meanwhile); PZ_ORCH_POOL=2 "
        "PZ_ORCH_SHARDS=12: each request's 12 calls run 2 at a time, in 6 waves",
        (("thread_pool_exhaustion", "pz_orchestrator"),),
        duration_s=35,
        clients=1,
        env={"PZ_ORCH_POOL": "2", "PZ_ORCH_SHARDS": "12"},
        note=_PZ_POOL_NOTE,
    ),
    Scenario(
        "pz_worker_stub_dies",
        "pz",
        f"{_PZ_PIPELINE}; two clients; 10 s in, one pz_orchestrator request whose first "
        "shard call makes pz_worker's stub kill itself (SIGKILL from inside execute, a "
        "segfaulting native index library)",
        (("stub_unhealthy", "pz_worker"),),
        duration_s=35,
        injections=(
            Injection(
                10,
                1,
                {"pz_front": "orchestrator", "pz_fault": "die"},
                10,
                "one pz_orchestrator request whose pz_worker call kills the worker's stub",
            ),
        ),
        note=_PZ_STUB_NOTE,
    ),
    Scenario(
        "pz_decoder_appends",
        "pz",
        f"{_PZ_PIPELINE}; two clients; PZ_DECODE_APPEND=1 in the server's environment: "
        "pz_decode appends each request's 4 token ids to its per-instance buffer instead of "
        "replacing it and returns the whole buffer, so TOKENS grows by 4 ids every request",
        (("shape_growth", "pz_decode"),),
        duration_s=35,
        env={"PZ_DECODE_APPEND": "1"},
        note=_PZ_APPEND_NOTE,
    ),
    Scenario(
        "pz_healthy_busy",
        "pz",
        f"{_PZ_PIPELINE}; four clients and PZ_ORCH_SHARDS=6 (6 calls per pz_orchestrator "
        "request, as many as the stub's asyncio executor runs at once on this 2-core host): "
        "busy, nothing injected",
        (),
        duration_s=35,
        clients=4,
        env={"PZ_ORCH_SHARDS": "6"},
        note=_PZ_BUSY_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _PZ})
_PZ_STUB_V0_NOTE = (
    "What happened (as in pz_worker_stub_dies, here on pz_worker_0_0): the stub killed "
    "inside execute was not restarted; the clients' errors name it ('Stub process "
    "'pz_worker_0_0' is not healthy.') but the level-0 log has no line after the start. "
    '/metrics: pz_worker\'s nv_inference_request_failure{reason="BACKEND"} rose 0 to 64 '
    "in steps of 4 (one batch of 4 at a time) while its nv_inference_request_success kept "
    "rising (148 to 288: the other instance served); /v2/models/stats: 64 failures "
    "totalling 64.16 s, 1.00 s each (the backend's wait for a stub that no longer "
    "answers), against 24.6 ms per success. stub_unhealthy on pz_worker; `absent`: "
    "model_failing, stub_unhealthy and hung_request on pz_orchestrator, which only relays."
)
_PZ_V0 = (
    replace(
        SCENARIOS["pz_ensemble_miswired"],
        name="pz_ensemble_miswired_v0",
        summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['pz_ensemble_miswired'].summary}",
        log_verbose=0,
        trace=False,
    ),
    replace(
        SCENARIOS["pz_worker_stub_dies"],
        name="pz_worker_stub_dies_v0",
        note=_PZ_STUB_V0_NOTE,
        summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['pz_worker_stub_dies'].summary}",
        log_verbose=0,
        trace=False,
    ),
)
SCENARIOS.update({s.name: s for s in _PZ_V0})


# ----------------------------------------------------------------- zoo (round 30)
# A model zoo with sparse, uneven traffic: 20 small python models, a BLS router and an
# ensemble on one server; a few hot models get most requests, most get one every few
# seconds, some only 1 to 8 in the window (a fixed schedule). Everything zoo-specific lives
# in this block and in the ``if repo == "zoo"`` branches of _inputs, _send and _worker.

_ZOO_HOT = (  # (target, weight): what the two background clients pick, at random
    ("zoo_lang_detect", 30),
    ("zoo_sentiment_en", 20),
    ("zoo_router", 15),
    ("zoo_ensemble", 8),
    ("zoo_sentiment_de", 3),
    ("zoo_ner", 3),
    ("zoo_price_v2", 3),
    ("zoo_toxicity", 3),
    ("zoo_spam_filter", 3),
)
_ZOO_ROUTED = (("zoo_intent_en", 6), ("zoo_intent_de", 3), ("zoo_faq_match", 1))
"""zoo_router's child (request parameter ``zoo_child``) for the clients' router requests."""
_ZOO_RARE = (  # (seconds after the capture started, target): one request each, in a thread
    (2, "zoo_ocr_receipt"),
    (3, "zoo_currency_fx"),
    (3, "zoo_router:zoo_spell_fix"),
    (4, "zoo_dedupe"),
    (5, "zoo_geo_resolve"),
    (6, "zoo_summarize_short"),
    (7, "zoo_fraud_lite"),
    (8, "zoo_router:zoo_spell_fix"),
    (9, "zoo_translate_fr"),
    (11, "zoo_currency_fx"),
    (13, "zoo_geo_resolve"),
    (13, "zoo_router:zoo_spell_fix"),
    (15, "zoo_fraud_lite"),
    (16, "zoo_dedupe"),
    (18, "zoo_summarize_short"),
    (18, "zoo_router:zoo_spell_fix"),
    (19, "zoo_currency_fx"),
    (21, "zoo_geo_resolve"),
    (22, "zoo_dedupe"),
    (23, "zoo_router:zoo_spell_fix"),
    (25, "zoo_translate_fr"),
    (26, "zoo_fraud_lite"),
    (27, "zoo_currency_fx"),
    (28, "zoo_router:zoo_spell_fix"),
    (29, "zoo_geo_resolve"),
    (30, "zoo_ocr_receipt"),
    (31, "zoo_fraud_lite"),
    (33, "zoo_summarize_short"),
    (33, "zoo_router:zoo_spell_fix"),
    (34, "zoo_dedupe"),
    (35, "zoo_currency_fx"),
    (36, "zoo_translate_fr"),
    (37, "zoo_geo_resolve"),
    (38, "zoo_ocr_receipt"),
    (38, "zoo_router:zoo_spell_fix"),
)

_ZOO_SERVED = (
    "a model zoo of 22 models (20 python models from one template, 3 to 60 ms a batch, "
    "zoo_sentiment_en and zoo_ner with 2 instances, zoo_sentiment_en, zoo_toxicity, "
    "zoo_spam_filter and zoo_embed_small with dynamic batching; zoo_router, python BLS, 2 "
    "instances, one exec() per request to one of zoo_intent_en, zoo_intent_de, zoo_faq_match "
    "and zoo_spell_fix; zoo_ensemble, zoo_tokenize then zoo_embed_small) under two id-less "
    "gRPC clients picking a hot or medium model at random (zoo_lang_detect 30 %, "
    "zoo_sentiment_en 20 %, zoo_router 15 %, zoo_ensemble 8 %, five more 3 % each) and a "
    "fixed schedule of single requests to the rare ones (1 to 8 each in the window)"
)


def _zoo_send(client: object, inputs: dict[str, np.ndarray], params: dict) -> object:
    """``zoo_model`` in ``params`` (``model`` or ``zoo_router:<child>``) picks the target
    (not sent as a request parameter); a router request carries its child as ``zoo_child``."""
    params = dict(params)
    model = str(params.pop("zoo_model", "zoo_lang_detect"))
    if ":" in model:
        model, params["zoo_child"] = model.split(":", 1)
    return client.infer(model, inputs, "", parameters=params or None)  # type: ignore[attr-defined]


def _zoo_pick(rng: np.random.Generator, table: tuple[tuple[str, int], ...]) -> str:
    weights = np.array([w for _, w in table], dtype=float)
    return table[int(rng.choice(len(table), p=weights / weights.sum()))][0]


def _zoo_rare(url: str, at_s: float, target: str, out: Outcomes, t0: float) -> None:
    from observability.load import TritonClient

    client = TritonClient(url, timeout_s=10, send_ids=False)
    try:
        inputs = _inputs("zoo", np.random.default_rng(int(at_s * 100)))
        out.add(f"healthy:{target}", _zoo_send(client, inputs, {"zoo_model": target}), t0)
    finally:
        client.close()


def _zoo_worker(
    url: str, seed: int, stop: threading.Event, until: float, out: Outcomes, t0: float, cap: int
) -> None:
    """One background client (random hot and medium models, 0.25 s apart); client 1 also
    sends the rare models' fixed schedule, each request in its own thread."""
    from observability.load import TritonClient

    timers = []
    if seed == 1:
        for at_s, target in _ZOO_RARE:
            timer = threading.Timer(
                max(0.0, t0 + at_s - time.monotonic()), _zoo_rare, (url, at_s, target, out, t0)
            )
            timer.daemon = True
            timer.start()
            timers.append(timer)
    client = TritonClient(url, timeout_s=10, send_ids=False)
    rng = np.random.default_rng(seed)
    try:
        for _ in range(cap):
            if stop.is_set() or time.monotonic() > until:
                break
            model = _zoo_pick(rng, _ZOO_HOT)
            if model == "zoo_router":
                model = f"zoo_router:{_zoo_pick(rng, _ZOO_ROUTED)}"
            outcome = _zoo_send(client, _inputs("zoo", rng), {"zoo_model": model})
            out.add("healthy", outcome, t0)
            stop.wait(_PAUSE_S["zoo"])
    finally:
        client.close()
        for timer in timers:
            timer.cancel()


_ZOO_HEALTHY_NOTE = (
    "Nothing of warning or above is expected: every model answered every request at its "
    "usual latency; most models ran only a handful of requests in the window."
)
_ZOO_BURSTY_NOTE = (
    "Nothing of warning or above is expected: zoo_ocr_receipt (one instance, 30 ms) was idle "
    "from 2 s to 24 s, then 20 clients called it at once and it worked through them one at a "
    "time (the last waited about 0.6 s in its queue, then the queue was empty again); "
    "zoo_currency_fx's third request took 0.44 s instead of 0.04 s, once. Both answered every "
    "request; nobody must be paged."
)
_ZOO_HANG_NOTE = (
    "What happened: zoo_geo_resolve's third request (21 s in) never returned (the client's "
    "10 s deadline passed; the instance was still executing it when the capture ended) and "
    "its single instance held it, so its later requests (29 s, 37 s) queued behind it: "
    "hung_request on zoo_geo_resolve. Every other model served normally (`absent`: "
    "hung_request on zoo_lang_detect, the hottest)."
)
_ZOO_RAISE_NOTE = (
    "What happened: zoo_spell_fix (zoo_router's rarely-called child, one request every 5 s) "
    "raised in execute for every request after its second (13 s in, 6 requests in all); "
    "zoo_router returned each error to its caller ('intent lookup failed: ...') while its "
    "three other children kept answering: model_failing on zoo_spell_fix. `absent`: "
    "model_failing on zoo_intent_en (a sibling child that never failed)."
)
_ZOO_SAT_NOTE = (
    "What happened: from 10 s to 25 s six more clients called zoo_lang_detect (one instance, "
    "25 ms a request, no dynamic batching) back to back: its instance was busy all the time "
    "and about five requests waited in its queue, so each request took about six times its "
    "compute time: instance_saturation on zoo_lang_detect. `absent`: instance_saturation on "
    "zoo_sentiment_en (two instances, lightly used)."
)

_ZOO = (
    Scenario(
        "zoo_healthy",
        "zoo",
        f"{_ZOO_SERVED}; nothing injected; verbose log: the twin of every zoo_* fault",
        (),
        duration_s=40,
        note=_ZOO_HEALTHY_NOTE,
    ),
    Scenario(
        "zoo_healthy_bursty",
        "zoo",
        f"{_ZOO_SERVED}; ZOO_SLOW_MODEL=zoo_currency_fx ZOO_SLOW_AT=3 ZOO_SLOW_MS=400 (its "
        "third request, 19 s in, is a legitimately slow one, 0.44 s); 24 s in, after 22 s "
        "idle, 20 clients call zoo_ocr_receipt at once",
        (),
        duration_s=40,
        env={"ZOO_SLOW_MODEL": "zoo_currency_fx", "ZOO_SLOW_AT": "3", "ZOO_SLOW_MS": "400"},
        injections=(
            Injection(
                24, 20, {"zoo_model": "zoo_ocr_receipt"}, 10, "a burst of 20 on a cold model"
            ),
        ),
        note=_ZOO_BURSTY_NOTE,
    ),
    Scenario(
        "zoo_rare_model_hang",
        "zoo",
        f"{_ZOO_SERVED}; ZOO_HANG_MODEL=zoo_geo_resolve ZOO_HANG_AT=3: the rarely-called "
        "zoo_geo_resolve (5 requests in the window, one instance) sleeps 300 s in its third "
        "request (21 s in)",
        (("hung_request", "zoo_geo_resolve"),),
        duration_s=40,
        env={"ZOO_HANG_MODEL": "zoo_geo_resolve", "ZOO_HANG_AT": "3"},
        note=_ZOO_HANG_NOTE,
    ),
    Scenario(
        "zoo_router_child_raises",
        "zoo",
        f"{_ZOO_SERVED}; ZOO_RAISE_MODEL=zoo_spell_fix ZOO_RAISE_AFTER=2: zoo_router's "
        "rarely-called child zoo_spell_fix raises in execute for every request after its "
        "second (from 13 s in); the router returns the error to its caller",
        (("model_failing", "zoo_spell_fix"),),
        duration_s=40,
        env={"ZOO_RAISE_MODEL": "zoo_spell_fix", "ZOO_RAISE_AFTER": "2"},
        note=_ZOO_RAISE_NOTE,
    ),
    Scenario(
        "zoo_hot_model_saturated",
        "zoo",
        f"{_ZOO_SERVED}; 10 s in, six more clients call the hottest model, zoo_lang_detect "
        "(one instance, 25 ms), back to back for 15 s: its queue grows",
        (("instance_saturation", "zoo_lang_detect"),),
        duration_s=40,
        injections=(
            Injection(
                10,
                6,
                {"zoo_model": "zoo_lang_detect"},
                10,
                "six clients back to back on the hottest model",
                repeat_s=15,
            ),
        ),
        note=_ZOO_SAT_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _ZOO})
_ZOO_CHILD_HANG_NOTE = (
    "What happened: zoo_spell_fix's third request (13 s in, sent through zoo_router) never "
    "returned; its single instance held it, so its fourth (18 s) queued behind it, and each "
    "of the two held one zoo_router instance inside a synchronous exec(): from 18 s on both "
    "router instances were held and every zoo_router request queued (the routed requests to "
    "the healthy intent models timed out too). The fault is zoo_spell_fix's hang: "
    "hung_request on zoo_spell_fix. zoo_router is its victim (not expected, not `absent`: "
    "its instances are truly held); `absent`: hung_request on zoo_intent_en, a sibling child "
    "that answered every request it received."
)
_ZOO_LATE = (
    Scenario(
        "zoo_router_child_hangs",
        "zoo",
        f"{_ZOO_SERVED}; ZOO_HANG_MODEL=zoo_spell_fix ZOO_HANG_AT=3: zoo_router's "
        "rarely-called child zoo_spell_fix (8 requests in the window, one instance) sleeps "
        "300 s in its third request (13 s in), inside the router's synchronous exec()",
        (("hung_request", "zoo_spell_fix"),),
        duration_s=40,
        env={"ZOO_HANG_MODEL": "zoo_spell_fix", "ZOO_HANG_AT": "3"},
        note=_ZOO_CHILD_HANG_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _ZOO_LATE})
SCENARIOS["zoo_rare_model_hang_quiet"] = replace(
    SCENARIOS["zoo_rare_model_hang"],
    name="zoo_rare_model_hang_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['zoo_rare_model_hang'].summary}",
    expected=(("model_stalled", "zoo_geo_resolve"),),
    log_verbose=0,
    trace=False,
    note=(
        "What happened: as in zoo_rare_model_hang, but the level-0 log has no line after the "
        "start. /metrics: zoo_geo_resolve's nv_inference_request_success stops at 2; its "
        "pending gauge stays 0 while the third request executes (the executing request is "
        "not pending), then reads 1 from 29 s (the fourth queued behind it) and 2 from 37 s "
        "(the fifth): model_stalled "
        "on zoo_geo_resolve, as for every earlier quiet hang of a model whose only instance "
        "is held. `absent`: model_stalled on zoo_lang_detect."
    ),
)


# ------------------------------------------------------------------ ex (round 31)
# Pipelines built from Triton's own python_backend examples, as users copy them: the bls
# example (async and sync) over add_sub and the pytorch example, the bls_decoupled example
# over square, and repeat. The clients are tests.foreign.exload's; everything ex-specific lives
# in this block, in exload and in the ``if repo == "ex"`` branches of _worker and _inject.

_EX_SERVED = (
    "python_backend's examples copied as users copy them, renamed ex_* (one CPU instance "
    "each, no batching): ex_bls (examples/bls async_model: async def execute, async_exec() to "
    "ex_pytorch and ex_add_sub, gathered; a user's done-callback on each BLS future checks "
    "OUTPUT0 and hands the response on through a future of its own), ex_bls_sync "
    "(examples/bls sync_model: exec() to the model named by MODEL_NAME, ex_add_sub here), "
    "ex_add_sub (examples/add_sub), ex_pytorch (examples/pytorch, numpy instead of torch; "
    "refuses a non-finite input with an error response; builds its weights on first use), "
    "ex_bls_decoupled (examples/bls_decoupled sync_model: exec(decoupled=True) to ex_square, "
    "its responses iterated and summed), ex_square and ex_repeat (examples/decoupled: "
    "decoupled, responses from a thread; ex_square returns from its thread without the "
    "final flag when IN <= 0)"
)
_EX_GRPC = (
    "three id-less gRPC clients going round ex_bls, ex_bls_sync, ex_bls_decoupled (infer) "
    "and ex_repeat, ex_square (one gRPC stream each)"
)


def _ex(at_s: float, model: str, params: Mapping[str, str | int | float], what: str) -> Injection:
    return Injection(at_s, 1, {"ex_model": model, **params}, 60, what)


_EX_HANG_NOTE = (
    "What happened: ex_pytorch's 20th request (a call of ex_bls's async_exec()) waits 300 s "
    "inside execute; ex_bls's only instance awaits it in asyncio.gather, so every later "
    "ex_bls request queues and its clients time out at 10 s. The client-facing model whose "
    "requests hang is ex_bls: hung_request on ex_bls naming the stuck child's instance "
    "ex_pytorch_0_0 (`mentions`), as in ocr_backbone_hang and zoo_router_child_hangs. "
    "ex_add_sub, ex_bls_sync and the decoupled models served on (`absent`: hung_request on "
    "ex_add_sub, ex_bls_sync)."
)
_EX = (
    Scenario(
        "ex_healthy",
        "ex",
        f"{_EX_SERVED} under {_EX_GRPC}; nothing injected; verbose log: the twin of every "
        "ex_* fault",
        (),
        duration_s=35,
        clients=3,
        note="Nothing of warning or above is expected: every request was answered.",
    ),
    Scenario(
        "ex_bls_child_hang",
        "ex",
        f"{_EX_SERVED} under {_EX_GRPC}; EX_HANG_AT=20: ex_pytorch's 20th request (about 7 s "
        "in, an async_exec() of ex_bls) waits 300 s in execute: the async_exec() never returns",
        (("hung_request", "ex_bls"),),
        duration_s=35,
        clients=3,
        env={"EX_HANG_AT": "20"},
        note=_EX_HANG_NOTE,
    ),
    Scenario(
        "ex_square_no_final",
        "ex",
        f"{_EX_SERVED} under {_EX_GRPC}; 8 s in, one ex_bls_decoupled request with IN = 0: "
        "its BLS call to ex_square gets no response and no final flag (ex_square's thread "
        "returns early), so exec(decoupled=True)'s generator never ends",
        (("hung_request", "ex_bls_decoupled"),),
        duration_s=35,
        clients=3,
        injections=(
            _ex(
                8, "ex_bls_decoupled", {"ex_in": 0}, "IN = 0: ex_square never sends its final flag"
            ),
        ),
        note=(
            "What happened: ex_square's execute returned at once (decoupled), its thread sent "
            "nothing and no final flag; ex_bls_decoupled's only instance iterates "
            "exec(decoupled=True)'s generator for ever, so every later ex_bls_decoupled request "
            "queues. hung_request on ex_bls_decoupled (the client-facing caller), naming "
            "ex_square (`mentions`). ex_square's own streams from the clients were all "
            "answered (`absent`: stream_stalled and hung_request on ex_square)."
        ),
    ),
    Scenario(
        "ex_repeat_thread_raises",
        "ex",
        f"{_EX_SERVED} under {_EX_GRPC}; 8 s in, one more ex_repeat stream with ex_fail_at=2: "
        "its response thread sends 2 responses, then raises RuntimeError (printed by "
        "threading.excepthook to the stub's stderr); no final flag",
        (("stream_stalled", "ex_repeat"), ("callback_error", "ex_repeat")),
        duration_s=35,
        clients=3,
        injections=(
            _ex(8, "ex_repeat", {"ex_fail_at": 2}, "ex_repeat's sender thread raises after 2"),
        ),
        note=(
            "What happened: the stream got 2 of its 4 responses, then the thread raised "
            "RuntimeError ('ex_repeat: lost the upstream feed at response 2', printed by "
            "threading.excepthook) and the response sender was dropped without the final "
            "flag; the client waited 60 s. stream_stalled on ex_repeat and callback_error on "
            "ex_repeat naming RuntimeError (`mentions`), as bg_thread_dies. `absent`: "
            "stream_stalled on ex_square."
        ),
    ),
    Scenario(
        "ex_bls_callback_error",
        "ex",
        f"{_EX_SERVED} under {_EX_GRPC}; 8 s in, one ex_bls request whose INPUT0 holds a NaN: "
        "ex_pytorch answers an error response, the done-callback on its async_exec() future "
        "raises AttributeError (no OUTPUT0) and the future execute awaits is never resolved",
        (("callback_error", "ex_bls"),),
        duration_s=35,
        clients=3,
        injections=(_ex(8, "ex_bls", {"ex_nan": 1}, "a NaN: ex_bls's done-callback raises"),),
        note=(
            "What happened: ex_pytorch refused the NaN with an error response; ex_bls's "
            "done-callback called .as_numpy() on the missing OUTPUT0 and raised "
            "AttributeError, printed by asyncio ('Exception in callback ...'); the future it "
            "should have resolved never was, so ex_bls's only instance awaits for ever and "
            "every later ex_bls request queues. callback_error on ex_bls naming "
            "AttributeError (`mentions`), as ocr_callback_error and nz_callback_error. "
            "`absent`: model_failing on ex_pytorch (one refused input, an answer, not a fault)."
        ),
    ),
    Scenario(
        "ex_pytorch_cold_start",
        "ex",
        f"{_EX_SERVED} under {_EX_GRPC}; EX_LAZY_LOAD_S=4: ex_pytorch builds its weights on "
        "its first execute (the window's first ex_bls request), 4 s",
        (("cold_start", "ex_pytorch"),),
        duration_s=35,
        clients=3,
        env={"EX_LAZY_LOAD_S": "4"},
        note=(
            "What happened: ex_pytorch's first execute took 4 s (its weights built on first "
            "use); ex_bls's first request waited on it, and the requests behind it queued; "
            "afterwards every request was answered at the usual latency. cold_start on "
            "ex_pytorch. `absent`: hung_request on ex_bls, ex_pytorch (it ended)."
        ),
    ),
)
SCENARIOS.update({s.name: s for s in _EX})
SCENARIOS["ex_bls_decoupled_verbatim"] = Scenario(
    "ex_bls_decoupled_verbatim",
    "ex",
    f"{_EX_SERVED} under {_EX_GRPC}; EX_VERBATIM_SUM=1: ex_bls_decoupled builds SUM with the "
    "example's own line, np.array([0]), an INT64 answer for the INT32 SUM its config declares",
    (("output_contract", "ex_bls_decoupled"),),
    duration_s=35,
    clients=3,
    env={"EX_VERBATIM_SUM": "1"},
    note=(
        "What happened: every ex_bls_decoupled response carried SUM as INT64 (the verbose "
        "log's 'add response output: output: SUM, type: INT64, shape: [1]'), where its config "
        "declares TYPE_INT32; Triton passed it on unchecked and the clients (tritonclient, "
        "which reads the response's own datatype) took it without an error. This is "
        "python_backend's examples/bls_decoupled/sync_model.py as published: output_contract "
        "on ex_bls_decoupled. `absent`: output_contract on ex_square (its OUT is INT32)."
    ),
)
SCENARIOS["ex_healthy_quiet"] = replace(
    SCENARIOS["ex_healthy"],
    name="ex_healthy_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['ex_healthy'].summary}",
    log_verbose=0,
    trace=False,
)
SCENARIOS["ex_bls_child_hang_quiet"] = replace(
    SCENARIOS["ex_bls_child_hang"],
    name="ex_bls_child_hang_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['ex_bls_child_hang'].summary}",
    expected=(("model_stalled", "ex_bls"),),
    log_verbose=0,
    trace=False,
    note=(
        "What happened: as in ex_bls_child_hang, but the level-0 log has no line after the "
        "start. ex_bls's only instance is held by the request awaiting the hung child; every "
        "later ex_bls request queues (its pending gauge grows) and nothing of ex_bls "
        "finishes: model_stalled on ex_bls, the client-facing model, as in ch_leaf_hang_quiet "
        "and rag_embed_hang_quiet. `absent`: model_stalled on ex_bls_sync, ex_add_sub."
    ),
)


# ------------------------------------------------------------------ hx (round 32)
# Helpdesk ticket triage under HTTP clients with many requests in flight. Everything
# hx-specific lives in this block, in tests/foreign/hxload.py and in the ``repo == "hx"``
# branches of _worker, _inject and _load_text.

_HX_PIPELINE = (
    "the helpdesk-triage pipeline (hx_triage, an ensemble batched up to 4: hx_encode, python, "
    "1 instance, dynamic batching preferred 4 or 8 (4 ms), 8 ms a batch, then the ensemble "
    "tensor 'ticket_vec' to hx_dispatch, python BLS, `async def execute`, 2 instances, "
    "dynamic batching up to 4 (preferred 2 or 4, 2 ms), which gathers three async_exec() "
    "children per ticket, hx_intent (2 instances, batching preferred 4 or 8 (3 ms), 30 ms a "
    "batch), hx_sentiment (1 instance, batching preferred 2 or 4 (1 ms), 10 ms a batch plus "
    "1 ms a ticket) and hx_kb (2 instances, max_batch_size 0, 6 ms a call), then reranks the "
    "batch for 450 ms; children without ids)"
)


def _hx_clients(plan: str, clients: int = 2) -> str:
    return f"clients' plan `{plan}`: {hxload.PLANS[plan].text(clients)}"


_HX_KB_HANG = Injection(
    8,
    1,
    {"hx_fault": "kb_hang"},
    60,
    "one ticket whose hx_kb call makes the hx_kb instance that takes it sleep 300 s",
)
_HX_RECALL = Injection(
    8,
    2,
    {"hx_fault": "kb_recall"},
    60,
    "two tickets at once whose hx_kb call exec()s hx_dispatch back (hx_dispatch -> hx_kb -> "
    "hx_dispatch)",
)
_HX_HEALTHY_NOTE = (
    "Closed-loop clients: each answer is followed at once by the next ticket, so hx_dispatch's "
    "queue holds what its two instances (batches of up to 4) cannot take at once: 16 in "
    "flight less 8 executing, nv_inference_pending_request_count 8 at almost every scrape, "
    "every ticket answered within a steady latency (p50 about 1 s: one rerank batch ahead of "
    "it). A queue that is deep but does not grow is the load the user chose, not a fault: "
    "nothing of warning or above is owed."
)
_HX_RAMP_NOTE = (
    "The in-flight count steps 4 -> 16 -> 4: hx_dispatch's pending gauge reads 0 to 2, then 8 "
    "(10 s to 22 s), then 1 to 2 again; both instances are busy throughout (a closed loop of "
    "4 tickets already keeps them busy) and the latency does not move (p50 1.0 s, max 1.5 s, "
    "all answered). Nothing of warning or above is owed."
)
_HX_HANG_NOTE = (
    "One hang, one alert: the faulty ticket, and the background tickets batched with it, are "
    "stuck in the hx_dispatch instance whose batch awaits the hx_kb call that one hx_kb "
    "instance never releases; the other hx_dispatch and hx_kb instances keep serving. "
    "`hung_request` on hx_dispatch naming the hx_kb instance (`mentions`), as geo_lookup_hang "
    "and cx_score_hang name theirs; `bls_deadlock` is `absent`: nothing waits on itself."
)
_HX_QUIET_HANG_NOTE = (
    "What happened: as in hx_kb_hang, one hx_kb call never returned and held one hx_dispatch "
    "instance with the tickets of its batch for the rest of the window, while the other "
    "instances served (the clients' p50 doubled, about 2 s instead of 1 s). Nothing stalls, "
    "so no model_stalled is owed, but the tickets are hung: /metrics shows it, each ticket "
    "calls each child once, and hx_kb's nv_inference_request_success stays one below "
    "hx_intent's from the hang to the end, while hx_dispatch's pending gauge rises from 8 to "
    "12 and stays. The user must be told that hx_dispatch holds requests that never finish: "
    "`hung_request` on hx_dispatch, as in the verbose twin."
)
_HX_DEADLOCK_NOTE = (
    "hx_dispatch -> hx_kb -> hx_dispatch: each fault ticket's hx_kb call holds an hx_kb "
    "instance in a synchronous exec() of hx_dispatch, and that request queues behind the "
    "hx_dispatch instances that wait on hx_kb; with both instances of each model held, "
    "nothing in the cycle can ever run. `bls_deadlock` on hx_dispatch (the caller the "
    "cycle closes through) naming hx_kb (`mentions`), as ocr_cycle_deadlock."
)
_HX_SATURATED_NOTE = (
    "hx_sentiment's one instance (250 ms a ticket) is the bottleneck, but each hx_dispatch "
    "batch waits on its own tickets' hx_sentiment calls, so hx_sentiment's queue is bounded "
    "by the tickets its callers' two batches hold (at most 6 pending), and the queue that "
    "grows is hx_dispatch's (0 to 80): the HTTP clients give up at 3 s and send the next "
    "ticket, and the abandoned ones stay queued in Triton (an HTTP client leaves no trace "
    "when it stops waiting). As in img_preprocess_latency_creep: `instance_saturation` on "
    "hx_dispatch, naming hx_sentiment (`mentions`); `hung_request` and `bls_deadlock` on "
    "hx_dispatch are `absent`."
)
_HX_COLD_NOTE = (
    "Every ticket in flight at the start waits on hx_sentiment's first execute (4 s), then "
    "all are answered and the latency returns to its steady value: `cold_start` on "
    "hx_sentiment; `hung_request` on hx_dispatch is `absent` (its batches waiting on the "
    "cold call ended within 5 s)."
)
_HX = (
    Scenario(
        "hx_healthy",
        "hx",
        f"{_HX_PIPELINE}, verbose log; {_hx_clients('steady')}: hx_dispatch's queue is "
        "legitimately deep (16 in flight, 8 tickets executing at most)",
        (),
        duration_s=35.0,
        hx="steady",
        note=_HX_HEALTHY_NOTE,
    ),
    Scenario(
        "hx_healthy_quiet",
        "hx",
        f"{_HX_PIPELINE}; without --log-verbose and without trace files; {_hx_clients('steady')}",
        (),
        log_verbose=0,
        trace=False,
        duration_s=35.0,
        hx="steady",
    ),
    Scenario(
        "hx_healthy_ramp",
        "hx",
        f"{_HX_PIPELINE}, verbose log; {_hx_clients('ramp')}: the queues fill at 10 s and "
        "drain at 22 s",
        (),
        duration_s=35.0,
        hx="ramp",
        note=_HX_RAMP_NOTE,
    ),
    Scenario(
        "hx_kb_hang",
        "hx",
        f"{_HX_PIPELINE}, verbose log; {_hx_clients('steady')}; 8 s in, one ticket's hx_kb "
        "call never returns (the hx_kb instance that takes it sleeps 300 s), holding the "
        "hx_dispatch instance whose batch awaits it; the other hx_dispatch and hx_kb "
        "instances keep serving",
        (("hung_request", "hx_dispatch"),),
        duration_s=35.0,
        hx="steady",
        injections=(_HX_KB_HANG,),
        note=_HX_HANG_NOTE,
    ),
    Scenario(
        "hx_kb_hang_quiet",
        "hx",
        f"{_HX_PIPELINE}; without --log-verbose and without trace files; "
        f"{_hx_clients('steady')}; 8 s in, one ticket's hx_kb call never returns (as "
        "hx_kb_hang)",
        (("hung_request", "hx_dispatch"),),
        log_verbose=0,
        trace=False,
        duration_s=35.0,
        hx="steady",
        injections=(_HX_KB_HANG,),
        note=_HX_QUIET_HANG_NOTE,
    ),
    Scenario(
        "hx_sentiment_saturated",
        "hx",
        f"{_HX_PIPELINE}, verbose log, server environment HX_MOOD_MS_PER_ITEM=250: "
        "hx_sentiment's one instance costs 250 ms a ticket (it gains nothing from batching), "
        f"far too slow for the tickets in flight; {_hx_clients('tight')}: the clients give "
        "up at 3 s and send the next ticket, the abandoned ones stay queued in Triton",
        (("instance_saturation", "hx_dispatch"),),
        duration_s=35.0,
        hx="tight",
        env={"HX_MOOD_MS_PER_ITEM": "250"},
        note=_HX_SATURATED_NOTE,
    ),
    Scenario(
        "hx_kb_recall_deadlock",
        "hx",
        f"{_HX_PIPELINE}, verbose log; {_hx_clients('steady')}; 8 s in, two tickets at once "
        "whose hx_kb call exec()s hx_dispatch back: each hx_kb instance waits on an "
        "hx_dispatch request queued behind the two hx_dispatch instances that wait on hx_kb",
        (("bls_deadlock", "hx_dispatch"),),
        duration_s=35.0,
        hx="steady",
        injections=(_HX_RECALL,),
        note=_HX_DEADLOCK_NOTE,
    ),
    Scenario(
        "hx_sentiment_cold_start",
        "hx",
        f"{_HX_PIPELINE}, verbose log, server environment HX_MOOD_COLD_S=4: hx_sentiment's "
        f"first execute sleeps 4 s before its work; {_hx_clients('steady')}",
        (("cold_start", "hx_sentiment"),),
        duration_s=35.0,
        hx="steady",
        env={"HX_MOOD_COLD_S": "4"},
        note=_HX_COLD_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _HX})


# ------------------------------------------------------------------ sw (round 33)
# An ad-auction pipeline under perf_analyzer-style load: a concurrency sweep (closed-loop
# slots 1 -> 16) or an open loop at a fixed request rate. Everything sw-specific lives in this
# block, in tests/foreign/swload.py and in the ``repo == "sw"`` branches of _worker, _inject
# and _load_text.

_SW_PIPELINE = (
    "the ad-auction pipeline (sw_auction, python BLS, synchronous `def execute`, 2 instances, "
    "no dynamic batching, per request an exec() of sw_ctr (1 instance, dynamic batching up to "
    "16, 2 ms, 8 ms a batch plus 1 ms a request) and of sw_pacing (max_batch_size 0, 2 "
    "instances, 6 ms a call), then a 150 ms auction; and sw_prebid, a pure ensemble of "
    "sw_featurize (1 instance, batching preferred 4 (2 ms), 250 ms a batch) -> sw_ctr; "
    "children without ids)"
)


def _sw_clients(plan: str) -> str:
    return f"plan `{plan}`: {swload.PLANS[plan].text()}"


_SW_PACING_HANG = Injection(
    8,
    1,
    {"sw_fault": "pacing_hang"},
    60,
    "one bid request whose sw_pacing call makes the sw_pacing instance that takes it sleep "
    "300 s (its exec() never returns)",
)
_SW_SWEEP_NOTE = (
    "A concurrency sweep: each step adds closed-loop slots, so sw_auction's pending gauge "
    "steps to the slots less its 2 instances and stays flat at each level (0, 0, 2, 6, 14 at "
    "c1, c2, c4, c8, c16), its throughput stays at capacity (about 11.6 a second from c2 on) "
    "and the latency is the slots over that throughput (p50 0.17, 0.17, 0.34, 0.69, 1.37 s); "
    "every request is answered. sw_featurize's one instance is kept busy by the side slot "
    "alone (a 250 ms batch at a time, back to back), as a benchmark at concurrency 1 does. "
    "Queues the user's load chose, nothing of warning or above is owed."
)
_SW_RATE_NOTE = (
    "Poisson arrivals at 9 a second against a capacity of about 11.6: sw_auction's queue forms "
    "in bursts and drains (its pending gauge 0 to 7, back to 0 within seconds), every request "
    "answered (p50 0.28 s, max 0.93 s). Queueing of a healthy open loop below capacity: "
    "nothing of warning or above is owed."
)
_SW_OVERLOAD_NOTE = (
    "From 8 s to 23 s the Poisson arrivals (18 a second) exceed sw_auction's capacity (its two "
    "instances, about 11.6 a second, each request 150 ms of auction plus its two exec() "
    "calls): its pending gauge climbs 6, 9, 15, 20, ... 89, 96, 98 at 23 s, then drains at 4 a "
    "second to 0 at 36 s, while sw_ctr's and sw_pacing's stay 0 (each auction instance makes "
    "one call at a time). The clients' latency climbs to 8.7 s; every request is answered, no "
    "fault in the code. `instance_saturation` on sw_auction, the model whose queue grows; "
    "`absent`: `instance_saturation` on sw_ctr and sw_pacing, `hung_request` on sw_auction."
)
_SW_HANG_NOTE = (
    "One bid request's sw_pacing call never returns: 'sw_pacing_0_1, executing 1 requests' "
    "and 'sw_auction_0_0, executing 1 requests' are never released; sw_auction_0_1 and "
    "sw_pacing_0_0 serve on, so the c8 clients' p50 doubles (1.37 s, all answered) and the "
    "fault request ends at shutdown (UNAVAILABLE). `hung_request` on sw_auction, the "
    "client-facing caller, naming sw_pacing_0_1 (`mentions`), as hx_kb_hang; `bls_deadlock` "
    "is `absent`."
)
_SW_QUIET_HANG_NOTE = (
    "What happened: as in sw_pacing_hang, one sw_pacing call never returned and held one "
    "sw_auction instance for the rest of the window (the c8 clients' p50 1.37 s instead of "
    "0.69 s, the fault request unanswered until shutdown). /metrics shows it: sw_auction's "
    "pending gauge steps from 6 to 7 at 8 s and stays, its successes per second halve (12 to "
    "about 6), and sw_ctr's successes less sw_prebid's (the auction's sw_ctr calls) stay one "
    "above sw_pacing's from 9 s to the end (0 before). `hung_request` on sw_auction, as in "
    "the verbose twin and hx_kb_hang_quiet."
)
_SW_COLD_NOTE = (
    "sw_ctr's first execute takes 4.05 s (then 10 ms): the first c1 request and the side "
    "slot's first ensemble request wait on it (4.30 s and 4.06 s), then the sweep goes on as "
    "in sw_healthy_sweep, every request answered. `cold_start` on sw_ctr; `hung_request` on "
    "sw_auction is `absent` (its execution waiting on the cold call ended within 5 s)."
)
_SW_LEAK_NOTE = (
    "Each sw_pacing call takes 5 ms longer than its instance's previous one: its executions "
    "grow from 17 ms (each instance's second call) to 472 ms over the window, no error. "
    "sw_auction's executions (each waiting on its sw_pacing call) grow from 250 ms to 633 ms, "
    "its throughput falls from about "
    "10 to 2 a second, and the c8 clients' latency climbs (p50 1.63 s, max 2.59 s against "
    "0.69 s in sw_healthy_sweep's c8 step), every request answered. Under a closed loop the "
    "queue cannot grow: sw_auction's pending gauge reads 6 (8 slots less 2 instances) from the "
    "first second to the last. As img_preprocess_latency_creep: `instance_saturation` on "
    "sw_auction naming sw_pacing (`mentions`); `absent`: `instance_saturation` on sw_pacing "
    "(never queued: 2 instances, at most 2 calls at once), `hung_request` on sw_auction."
)
_SW = (
    Scenario(
        "sw_healthy_sweep",
        "sw",
        f"{_SW_PIPELINE}, verbose log; {_sw_clients('sweep')}",
        (),
        duration_s=38.0,
        clients=1,
        sw="sweep",
        note=_SW_SWEEP_NOTE,
    ),
    Scenario(
        "sw_healthy_sweep_quiet",
        "sw",
        f"{_SW_PIPELINE}; without --log-verbose and without trace files; {_sw_clients('sweep')}",
        (),
        log_verbose=0,
        trace=False,
        duration_s=38.0,
        clients=1,
        sw="sweep",
    ),
    Scenario(
        "sw_healthy_rate",
        "sw",
        f"{_SW_PIPELINE}, verbose log; {_sw_clients('rate_ok')}: below capacity, queues form "
        "and drain",
        (),
        duration_s=38.0,
        clients=1,
        sw="rate_ok",
        note=_SW_RATE_NOTE,
    ),
    Scenario(
        "sw_rate_overload",
        "sw",
        f"{_SW_PIPELINE}, verbose log; {_sw_clients('rate_over')}: from 8 s to 23 s the "
        "arrival rate is above what sw_auction's two instances can serve, no fault in the code",
        (("instance_saturation", "sw_auction"),),
        duration_s=40.0,
        clients=1,
        sw="rate_over",
        note=_SW_OVERLOAD_NOTE,
    ),
    Scenario(
        "sw_pacing_hang",
        "sw",
        f"{_SW_PIPELINE}, verbose log; {_sw_clients('c8')}; 8 s in, one bid request's "
        "sw_pacing call never returns (the sw_pacing instance that takes it sleeps 300 s), "
        "holding the sw_auction instance whose exec() waits on it",
        (("hung_request", "sw_auction"),),
        duration_s=38.0,
        clients=1,
        sw="c8",
        injections=(_SW_PACING_HANG,),
        note=_SW_HANG_NOTE,
    ),
    Scenario(
        "sw_pacing_hang_quiet",
        "sw",
        f"{_SW_PIPELINE}; without --log-verbose and without trace files; {_sw_clients('c8')}; "
        "8 s in, one bid request's sw_pacing call never returns (as sw_pacing_hang)",
        (("hung_request", "sw_auction"),),
        log_verbose=0,
        trace=False,
        duration_s=38.0,
        clients=1,
        sw="c8",
        injections=(_SW_PACING_HANG,),
        note=_SW_QUIET_HANG_NOTE,
    ),
    Scenario(
        "sw_ctr_cold_start",
        "sw",
        f"{_SW_PIPELINE}, verbose log, server environment SW_CTR_COLD_S=4: sw_ctr's first "
        f"execute sleeps 4 s before its work; {_sw_clients('sweep')}",
        (("cold_start", "sw_ctr"),),
        duration_s=38.0,
        clients=1,
        sw="sweep",
        env={"SW_CTR_COLD_S": "4"},
        note=_SW_COLD_NOTE,
    ),
    Scenario(
        "sw_pacing_leak",
        "sw",
        f"{_SW_PIPELINE}, verbose log, server environment SW_PACING_LEAK_MS=5: each call of a "
        "sw_pacing instance takes 5 ms longer than its previous one (a spend history appended "
        f"and rescanned, never trimmed); {_sw_clients('c8')}",
        (("instance_saturation", "sw_auction"),),
        duration_s=38.0,
        clients=1,
        sw="c8",
        env={"SW_PACING_LEAK_MS": "5"},
        note=_SW_LEAK_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _SW})


# ------------------------------------------------------------------ gs (round 34)
# Chat moderation and suggested replies, all over one long-lived gRPC stream per client.
# Everything gs-specific lives in this block, in tests/foreign/gsload.py and in the
# ``repo == "gs"`` branches of _worker, _inject and _load_text.

_GS_PIPELINE = (
    "the chat pipeline: gs_moderate (python BLS, `async def execute`, 2 instances, no "
    "batching: two async_exec() children per message gathered at once, gs_toxicity (1 "
    "instance, dynamic batching up to 8, preferred 4, 2 ms, 10 ms a batch) and gs_spam (2 "
    "instances, max_batch_size 0, 5 ms a call), and a done-callback on the gs_toxicity future "
    "that calibrates its scores per language and hands them on through a future of its own) "
    "and gs_reply (python, decoupled, 2 instances, no batching: 3 to 6 partial results sent "
    "from execute through the response sender, 30 ms apart, the last with the final flag); "
    "children without ids"
)
_GS_CLIENTS = (
    "three id-less gRPC clients, each with two streams for the whole window, one carrying up "
    "to 4 outstanding gs_moderate requests (one response each), one up to 4 outstanding "
    "gs_reply requests (3 to 6 responses each)"
)
_GS_MIXED_CLIENTS = (
    "three id-less gRPC clients, each with ONE stream for the whole window carrying up to 6 "
    "outstanding requests to gs_moderate (one response each) and gs_reply (3 to 6) in turn"
)


def _gs(at_s: float, model: str, params: Mapping[str, str | int | float], what: str) -> Injection:
    """One faulty request on a stream of its own, which carries healthy requests on for
    25 s after it."""
    return Injection(at_s, 1, {"gs_model": model, **params}, 60, what, repeat_s=25)


_GS_HANG = _gs(
    8,
    "gs_moderate",
    {"gs_fault": "spam_hang"},
    "one message whose gs_spam call sleeps 300 s (its async_exec() never returns); 4 to 6 "
    "healthy requests stay outstanding on the same stream",
)
_GS_HANG_NOTE = (
    "What happened: the fault message's gs_spam call slept 300 s on gs_spam_0_0, holding "
    "gs_moderate_0_0 in its gather for the rest of the window; gs_moderate_0_1 and "
    "gs_spam_0_1 served everything else. The stream that carried the fault message carried "
    "12 more gs_moderate requests after it: Triton executed and answered every one (gs_moderate "
    "released 336 batches, 324 clients' + 12), but none reached its client (8 timed out at "
    "10 s, 4 open at the end): a gRPC stream writes a non-decoupled model's responses in the "
    "order its requests were read (stream_infer_handler.cc: EnqueueForResponse / "
    "WriteResponseIfReady), so every later response on that stream waits behind the hung one. "
    "One hang, one alert: hung_request on gs_moderate, the client-facing caller, naming the "
    "stuck child instance gs_spam_0_0 (`mentions`), as cx_score_hang and hx_kb_hang. `absent`: "
    "stream_stalled on gs_moderate (not decoupled: its requests hang, no stream stalls) and "
    "on gs_reply, bls_deadlock on gs_moderate."
)
_GS_QUIET_HANG_NOTE = (
    "What happened: as in gs_spam_hang (the same 12 responses blocked behind the hung one on "
    "the fault stream), but the level-0 log has no line after the start. One gs_moderate "
    "instance of two is held, the other serves: nothing stalls, its pending gauge stays 0. "
    "/metrics shows the hang: each message calls each child once, and from the scrape 9 s in "
    "to the end gs_toxicity's nv_inference_request_success stays one ahead of gs_spam's (337 "
    "and 336 at the end; gs_moderate 336). hung_request on gs_moderate, as in the verbose "
    "twin and hx_kb_hang_quiet. `absent`: model_stalled on gs_reply."
)
_GS_STALL_NOTE = (
    "What happened: the fault request got 2 of its partial results, then gs_reply_0_0's "
    "execute waited on its empty feed for the rest of the window: no final flag, the client "
    "waited to the end. The same stream carried 64 more gs_reply requests meanwhile, all "
    "answered (a decoupled model's responses are written as they come, not in request "
    "order), at twice the usual latency (one instance of two left). stream_stalled on "
    "gs_reply, the decoupled model the client streams from, as llm_stream_stall and "
    "sum_lm_hang; its held instance is a true hung_request too. `absent`: stream_stalled and "
    "hung_request on gs_moderate."
)
_GS_CALLBACK_NOTE = (
    "What happened: the done-callback on the fault message's gs_toxicity future looked up "
    "the calibration table of language 'xx' and raised KeyError, printed by asyncio "
    "('Exception in callback ...'); the future it should have resolved never was, so "
    "gs_moderate_0_0 awaited it to the end and the message never got its response. As in "
    "gs_spam_hang the 12 gs_moderate requests sent after it on the same stream were executed "
    "and answered by Triton but never delivered (8 timeouts, 4 open). callback_error on "
    "gs_moderate naming KeyError (`mentions`), as ex_bls_callback_error. `absent`: "
    "model_failing on gs_toxicity (it answered), stream_stalled on gs_moderate."
)
_GS_CANCEL_NOTE = (
    "What happened: 10 rounds, each two new streams with 8 requests (one stream per model), "
    "both cancelled 120 ms later (stop_stream(cancel_requests=True)), then two fresh streams "
    "with 8 each. The 80 cancelled gs_moderate requests had all been answered by then; the 80 "
    "gs_reply ones were cut before their final flag: Triton logged 'Cancellation "
    "notification received', 'Issuing cancellation' and 87 callbacks at step "
    "CANCELLATION_ISSUED, 80 of them with the final flag (72 as a request's first callback: "
    "it had not started when its stream was cancelled), each 'skipping response generation'; "
    "gs_reply saw is_cancelled() and sent its final flag. Every fresh stream's request "
    "(160) and every background request (648) was answered; nothing was left waiting at the end. "
    "Nothing is broken on the server: nothing of warning or above is owed. The bursts (8 "
    "gs_reply requests of the canceller and 12 of the background clients within a second) "
    "take gs_reply's queue to 5 to 7 every 3 s and it drains each time."
)
_GS_CRASH_NOTE = (
    "What happened: the load of gs_healthy, but each client's one stream carried both models' "
    "requests. 2.7 s after the first stream request tritonserver aborted: "
    "'proto_buffer_writer.h:65] ASSERTION FAILED: !byte_buffer->Valid()', 'Signal (6) "
    "received.', a backtrace through TRITONBACKEND_ResponseSend; the clients' streams ended "
    "with UNAVAILABLE 'Stream removed (Socket closed)' (81 of 1200 requests answered). Read in "
    "stream_infer_handler.cc: a non-decoupled response is written by WriteResponseIfReady "
    "without checking the stream's ongoing_write_, which a decoupled write on the same "
    "stream holds, so two writes are started on one gRPC stream. Seen in all 3 of 3 runs "
    "(2.0 s, 10.6 s and 2.7 s after the first stream request). target_down (the server "
    "crashed). `absent`: hung_request and stream_stalled on either model."
)
_GS_HEALTHY_NOTE = "Nothing of warning or above is expected: every request was answered."
_GS = (
    Scenario(
        "gs_healthy",
        "gs",
        f"{_GS_PIPELINE}, verbose log; {_GS_CLIENTS}; nothing injected: the twin of every gs_* "
        "fault",
        (),
        duration_s=40,
        clients=3,
        note=_GS_HEALTHY_NOTE,
    ),
    Scenario(
        "gs_spam_hang",
        "gs",
        f"{_GS_PIPELINE}, verbose log; {_GS_CLIENTS}; 8 s in, a fourth client's stream carries "
        "one message whose gs_spam call never returns (the gs_spam instance that takes it "
        "sleeps 300 s), then healthy requests on for 25 s",
        (("hung_request", "gs_moderate"),),
        duration_s=40,
        clients=3,
        injections=(_GS_HANG,),
        note=_GS_HANG_NOTE,
    ),
    Scenario(
        "gs_reply_stall",
        "gs",
        f"{_GS_PIPELINE}, verbose log; {_GS_CLIENTS}; 8 s in, a fourth client's stream carries "
        "one gs_reply request with gs_stall_after=2: 2 partial results, then its execute waits "
        "300 s on a feed nothing fills (no final flag); healthy requests go on on that stream",
        (("stream_stalled", "gs_reply"),),
        duration_s=40,
        clients=3,
        injections=(
            _gs(
                8,
                "gs_reply",
                {"gs_stall_after": 2},
                "one gs_reply request stalled after 2 of its partial results",
            ),
        ),
        note=_GS_STALL_NOTE,
    ),
    Scenario(
        "gs_callback_error",
        "gs",
        f"{_GS_PIPELINE}, verbose log; {_GS_CLIENTS}; 8 s in, a fourth client's stream carries "
        "one message with gs_lang=xx: the done-callback on its gs_toxicity future raises "
        "KeyError, the future execute awaits is never resolved and the message never gets its "
        "response; healthy requests go on on that stream",
        (("callback_error", "gs_moderate"),),
        duration_s=40,
        clients=3,
        injections=(
            _gs(
                8,
                "gs_moderate",
                {"gs_lang": "xx"},
                "one message in a language without a calibration table: the done-callback raises",
            ),
        ),
        note=_GS_CALLBACK_NOTE,
    ),
    Scenario(
        "gs_stream_cancel",
        "gs",
        f"{_GS_PIPELINE}, verbose log; {_GS_CLIENTS}; from 6 s, a fourth client in rounds: 8 "
        "requests on each of two new streams (one per model), both cancelled 120 ms later "
        "(stop_stream(cancel_requests=True)) with requests outstanding, then 8 more on each of "
        "two fresh streams read to their end, 2 s apart",
        (),
        duration_s=40,
        clients=3,
        injections=(
            Injection(
                6,
                1,
                {"gs_cancel_after_ms": 120},
                10,
                "a client that cancels its stream with requests outstanding, then opens a new one",
                repeat_s=28,
            ),
        ),
        note=_GS_CANCEL_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _GS})
SCENARIOS["gs_mixed_stream_crash"] = Scenario(
    "gs_mixed_stream_crash",
    "gs",
    f"{_GS_PIPELINE}, verbose log; {_GS_MIXED_CLIENTS}: the load of gs_healthy, but each "
    "client's one stream carries both models' requests; nothing injected",
    (("target_down", ""),),
    duration_s=40,
    clients=3,
    gs="mixed",
    note=_GS_CRASH_NOTE,
)
SCENARIOS["gs_healthy_quiet"] = replace(
    SCENARIOS["gs_healthy"],
    name="gs_healthy_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['gs_healthy'].summary}",
    log_verbose=0,
    trace=False,
)
SCENARIOS["gs_spam_hang_quiet"] = replace(
    SCENARIOS["gs_spam_hang"],
    name="gs_spam_hang_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['gs_spam_hang'].summary}",
    log_verbose=0,
    trace=False,
    note=_GS_QUIET_HANG_NOTE,
)

_DAY_PIPELINE = (
    "the document pipeline: day_classify (python BLS, `async def execute`, 2 instances, no "
    "batching: per document an async_exec() call to day_lang (2 instances, no batching, 3 ms), "
    "then one to day_embed (2 instances, dynamic batching up to 8, 2 ms, 6 ms a batch); an "
    "empty document answered with an error response, a scan of more than 30 pages 1.5 s of "
    "OCR clean-up first) and day_triage (a pure ensemble, batched up to 8, that clients call "
    "too: day_embed -> day_urgency, 1 instance, 2 ms a batch, config parameter "
    "weights_version); children without ids; model control explicit, day_archive (a "
    "retention tagger nobody calls) left out at start"
)
_DAY_LOADED = ("day_classify", "day_lang", "day_embed", "day_urgency", "day_triage")
_DAY_OPERATOR = (
    Injection(12, 1, {}, 60, "an operator loads day_archive to try it", "load", "day_archive"),
    Injection(42, 1, {}, 60, "the operator unloads day_archive again", "unload", "day_archive"),
)
_DAY_DEPLOY_OK = Injection(
    26,
    1,
    {"weights_version": "2"},
    90,
    "deploy day_urgency's config version 2 (repository API: weights_version=2, which this "
    "code ships) while traffic flows",
    "reload",
    "day_urgency",
)
_DAY_DEPLOY_BAD = Injection(
    26,
    1,
    {"weights_version": "3"},
    90,
    "deploy day_urgency's config version 3 (repository API: weights_version=3, which this "
    "code does not ship: the load succeeds, every execute after it raises KeyError) while "
    "traffic flows",
    "reload",
    "day_urgency",
)
_DAY_LANG_HANG = Injection(
    29,
    1,
    {"day_doc": "garbled"},
    1,
    "one garbled document: its day_lang call sleeps 300 s (async_exec() never returns); its "
    "client gives up after 1 s as for any slow document",
)
_DAY_NOISE = (
    "a production day around it: invalid requests Triton refuses, empty documents the model "
    "answers with an error, a 1% tail of 1.5 s scans against a 1 s client deadline, gRPC "
    "cancellations, a quiet start, a ramp and a 2 x burst, readiness and metadata probes every "
    "second, day_archive loaded (12 s) and unloaded (42 s) and day_urgency's config version "
    "2 deployed (26 s) through the repository API"
)
_DAY_HEALTHY_NOTE = (
    "What happened: nothing broken. Every good document was answered (the table above) and "
    "the noise was all answered at once: Triton refused the invalid requests itself ('Infer"
    " failed: ... unexpected shape', 'data-type is FP64', 'expected 1 inputs but got 0', "
    "'unknown model', 'version 7 is not found'; none counted in "
    "nv_inference_request_failure), day_classify answered the empty documents with its "
    "error response (counted as successes), the 40-page scans outlived the 1 s deadline and"
    " finished 0.5 s later, the cancelled gRPC calls were logged ('Cancellation "
    "notification received', 'Issuing cancellation') and ran to their end. 3 to 5 of the 50"
    " readiness probes of each run answered HTTP 400 around the repository-API operations "
    "(liveness and metadata probes never failed); unloading day_archive also re-loaded "
    "day_triage (loading it did not), as the day_urgency deploy did, which logs 'E... "
    "ensemble_scheduler.cc:1468] unable to create stream for day_triage: CUDA driver "
    "version is insufficient' on this CPU-only host. Nothing of warning or above is owed."
)
_DAY_HANG_NOTE = (
    "What happened: 29 s in, the garbled document's day_lang call slept 300 s on "
    "day_lang_0_0 (executing from 18:43:50.626, never released) and held day_classify_0_1 "
    "in its await to the end; its client gave up after 1 s (DEADLINE_EXCEEDED; "
    "'Cancellation notification received' at 18:43:51.627), as for every 40-page scan. "
    "day_classify_0_0 served alone from then: 239 of 240 good documents ok; the one timeout"
    " came while a 40-page scan held day_classify_0_0 for 1.5 s from 18:43:58.24 "
    "(day_classify's pending gauge 1, then 3). hung_request on day_classify, the "
    "client-facing caller, naming the stuck child instance day_lang_0_0 (`mentions`), as "
    "gs_spam_hang and hx_kb_hang. `absent`: bls_deadlock, model_stalled and model_failing "
    "on day_classify (its empty-document error responses are the day's noise), hung_request"
    " and model_failing on day_triage."
)
_DAY_QUIET_HANG_NOTE = (
    "What happened: as in day_lang_hang, at level 0: the log has no request line (only the "
    "start and the three repository-API operations' model_lifecycle lines). day_classify "
    "calls its children one after the other, so the hung day_lang call and its parent are "
    "both counted nowhere: no counter lags (day_classify 253 successes, day_lang 249: the 4"
    " empty documents answered before any call), and the pending gauge read 0 but once. "
    "hung_request on day_classify is owed all the same (what happened), as in the verbose "
    "twin and gs_spam_hang_quiet."
)
_DAY_DEPLOY_NOTE = (
    "What happened: 26 s in, day_urgency's config version 3 was loaded through the "
    "repository API while traffic flowed: the old copy served until the new one was "
    "'successfully loaded' (1.4 s later), then every day_urgency execute raised KeyError: "
    "'3' ('E... pb_stub.cc:714] \"Failed to process the request(s) for model "
    "'day_urgency_0_0', message: KeyError: '3'' once per request, none succeeded after) and"
    " day_triage's clients got 'in ensemble 'day_triage', Failed to process the request(s) "
    "for model 'day_urgency_0_0', message: KeyError: '3'' for every document (106 ok "
    "before). day_classify, which shares day_embed but not day_urgency, was untouched. One "
    "bug, one alert: model_failing on day_urgency naming KeyError (`mentions`), as "
    "fr_score_raises. `absent`: model_failing on day_triage (it relays) and on day_classify"
    " (its empty-document error responses are the day's noise), stub_unhealthy and "
    "model_load_failed on day_urgency (the load succeeded)."
)
_DAY = (
    Scenario(
        "day_healthy",
        "day",
        f"{_DAY_PIPELINE}, verbose log; {_DAY_NOISE}; nothing broken: the twin of every day_* "
        "fault",
        (),
        duration_s=50,
        clients=4,
        model_control="explicit",
        load_models=_DAY_LOADED,
        injections=(*_DAY_OPERATOR, _DAY_DEPLOY_OK),
        note=_DAY_HEALTHY_NOTE,
    ),
    Scenario(
        "day_lang_hang",
        "day",
        f"{_DAY_PIPELINE}, verbose log; {_DAY_NOISE}; 29 s in, one garbled document whose "
        "day_lang call never returns (the day_lang instance that takes it sleeps 300 s)",
        (("hung_request", "day_classify"),),
        duration_s=50,
        clients=4,
        model_control="explicit",
        load_models=_DAY_LOADED,
        injections=(*_DAY_OPERATOR, _DAY_DEPLOY_OK, _DAY_LANG_HANG),
        note=_DAY_HANG_NOTE,
    ),
    Scenario(
        "day_urgency_bad_deploy",
        "day",
        f"{_DAY_PIPELINE}, verbose log; the noise of day_healthy, but the deploy at 26 s is "
        "day_urgency's config version 3, whose weights this code does not ship: the load "
        "succeeds and every day_urgency execute after it raises KeyError",
        (("model_failing", "day_urgency"),),
        duration_s=50,
        clients=4,
        model_control="explicit",
        load_models=_DAY_LOADED,
        injections=(*_DAY_OPERATOR, _DAY_DEPLOY_BAD),
        note=_DAY_DEPLOY_NOTE,
    ),
)
SCENARIOS.update({s.name: s for s in _DAY})
SCENARIOS["day_healthy_quiet"] = replace(
    SCENARIOS["day_healthy"],
    name="day_healthy_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['day_healthy'].summary}",
    log_verbose=0,
    trace=False,
)
SCENARIOS["day_healthy_iso"] = replace(
    SCENARIOS["day_healthy"],
    name="day_healthy_iso",
    summary=f"`--log-format ISO8601`: {SCENARIOS['day_healthy'].summary}",
    log_format="ISO8601",
)
SCENARIOS["day_lang_hang_quiet"] = replace(
    SCENARIOS["day_lang_hang"],
    name="day_lang_hang_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['day_lang_hang'].summary}",
    log_verbose=0,
    trace=False,
    note=_DAY_QUIET_HANG_NOTE,
)
SCENARIOS["day_urgency_bad_deploy_quiet"] = replace(
    SCENARIOS["day_urgency_bad_deploy"],
    name="day_urgency_bad_deploy_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['day_urgency_bad_deploy'].summary}",
    log_verbose=0,
    trace=False,
)


# ------------------------------------------------------------------ lz (round 36)
# Freight quoting at --log-verbose 0: only /metrics and /v2/models/stats speak. Everything
# lz-specific lives in this block, in tests/foreign/lzload.py and in the ``repo == "lz"``
# branches of _worker and _load_text.

_LZ_PIPELINE = (
    "the freight-quote pipeline: lz_quote (python BLS, synchronous `def execute`, 2 "
    "instances, max_batch_size 0: per request a blocking exec() of lz_route (2 instances, "
    "max_batch_size 0, 3 ms a stop) and then one of lz_fare (1 instance, dynamic batching up "
    "to 16, 1 ms, 3 ms a batch), then 4 ms of assembly; children without ids); "
    "`--log-verbose 0`, no trace files"
)
_LZ_HANG = "the lz_route instance that takes the call sleeps 300 s: its exec() never returns"
_LZ_LOADED = ("lz_quote", "lz_route", "lz_fare")
_LZ_NOTES = {
    "lz_clients_leave_quiet": (
        "What happened: 6 of 12 slots left at 20 s; lz_quote's pending gauge went 10 -> 4 (3 "
        "at one scrape) and stayed, its successes stayed 18-20 a second (both instances busy "
        "throughout), p50 0.34 s over the window, 758 of 758 ok. Nothing is broken: no "
        "finding of warning or above is owed."
    ),
    "lz_heavy_mix_quiet": (
        "What happened: from 20 s every quote carries 64 stops instead of 32; lz_route's "
        "compute per request 96.8 -> 193-195 ms, lz_quote's 108 -> 204-211 ms, lz_quote's "
        "successes 18-20 -> 8-10 a second, pending 10 at every scrape, clients' p50 0.65 s ->"
        " 1.25 s, 590 of 590 ok. A legitimate slowdown from bigger inputs (every execution "
        "ends), not a hang and not a saturation that grows: no finding of warning or above is"
        " owed."
    ),
    "lz_route_reload_quiet": (
        "What happened: 20 s in, lz_route was reloaded through the repository API (same "
        "version 1, a config parameter changed): `loading: lz_route:1`, new instances "
        "initialized 1.3 s later, `successfully loaded`, the old version `successfully "
        "unloaded` 2.5 s after; lz_quote's successes dipped to 17 at one scrape (22 s) and "
        "lz_route's /metrics counters carried on across the reload; 778 of 778 quotes ok (max"
        " 0.75 s), the reload call 1.46 s. Nothing is broken: no finding of warning or above "
        "is owed."
    ),
    "lz_route_hang_quiet": (
        "What happened: at 20 s slot 0 sent a quote whose lz_route call sleeps 300 s; it held"
        " one lz_route and one lz_quote instance to the end (the client got UNAVAILABLE at "
        "shutdown). lz_quote's successes 18-20 a second -> 9-10 from the 22 s scrape, its "
        "pending gauge 10 at every scrape before and after (11 slots on 1 instance), compute "
        "per completed request 108 ms before and after; 546 of 546 other quotes ok, p50 0.65 "
        "s. `hung_request` on lz_quote (the client-facing model); `absent`: model_stalled on "
        "lz_quote (it kept completing), hung_request on lz_route."
    ),
    "lz_route_hang_light_quiet": (
        "What happened: 2 slots; at 20 s slot 0 sent the quote whose lz_route call sleeps 300"
        " s, held to the end (UNAVAILABLE at shutdown); slot 1 went on alone on the other "
        "lz_quote instance: successes 17-18 a second -> 8-10 from the 21 s scrape, compute "
        "per request 110 ms before and after, pending gauge 0 at every scrape of the window; "
        "550 of 550 other quotes ok, p50 0.11 s. A hang: `hung_request` on lz_quote, as "
        "lz_route_hang_quiet; `absent`: model_stalled on lz_quote."
    ),
    "lz_route_hang_load_ends_quiet": (
        "What happened: as lz_route_hang_quiet (lz_quote's successes 18 -> 9 a second from "
        "the 22 s scrape, pending 10 at every scrape from 1 s to 38 s, compute per request "
        "108 ms throughout), but the load process stopped sending at 38 s, 2 s before the "
        "capture's end, as a benchmark run or a batch job ends: the last two scrapes read "
        "pending 0 (549, 550 successes). The hung request still held its instance "
        "(UNAVAILABLE at shutdown). `hung_request` on lz_quote; `absent`: model_stalled on "
        "lz_quote."
    ),
    "lz_stall_quiet": (
        "What happened: at 20 s slots 0 and 1 each sent a quote whose lz_route call sleeps "
        "300 s; the second was sent when slot 1's previous quote was answered, so for about a"
        " second one instance served on (2 successes at the 22 s scrape), then both lz_quote "
        "instances (and both lz_route instances) were held: 374 successes from 22 s to the "
        "end, pending 10 at every scrape; the 10 quotes queued then timed out at 30 s (after "
        "the window), the 2 faulty ones UNAVAILABLE at shutdown. `model_stalled` on lz_quote."
        " A hung_request on lz_quote is true as well (two requests never finish), so it is "
        "not `absent`."
    ),
}
"""What each run did (also the end of its PROVENANCE.md; ``absent`` pairs are in expected.json)."""


def _lz(
    name: str, plan: str, what: str, expected: tuple[tuple[str, str], ...], **kw: Any
) -> Scenario:
    return Scenario(
        name,
        "lz",
        f"{_LZ_PIPELINE}; {lzload.PLANS[plan].text()}{what}",
        expected,
        log_verbose=0,
        trace=False,
        duration_s=40.0,
        clients=1,
        lz=plan,
        note=_LZ_NOTES.get(name, ""),
        **kw,
    )


_LZ = (
    _lz(
        "lz_clients_leave_quiet",
        "c12_leave",
        ": half the clients go away, the queue stays non-empty",
        (),
    ),
    _lz(
        "lz_heavy_mix_quiet",
        "c12_heavy",
        ": each execution takes about twice as long from then on, nothing is broken",
        (),
    ),
    _lz(
        "lz_route_reload_quiet",
        "c12",
        "; 20 s in, an operator reloads lz_route (the same version, a config parameter "
        "changed: new instances) under the load",
        (),
        model_control="explicit",
        load_models=_LZ_LOADED,
        injections=(
            Injection(
                20, 1, {}, 60, "an operator reloads lz_route (same version)", "reload", "lz_route"
            ),
        ),
    ),
    _lz(
        "lz_route_hang_quiet",
        "c12_fault",
        f": that request's lz_route call never returns ({_LZ_HANG}), holding the lz_quote "
        "instance whose exec() waits on it",
        (("hung_request", "lz_quote"),),
    ),
    _lz(
        "lz_route_hang_light_quiet",
        "c2_fault",
        f": that request's lz_route call never returns ({_LZ_HANG}); one slot is left, on the "
        "other lz_quote instance",
        (("hung_request", "lz_quote"),),
    ),
    _lz(
        "lz_route_hang_load_ends_quiet",
        "c12_fault_ends",
        f": that request's lz_route call never returns ({_LZ_HANG}); the clients stop 2 s "
        "before the capture ends",
        (("hung_request", "lz_quote"),),
    ),
    _lz(
        "lz_stall_quiet",
        "c12_fault2",
        f": both requests' lz_route calls never return ({_LZ_HANG}), holding both lz_quote "
        "instances",
        (("model_stalled", "lz_quote"),),
    ),
)
SCENARIOS.update({s.name: s for s in _LZ})


# The fraud-scoring family (round 37): Triton's rate limiter in a BLS pipeline. Both models'
# instance groups need one copy of the global resource "score_licence"; the server is started
# with `--rate-limit=execution_count` and the pool's size. Everything rl-specific lives in
# this block and in the ``if repo == "rl"`` branches of _inputs and _send.

_RL_PIPELINE = (
    "the fraud-scoring pipeline (rl_router, python BLS, `async def execute`, 2 instances, "
    "4 async_exec() calls per request gathered at once to rl_score, python, 8 instances, no "
    "batching, 50 ms a call; children without ids; both instance groups declare "
    '`rate_limiter { resources [ { name: "score_licence", global: true, count: 1 } ] }`, '
    "the server runs `--rate-limit=execution_count`) under id-less gRPC clients calling "
    "rl_router"
)


def _rl_args(licences: int) -> tuple[str, ...]:
    """The rate limiter on, with ``licences`` copies of the global resource."""
    return ("--rate-limit=execution_count", f"--rate-limit-resource=score_licence:{licences}")


def _rl_second_client(what: str) -> Injection:
    """A second client joining 12 s in, sending rl_router requests back to back (10 s
    timeout) for 25 s."""
    return Injection(12, 1, {}, 10, what, repeat_s=25)


_RL = (
    Scenario(
        "rl_healthy",
        "rl",
        f"{_RL_PIPELINE}; one client, a second joining 12 s in; 10 score_licence copies (both "
        "rl_router instances and all 8 rl_score instances can execute at once): the twin of "
        "rl_resource_deadlock",
        (),
        duration_s=40,
        clients=1,
        server_args=_rl_args(10),
        injections=(_rl_second_client("a second client joins (no fault)"),),
    ),
    Scenario(
        "rl_resource_deadlock",
        "rl",
        f"{_RL_PIPELINE}; one client, a second joining 12 s in; only 2 score_licence copies: "
        "with one client, one rl_router execution holds a copy and its rl_score calls run one "
        "at a time on the other; once the second client's request takes the second rl_router "
        "instance, both copies are held by routers that wait for their rl_score calls, which "
        "need a copy to execute: no request is answered again (a rate-limiter deadlock)",
        (("bls_deadlock", "rl_router"),),
        duration_s=40,
        clients=1,
        server_args=_rl_args(2),
        injections=(_rl_second_client("a second client joins: both copies held by rl_router"),),
    ),
    Scenario(
        "rl_child_starved_slow",
        "rl",
        f"{_RL_PIPELINE}; two clients; 3 score_licence copies: while both rl_router "
        "instances execute they hold two, and rl_score executes one call at a time though it "
        "has 8 idle instances (two at a time while one router executes); each request's 4 "
        "calls queue behind each other and the other router's",
        (),
        duration_s=35,
        note="What happened: rl_score's concurrency never passed what the licences leave "
        "(busy rl_router/rl_score instances from the log's executing/released lines: 2/1 or "
        "1/2 at most, never 2/2), and rl_score's pending gauge read 2 at 14 of 36 scrapes "
        "with all 8 instances free; the clients' p50 doubled against rl_healthy (0.108 s vs "
        "0.056 s, max 0.69 s) with no timeout and rl_router's pending gauge 0 at every "
        "scrape: a slowdown within reason, not a saturation the clients feel: nothing of "
        "warning or above is expected.",
        clients=2,
        server_args=_rl_args(3),
    ),
)
SCENARIOS.update({s.name: s for s in _RL})
SCENARIOS["rl_default_pool_deadlock"] = Scenario(
    "rl_default_pool_deadlock",
    "rl",
    f"{_RL_PIPELINE}; one client, a second joining 12 s in; `--rate-limit=execution_count` "
    "without `--rate-limit-resource`: Triton sizes the pool at the largest count an instance "
    "asks for, 1 copy, so the first rl_router execution holds the only copy and its 4 "
    "rl_score calls can never execute: the very first request deadlocks",
    (("bls_deadlock", "rl_router"),),
    duration_s=40,
    clients=1,
    server_args=("--rate-limit=execution_count",),
    injections=(_rl_second_client("a second client joins (its requests queue at rl_router)"),),
    note="A user's likely mistake: the resource declared on both models and no pool size "
    "given. No request is ever answered, so there is no healthy batch to learn from.",
)
SCENARIOS["rl_healthy_quiet"] = replace(
    SCENARIOS["rl_healthy"],
    name="rl_healthy_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['rl_healthy'].summary}",
    log_verbose=0,
    trace=False,
)
SCENARIOS["rl_resource_deadlock_quiet"] = replace(
    SCENARIOS["rl_resource_deadlock"],
    name="rl_resource_deadlock_quiet",
    summary=f"`--log-verbose 0`, no trace files: {SCENARIOS['rl_resource_deadlock'].summary}",
    expected=(("model_stalled", "rl_router"),),
    log_verbose=0,
    trace=False,
    note="Without the verbose log the cycle cannot be read (no executing, released or "
    "state line); what is left is the stall of the client-facing model, as in the other "
    "families' hangs at level 0: model_stalled on rl_router.",
)
# ------------------------------------------------------------------ dq (round 38)
# Long batching delays, priorities and queue policies. Everything dq-specific lives in this
# block, in tests/foreign/dqload.py and in the ``repo == "dq"`` branches of _worker and
# _inject.

_DQ_PIPELINE = (
    "the search pipeline: dq_gateway (python BLS, `async def execute`, 2 instances, "
    "max_batch_size 0: per request 4 dq_rank calls in flight at once, async_exec, children "
    "without ids) and dq_rank (python, max_batch_size 8, 20 ms + 4 ms a row per batch, "
    "dynamic batching with `max_queue_delay_microseconds: 200000`, `preferred_batch_size: "
    "[8]`, `preserve_ordering: true` and a `default_queue_policy` (REJECT after 5 s, "
    "`allow_timeout_override`, `max_queue_size` 64)"
)
_DQ_HANG = Injection(
    10,
    1,
    {"dq_front": "gateway", "dq_fault": "hang"},
    60,
    "one dq_gateway request whose first dq_rank call makes its batch sleep 300 s",
)
_DQ_NOTES: dict[str, str] = {
    "dq_child_hang_unordered": (
        "What happened: 10.0 s in, `dq_rank_0_1, executing 7 requests` (both gateways' "
        "calls, with the faulty one) and no `released` to the end; both dq_gateway "
        "instances held, 5 gateway requests queued at the end; the gateway clients saw 7 "
        "`DEADLINE_EXCEEDED` (5 `Issuing cancellation` lines). Without preserve_ordering "
        "the bulk client went on: dq_rank_0_0 executed its requests to the end (the last "
        "39.8 s in) and every request's `InferRequestComplete` has its "
        "`InferResponseComplete` (115 each): 115 of 122 background requests ok, the "
        "faulty one UNAVAILABLE at shutdown. The contrast with dq_child_hang_in_batch "
        "(its bulk client's responses held) is the response ordering. Expected: "
        "`hung_request` on dq_gateway naming the dq_rank_0_1 batch; `absent`: "
        "instance_saturation on dq_rank."
    ),
    "dq_priority_starved_quiet": (
        "What happened: as dq_priority_starved, at `--log-verbose 0` (no log line after the "
        "start): dq_rank's pending gauge 2-5 before the surge (the 200 ms delay keeps calls "
        "queued by design), 10 at every scrape from 11 s to 30 s, then 0-5; its successes "
        '18-25 a second throughout; `nv_inference_request_failure{reason="REJECTED"}` '
        "0 -> 5 (15 s) -> 9 -> 18 -> 27 (26 s): queue-policy timeouts of default-priority "
        "requests. The background clients saw 9 errors of 153 (`Request timeout expired`), "
        "ok latencies up to 4.47 s; the priority-1 clients 374 of 374 ok. Expected: "
        "`requests_rejected` on dq_rank, as its verbose twin; `absent`: hung_request and "
        "model_failing on dq_gateway."
    ),
    "dq_priority_healthy": (
        "What happened: from 10 s the two priority-1 clients (0.3 s pauses) sent 106 "
        "requests of 8 rows, all ok (p50 0.055 s); the default-priority requests waited "
        "behind them now and then (background max 1.87 s against 0.28 s before, p50 0.236 "
        "s) but none reached the 5 s queue timeout: 246 of 246 ok, dq_rank's REJECTED "
        "failures 0. The priorities worked as configured: no finding of warning or above "
        "is owed."
    ),
    "dq_child_hang_in_batch": (
        "What happened: 10.2 s in, `dq_rank_0_1, executing 6 requests` (the faulty "
        "request's calls batched with the other gateway's) and no `released` to the end; "
        "both dq_gateway instances, each awaiting a call in that batch, were held from "
        "10.0 s and 10.1 s, and every later dq_gateway request queued (5 at the end). "
        "dq_rank has `preserve_ordering: true`, so the bulk client's later requests, each "
        "executed by dq_rank_0_0 and released in 30 ms (`released 1 requests` at 10.5 s, "
        "20.7 s, 30.9 s), never got their responses: the log's last `ModelInferHandler::"
        "InferResponseComplete` is 0.1 s before the hang (74 `InferRequestComplete`, 71 "
        "`InferResponseComplete`). All three background clients saw `DEADLINE_EXCEEDED` "
        "after 10 s from then on (9 timeouts, 6 `Issuing cancellation` lines), 71 of 80 ok; "
        "the faulty client got UNAVAILABLE at shutdown. Expected: `hung_request` on "
        "dq_gateway (the client-facing caller, naming the dq_rank_0_1 batch), as "
        "ocr_backbone_hang and zoo_router_child_hangs, and `hung_request` on dq_rank, whose "
        "own client's requests hang behind the same batch; `absent`: instance_saturation on "
        "dq_rank."
    ),
    "dq_child_hang_in_batch_quiet": (
        "What happened: as dq_child_hang_in_batch (the batch that hangs 10.2 s in held both "
        "dq_gateway instances); at `--log-verbose 0` the log has 55 lines, none after the "
        "start. /metrics: dq_gateway's successes stop at 46 from the scrape 10 s in, its "
        "pending gauge 1, 3, then 5 to the end; dq_rank's successes 209 -> 211, one a "
        "10 s: the bulk client's requests, executed and counted, whose responses "
        "preserve_ordering holds behind the hung batch; dq_rank's pending gauge 0. Clients "
        "as dq_child_hang_in_batch (9 timeouts of 78, the faulty one UNAVAILABLE at "
        "shutdown). Expected: `model_stalled` on dq_gateway (every instance held, requests "
        "queued, nothing finishing: the corpus's quiet hang, as ocr_stall_quiet and "
        "lz_stall_quiet); dq_rank's held responses leave no signal at level 0 but a "
        "success counter that moves at its one client's retry rate, so nothing is "
        "expected on dq_rank; `absent`: instance_saturation on dq_rank."
    ),
    "dq_queue_full_rejects": (
        "What happened: dq_rank's queue bound of 8 refused 35 requests (`Setting state from "
        "PENDING to FAILED_ENQUEUE` right after their `prepared:` line; nothing counts them: "
        "REJECTED stays 0): 25 during the burst (10.8 s to 15.8 s in), 10 from the "
        "background alone after it (21.9 s to 39.7 s in: two gateways' 8 calls and the bulk "
        "client's request queued together in the 200 ms delay). The burst clients got 25 "
        "errors of 775 (`[StatusCode.UNAVAILABLE] ... Exceeds maximum queue size`), the "
        "background 10 of 303, dq_gateway relaying its child's error (`dq_gateway: rank call "
        "failed: Model dq_rank - Error when running inference: ... Exceeds maximum queue "
        "size`; no log line). No crash (children are built without `trace=`). Expected: "
        "`requests_rejected` on dq_rank (as img_preprocess_queue_full); `absent`: "
        "model_failing and hung_request on dq_gateway (it relays), target_down."
    ),
    "dq_priority_starved": (
        "What happened: from 10 s the two priority-1 clients kept dq_rank's one instance busy "
        "back to back (342 requests of 8 rows, all ok, p50 0.108 s); the default-priority "
        "requests (dq_gateway's BLS children and the bulk client's own) waited behind them, "
        "up to the queue policy's 5 s, and 32 were dropped from the queue: 32 `Setting state "
        "from PENDING to RELEASED` lines (no text), the first 15 s in, the last 31 s in; "
        '`nv_inference_request_failure{model="dq_rank",reason="REJECTED"}` 0 -> 32. The '
        "background clients saw 11 errors of 147 (`[StatusCode.UNAVAILABLE] Request timeout "
        "expired` the first) and ok latencies up to 4.9 s (0.28 s healthy). "
        "Expected: `requests_rejected` on dq_rank (as emb_encode_slow_queue_timeouts); "
        "`instance_saturation` on dq_rank is true (its one instance was busy for the whole "
        "surge while default-priority requests waited) but not required: the queue stayed "
        "at the closed-loop clients' 10 and throughput held (as lz_clients_leave_quiet), "
        "the rejections are the story; `absent`: hung_request and model_failing on "
        "dq_gateway (it relays its children's rejections)."
    ),
}
"""What each run did (also the end of its PROVENANCE.md; filled in from the recordings)."""


def _dq(name: str, what: str, expected: tuple[tuple[str, str], ...], **kw: Any) -> Scenario:
    return Scenario(
        name,
        "dq",
        f"{_DQ_PIPELINE}; {what}",
        expected,
        duration_s=40.0,
        clients=3,
        note=_DQ_NOTES.get(name, ""),
        **kw,
    )


_DQ = (
    _dq(
        "dq_healthy_long_delay",
        "2 instances of dq_rank; nothing injected: every dq_rank call waits in the batcher "
        "until 8 requests are queued or 200 ms have passed, by design",
        (),
    ),
    _dq(
        "dq_healthy_long_delay_quiet",
        "`--log-verbose 0`, no trace files: the twin of dq_healthy_long_delay; nothing injected",
        (),
        log_verbose=0,
        trace=False,
    ),
    _dq(
        "dq_priority_healthy",
        "served with --model-config-name=priority (as dq_priority_starved); 10 s in, 2 more "
        "clients send dq_rank FEAT [8, 16] at priority 1 for 20 s, each pausing 0.3 s after "
        "an answer: the default-priority requests wait behind theirs but none times out",
        (),
        server_args=("--model-config-name=priority",),
        injections=(
            Injection(
                10,
                2,
                {"dq_front": "rank", "dq_rows": 8, "dq_priority": 1, "dq_pause_s": 0.3},
                10,
                "a high-priority bulk client: dq_rank FEAT [8, 16] at priority 1, 0.3 s pauses",
                repeat_s=20,
            ),
        ),
    ),
    _dq(
        "dq_priority_starved",
        "served with --model-config-name=priority: dq_rank has 1 instance and "
        "`priority_levels: 2`, `default_priority_level: 2`, no `preserve_ordering` "
        "(dq_gateway's BLS children cannot set a priority); 10 s in, 2 more clients send "
        "dq_rank FEAT [8, 16] at priority 1 back to back for 20 s",
        (("requests_rejected", "dq_rank"),),
        server_args=("--model-config-name=priority",),
        injections=(
            Injection(
                10,
                2,
                {"dq_front": "rank", "dq_rows": 8, "dq_priority": 1},
                10,
                "a high-priority bulk client: dq_rank FEAT [8, 16] at priority 1, back to back",
                repeat_s=20,
            ),
        ),
    ),
    _dq(
        "dq_priority_starved_quiet",
        "`--log-verbose 0`, no trace files: dq_priority_starved's run (--model-config-name="
        "priority: dq_rank has 1 instance and 2 priority levels; 10 s in, 2 more clients send "
        "dq_rank FEAT [8, 16] at priority 1 back to back for 20 s)",
        (("requests_rejected", "dq_rank"),),
        log_verbose=0,
        trace=False,
        server_args=("--model-config-name=priority",),
        injections=(
            Injection(
                10,
                2,
                {"dq_front": "rank", "dq_rows": 8, "dq_priority": 1},
                10,
                "a high-priority bulk client: dq_rank FEAT [8, 16] at priority 1, back to back",
                repeat_s=20,
            ),
        ),
    ),
    _dq(
        "dq_queue_full_rejects",
        "served with --model-config-name=bounded: dq_rank's `max_queue_size` is 8; 10 s in, "
        "10 more clients send dq_rank FEAT [1, 16] back to back for 6 s",
        (("requests_rejected", "dq_rank"),),
        server_args=("--model-config-name=bounded",),
        injections=(
            Injection(
                10,
                10,
                {"dq_front": "rank", "dq_rows": 1},
                10,
                "a burst: dq_rank FEAT [1, 16], back to back",
                repeat_s=6,
            ),
        ),
    ),
    _dq(
        "dq_child_hang_in_batch",
        "10 s in, one dq_gateway request whose first dq_rank call carries `dq_fault=hang`: "
        "the dq_rank batch that holds it sleeps 300 s, holding every request batched with it",
        (("hung_request", "dq_gateway"), ("hung_request", "dq_rank")),
        injections=(_DQ_HANG,),
    ),
    _dq(
        "dq_child_hang_unordered",
        "served with --model-config-name=unordered: dq_rank without `preserve_ordering`; 10 s "
        "in, one dq_gateway request whose first dq_rank call carries `dq_fault=hang`: the "
        "dq_rank batch that holds it sleeps 300 s, holding every request batched with it",
        (("hung_request", "dq_gateway"),),
        server_args=("--model-config-name=unordered",),
        injections=(_DQ_HANG,),
    ),
    _dq(
        "dq_child_hang_in_batch_quiet",
        "`--log-verbose 0`, no trace files: 10 s in, one dq_gateway request whose first "
        "dq_rank call carries `dq_fault=hang`: the dq_rank batch that holds it sleeps 300 s",
        (("model_stalled", "dq_gateway"),),
        log_verbose=0,
        trace=False,
        injections=(_DQ_HANG,),
    ),
)
SCENARIOS.update({s.name: s for s in _DQ})


# ------------------------------------------------------------------------------ load


@dataclass
class Outcomes:
    lock: threading.Lock = field(default_factory=threading.Lock)
    rows: list[dict[str, object]] = field(default_factory=list)

    def add(self, label: str, outcome: object, t0: float) -> None:
        at_s = round(getattr(outcome, "started", 0.0) - t0, 3)
        if at_s < 0 and label == "healthy":  # sent during a lead (Scenario.lead_s)
            label = "healthy (before the capture)"
        row = {
            "label": label,
            "at_s": at_s,
            "status": str(getattr(getattr(outcome, "status", None), "value", "?")),
            "latency_s": round(float(getattr(outcome, "latency_s", 0.0)), 3),
            "error": str(getattr(outcome, "error", ""))[:200],
        }
        with self.lock:
            self.rows.append(row)

    def note(self, label: str, at_s: float, status: str, latency_s: float, error: str) -> None:
        """A row for an injected action that is not a request (a kill, a reload)."""
        row = {
            "label": label,
            "at_s": round(at_s, 3),
            "status": status,
            "latency_s": round(latency_s, 3),
            "error": error[:200],
        }
        with self.lock:
            self.rows.append(row)

    def summary(self, label: str) -> dict[str, object]:
        rows = [r for r in self.rows if r["label"] == label]
        by: dict[str, int] = {}
        for r in rows:
            by[str(r["status"])] = by.get(str(r["status"]), 0) + 1
        lat = sorted(float(str(r["latency_s"])) for r in rows if r["status"] == "ok")
        out: dict[str, object] = {
            "requests": len(rows),
            "by_status": by,
            "ok_latency_p50_s": lat[len(lat) // 2] if lat else None,
            "ok_latency_max_s": lat[-1] if lat else None,
        }
        errors = [str(r["error"]) for r in rows if r["error"] and r["status"] != "ok"]
        if errors:
            out["first_error"] = errors[0]
        return out


def _inputs(repo: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if repo == "ocr":
        return {"IMAGE": rng.random((32, 48), dtype=np.float32)}
    if repo == "recsys":
        return {
            "USER": rng.standard_normal(16).astype(np.float32),
            "ITEMS": rng.integers(0, 100_000, size=32).astype(np.int64),
        }
    if repo == "asr":
        return {"AUDIO": rng.standard_normal(1600).astype(np.float32)}
    if repo == "vision":  # a batch of one HWC photo, int pixels (the ensemble is batched)
        return {"PHOTO": rng.integers(0, 256, size=(1, 24, 40, 3)).astype(np.int32)}
    if repo == "stateful":  # one raw sensor reading; no batch dimension (sess_norm: 0)
        return {"RAW": rng.standard_normal(6).astype(np.float32)}
    if repo == "chain":  # one query of 3 sub-queries of 4; no batch dimension (ch_gateway: 0)
        return {"QUERY": rng.standard_normal(12).astype(np.float32)}
    if repo == "rag":  # a batch of one question of 4 to 15 words (the ensemble is batched)
        n = int(rng.integers(4, 16))
        text = " ".join(f"q{int(x)}" for x in rng.integers(0, 2000, size=n))
        return {"QUESTION": np.array([[text.encode()]], dtype=np.object_)}
    if repo == "fraud":  # one transaction's 12 numbers; no batch dimension (fr_gateway: 0)
        return {"TXN": (rng.standard_normal(12) * 50 + 100).astype(np.float32)}
    if repo == "noisy":  # 8 features; no batch dimension (nz_router: 0)
        return {"X": rng.standard_normal(8).astype(np.float32)}
    if repo == "doc":  # a document of 2 to 4 pages of 16 values; no batch dimension
        return {"DOC": rng.random(16 * int(rng.integers(2, 5)), dtype=np.float32)}
    if repo == "tts":  # one text of 1 or 2 sentences; no batch dimension (tts_frontend: 0)
        return {"TEXT": np.array([_tts_text(rng).encode()], dtype=np.object_)}
    if repo == "vid":  # one frame of 4 regions of 12 values; no batch dimension (vid_gateway: 0)
        return {"FRAME": rng.random(48, dtype=np.float32)}
    if repo == "kws":  # 100 ms of audio at 16 kHz; no batch dimension (kws_gateway: 0)
        return {"AUDIO": (rng.standard_normal(1600) * 0.1).astype(np.float32)}
    if repo == "geo":  # a batch of one UINT8 tile of 16 or 32 x 16 or 32 and its zoom (12-17)
        h, w = (int(x) for x in rng.choice([16, 32], size=2))
        return {
            "TILE": rng.integers(0, 256, size=(1, h, w)).astype(np.uint8),
            "ZOOM": np.array([[int(rng.integers(12, 18))]], dtype=np.int32),
        }
    if repo == "img":  # a batch of one 16x16 grey thumbnail, FP32 pixels 0-255
        return {"IMAGE": rng.integers(0, 256, size=(1, 256)).astype(np.float32)}
    if repo == "warm":  # one probe of 20 values; no batch dimension (warm_gateway: 0)
        return {"PROBE": rng.standard_normal(20).astype(np.float32)}
    if repo == "xl":  # 2 or 3 sentences of 8 source token ids; no batch dimension
        return {"SRC": rng.integers(4, 32000, size=8 * int(rng.integers(2, 4))).astype(np.int32)}
    if repo == "ops":  # a document of 1 to 3 pages of 16 features (ops_ensemble takes the first)
        return {"DOC": rng.random(16 * int(rng.integers(1, 4)), dtype=np.float32)}
    if repo == "med":  # a batch of 1 to 4 FP16 scans and their ages (med_gateway: 4)
        return medload.scans(rng)
    if repo == "emb":  # a batch of one sentence of 4 to 20 words (the ensemble is batched)
        n = int(rng.integers(4, 21))
        text = " ".join(f"t{int(x)}" for x in rng.integers(0, 5000, size=n))
        return {"TEXT": np.array([[text.encode()]], dtype=np.object_)}
    if repo == "gen":  # a prompt of 3 to 12 words and max_tokens 12, batched [1, 1]
        return genload.gen_inputs(rng)
    if repo == "bg":  # a query (or clip) of 8 to 40 token ids; no batch dimension
        return {"QUERY": rng.integers(1, 30000, size=int(rng.integers(8, 41))).astype(np.int32)}
    if repo == "zoo":  # one text's 8 features, batched [1, 8]
        return {"X": rng.standard_normal((1, 8)).astype(np.float32)}
    if repo == "rl":  # a transaction's 16 features
        return {"FEATURES": rng.standard_normal(16).astype(np.float32)}
    if repo == "pz":  # a query's 16 hashed term weights (pz_ensemble gets it as [1, 16])
        return {"QUERY": (rng.standard_normal(16) * 1.5).astype(np.float32)}
    if repo == "sum":  # a document of 50 to 160 token ids (2 to 4 chunks of 40); no batch dim
        return {"DOC_IDS": rng.integers(1, 30000, size=int(rng.integers(50, 161))).astype(np.int32)}
    words = " ".join(f"w{int(x)}" for x in rng.integers(0, 500, size=int(rng.integers(3, 9))))
    return {
        "PROMPT": np.array([words.encode()], dtype=np.object_),
        "MAX_NEW": np.array([10], dtype=np.int32),
    }


_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def _tts_text(rng: np.random.Generator) -> str:
    """1 or 2 sentences of 3 to 7 words of 2 to 7 letters; one text in five carries a number
    (``42 ...``, at the start of its last sentence), which the frontend keeps as digit
    phones."""
    sentences = []
    for _ in range(int(rng.integers(1, 3))):
        words = [
            "".join(rng.choice(_LETTERS, size=int(rng.integers(2, 8))))
            for _ in range(int(rng.integers(3, 8)))
        ]
        sentences.append(" ".join(words))
    if rng.random() < 0.2:  # first, so that the frontend's 16 phones keep it
        sentences[-1] = f"{int(rng.integers(1, 100))} {sentences[-1]}"
    return ". ".join(sentences) + "."


def _send(
    client: object, repo: str, inputs: dict[str, np.ndarray], params: dict, request_id: str = ""
) -> object:
    if repo == "ocr":
        return client.infer("ocr_ensemble", inputs, "", parameters=params or None)  # type: ignore[attr-defined]
    if repo == "recsys":
        return client.infer("rec_orchestrator", inputs, "", parameters=params or None)  # type: ignore[attr-defined]
    if repo == "asr":
        return client.infer("asr_router", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "vision":
        return client.infer("vis_ensemble", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "chain":
        return client.infer("ch_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "rag":
        return client.infer("rag_pipeline", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "fraud":
        return client.infer("fr_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "noisy":
        return client.infer("nz_router", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "doc":
        return client.infer("doc_router", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "tts":
        return client.infer("tts_frontend", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "vid":
        return client.infer("vid_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "kws":
        return client.infer("kws_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "geo":  # UINT8, which TritonClient.infer does not map
        return _infer_any_dtype(client, "geo_pipeline", inputs, request_id, params)
    if repo == "med":
        return client.infer("med_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "img":
        return _img_send(client, inputs, params, request_id)
    if repo == "ops":
        return _ops_send(client, inputs, params, request_id)
    if repo == "pz":
        return _pz_send(client, inputs, params, request_id)
    if repo == "rl":
        return client.infer("rl_router", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "zoo":
        return _zoo_send(client, inputs, params)
    if repo == "warm":
        return client.infer("warm_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "xl":
        return client.infer("xl_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "emb":
        return client.infer("emb_ensemble", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if repo == "gen":  # decoupled: a gRPC stream or an HTTP generate_stream, to its end
        return client.send(inputs, params)  # type: ignore[attr-defined]
    if repo == "sum":  # decoupled: a gRPC stream per request, read to its final flag
        return client.stream("sum_router", inputs, "", parameters=params or None)  # type: ignore[attr-defined]
    if repo == "bg":  # decoupled: a gRPC stream per request, read to its final flag
        return _bg_send(client, inputs, params)
    return client.stream("llm_bls", inputs, "", parameters=params or None)  # type: ignore[attr-defined]


def _bg_send(client: object, inputs: dict[str, np.ndarray], params: dict) -> object:
    """A gRPC stream to ``bg_stream`` and ``bg_caption`` in turn, per client, read to its
    final flag (or its deadline); ``bg_model`` in ``params`` picks one (not sent)."""
    params = dict(params)
    model = params.pop("bg_model", None)
    if model is None:
        n = int(getattr(client, "bg_sent", 0))
        client.bg_sent = n + 1  # type: ignore[attr-defined]
        model = ("bg_stream", "bg_caption")[n % 2]
    return client.stream(model, inputs, "", parameters=params or None)  # type: ignore[attr-defined]


def _img_send(
    client: object, inputs: dict[str, np.ndarray], params: dict, request_id: str
) -> object:
    """``img_gateway`` infer; with ``img_direct`` in ``params``, a batch of 8 thumbnails
    (PIXELS [8, 256]) straight to ``img_preprocess`` instead (the surge of a bulk job), then a
    pause of ``img_pause_s`` (neither is sent as a request parameter)."""
    params = dict(params)
    direct = params.pop("img_direct", None)
    pause = float(params.pop("img_pause_s", 0) or 0)
    if direct:
        pixels = np.tile(inputs["IMAGE"], (8, 1)).astype(np.float32)
        outcome = client.infer(  # type: ignore[attr-defined]
            "img_preprocess", {"PIXELS": pixels}, request_id, parameters=params or None
        )
    else:
        outcome = client.infer("img_gateway", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if pause:
        time.sleep(pause)
    return outcome


def _ops_send(
    client: object, inputs: dict[str, np.ndarray], params: dict, request_id: str
) -> object:
    """``ops_router`` (DOC [16 k]) and ``ops_ensemble`` (its first page, PAGE [1, 16]) in turn,
    per client; ``ops_front`` in ``params`` picks one (``router`` or ``ensemble``), then a
    pause of ``ops_pause_s`` (neither is sent as a request parameter)."""
    params = dict(params)
    front = params.pop("ops_front", None)
    pause = float(params.pop("ops_pause_s", 0) or 0)
    if front is None:
        n = int(getattr(client, "ops_sent", 0))
        client.ops_sent = n + 1  # type: ignore[attr-defined]
        front = "router" if n % 2 == 0 else "ensemble"
    if front == "router":
        outcome = client.infer("ops_router", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    else:
        page = {"PAGE": inputs["DOC"][:16].reshape(1, 16).astype(np.float32)}
        outcome = client.infer("ops_ensemble", page, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if pause:
        time.sleep(pause)
    return outcome


def _pz_send(
    client: object, inputs: dict[str, np.ndarray], params: dict, request_id: str
) -> object:
    """``pz_orchestrator`` (QUERY [16]) and ``pz_ensemble`` (QUERY [1, 16]) in turn, per
    client; ``pz_front`` in ``params`` picks one (``orchestrator``, ``ensemble``, or a
    miswired copy of the ensemble: ``broken`` for pz_ensemble_broken, ``partial`` for
    pz_ensemble_partial), then a pause of ``pz_pause_s`` (neither is sent as a request
    parameter)."""
    params = dict(params)
    front = params.pop("pz_front", None)
    pause = float(params.pop("pz_pause_s", 0) or 0)
    if front is None:
        n = int(getattr(client, "pz_sent", 0))
        client.pz_sent = n + 1  # type: ignore[attr-defined]
        front = "orchestrator" if n % 2 == 0 else "ensemble"
    if front == "orchestrator":
        outcome = client.infer("pz_orchestrator", inputs, request_id, parameters=params or None)  # type: ignore[attr-defined]
    else:
        model = {"broken": "pz_ensemble_broken", "partial": "pz_ensemble_partial"}.get(
            front, "pz_ensemble"
        )
        query = {"QUERY": inputs["QUERY"].reshape(1, 16)}
        outcome = client.infer(model, query, request_id, parameters=params or None)  # type: ignore[attr-defined]
    if pause:
        time.sleep(pause)
    return outcome


def _infer_any_dtype(
    client: object, model: str, inputs: dict[str, np.ndarray], request_id: str, params: dict
) -> object:
    """``TritonClient.infer`` for inputs of any numpy dtype tritonclient knows (UINT8 ...):
    the same request (no id unless the client sends ids, its deadline) and the same
    ``Outcome``, through the wrapped gRPC client."""
    from tritonclient.utils import np_to_triton_dtype

    from observability.load.client import _TIMEOUT_MARKERS, Outcome, Status

    tc = client._tc  # type: ignore[attr-defined]
    items = []
    for name, array in inputs.items():
        item = tc.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        item.set_data_from_numpy(array)
        items.append(item)
    kwargs: dict[str, object] = {
        "request_id": request_id if client.send_ids else "",  # type: ignore[attr-defined]
        "client_timeout": client.timeout_s,  # type: ignore[attr-defined]
    }
    if params:
        kwargs["parameters"] = params
    started = time.monotonic()
    try:
        result = client._client.infer(model, items, **kwargs)  # type: ignore[attr-defined]
    except Exception as err:  # the outcome is reported, not raised
        latency = time.monotonic() - started
        text = str(err)
        timed_out = any(m in text.lower() for m in _TIMEOUT_MARKERS)
        late = latency >= client.timeout_s * 0.9  # type: ignore[attr-defined]
        status = Status.TIMEOUT if timed_out and late else Status.ERROR
        return Outcome(request_id, model, "", status, started, latency, text[:500])
    latency = time.monotonic() - started
    response = result.get_response(as_json=True)
    shapes = {
        o["name"]: tuple(int(d) for d in o.get("shape", [])) for o in response.get("outputs", [])
    }
    return Outcome(request_id, model, "", Status.OK, started, latency, "", shapes)


_PAUSE_S = {
    "ocr": 0.2,
    "llm": 0.5,
    "recsys": 0.25,
    "asr": 0.25,
    "vision": 0.2,
    "stateful": 0.2,
    "chain": 0.2,
    "rag": 0.2,
    "fraud": 0.2,
    "noisy": 0.5,
    "doc": 0.2,
    "tts": 0.2,
    "emb": 0.2,
    "vid": 0.2,
    "kws": 0.2,
    "sum": 0.3,
    "geo": 0.0,
    "med": 0.3,
    "warm": 0.2,
    "img": 0.3,
    "xl": 0.4,
    "gen": 0.6,
    "ops": 0.6,
    "bg": 0.3,
    "cx": 0.2,
}


_PAUSE_S["pz"] = 0.3  # round 29's family (kept out of the dict above to ease merges)
_PAUSE_S["zoo"] = 0.25  # round 30's family
_PAUSE_S["ex"] = 0.2  # round 31's family
_PAUSE_S["gs"] = gsload.PAUSE_S  # round 34's family: a top-up of the stream, then a pause
_PAUSE_S["rl"] = 0.2  # round 37's family
_PAUSE_S["hx"] = 0.0  # round 32's family: each answer is followed by the next request at once
_PAUSE_S["dq"] = dqload.PAUSE_S  # round 38's family


_JITTERED = frozenset({"emb"})
"""Families whose clients pause a random 0 to 2 x ``_PAUSE_S`` (uniform) instead of exactly
``_PAUSE_S``: unsynchronised clients, whose requests do not fall into step with the batches of
the model they wait on."""


def _pause_text(repo: str) -> str:
    if repo in _JITTERED:
        return f"a random 0 to {2 * _PAUSE_S[repo]:g} s (uniform)"
    if not _PAUSE_S[repo]:
        return "not at all (constant concurrency, as perf_analyzer's)"
    return f"{_PAUSE_S[repo]} s"


_PROTOCOL = {"stateful": "HTTP", "vid": "HTTP", "med": "HTTP", "hx": "HTTP"}


def _client_url(lab: object, repo: str) -> str:
    """Where a family's clients send: HTTP for ``stateful``, ``vid`` and ``med``, gRPC for the
    others."""
    if repo in ("gen", "cx", "day"):  # both: gRPC and HTTP (genload.GenClient, cxload)
        return f"{lab.grpc_url} {lab.http_url}"  # type: ignore[attr-defined]
    http = _PROTOCOL.get(repo) == "HTTP"
    return str(lab.http_url if http else lab.grpc_url)  # type: ignore[attr-defined]


def _load_client(repo: str, url: str, timeout_s: float, send_ids: bool) -> Any:
    """A family's client for one thread: ``medload.MedClient`` (FP16, model versions) for
    ``med``, ``observability.load.TritonClient`` for the others."""
    if repo == "med":
        return medload.MedClient(url, timeout_s=timeout_s, send_ids=send_ids)
    if repo == "gen":
        return genload.GenClient(url, timeout_s=timeout_s)
    from observability.load import TritonClient

    return TritonClient(url, timeout_s=timeout_s, send_ids=send_ids)


def _worker(
    url: str,
    repo: str,
    seed: int,
    stop: threading.Event,
    until: float,
    out: Outcomes,
    t0: float,
    delay_s: float = 0.0,
    ids: str = "none",
    audio: str = "fixed",
    pin: str = "",
    streams: str = "grpc",
    cap: int = MAX_REQUESTS_PER_WORKER,
    cx: str = "",
    hx: str = "",
    sw: str = "",
    gs: str = "split",
    lz: str = "",
) -> None:
    if repo == "dq":  # gateway callers and a bulk job on the batched child (tests.foreign.dqload)
        dqload.dq_worker(url, seed, stop, until, out.add, t0, cap, delay_s)
        return
    if repo == "lz":  # closed-loop slots in a load process (tests.foreign.lzload)
        lzload.lz_worker(url, seed, stop, until, out.add, t0, delay_s, lz)
        return
    if repo == "day":  # a production day's noise (tests.foreign.dayload)
        dayload.day_worker(url, seed, stop, until, out.add, t0, cap, delay_s)
        return
    if repo == "sw":  # perf_analyzer's modes in a load process (tests.foreign.swload)
        swload.sw_worker(url, seed, stop, until, out.add, t0, swload.CAP, delay_s, sw)
        return
    if repo == "gs":  # long-lived gRPC streams, several requests on each (tests.foreign.gsload)
        gsload.gs_worker(url, seed, stop, until, out.add, t0, cap, delay_s, gs)
        return
    if repo == "hx":  # a client process with many HTTP requests in flight (tests.foreign.hxload)
        hxload.hx_worker(url, seed, stop, until, out.add, t0, cap, delay_s, hx)
        return
    if repo == "zoo":  # hot models at random, rare ones on a schedule
        _zoo_worker(url, seed, stop, until, out, t0, cap)
        return
    if repo == "ex":  # python_backend's examples, in turn (tests.foreign.exload)
        exload.ex_worker(url, seed, stop, until, out.add, t0, cap, _PAUSE_S[repo])
        return
    if repo == "cx":  # deadlines, cancellations and retries (tests.foreign.cxload)
        cxload.cx_worker(url, seed, stop, until, out.add, t0, cap, delay_s, cxload.PLANS[cx])
        return
    if repo == "gen":
        genload.gen_worker(
            url,
            seed,
            stop,
            until,
            out.add,
            t0,
            _PAUSE_S[repo],
            MAX_REQUESTS_PER_WORKER,
            delay_s,
            http=streams == "http",
        )
        return
    if repo == "stateful":
        seqload.sequence_worker(
            url,
            seed,
            stop,
            until,
            out.add,
            t0,
            _PAUSE_S[repo],
            MAX_REQUESTS_PER_WORKER,
            delay_s,
            pin,
        )
        return
    client = _load_client(repo, url, 10, ids == "mixed")
    rng = np.random.default_rng(seed)
    pause = _PAUSE_S[repo]
    utterance = np.zeros(0, dtype=np.float32)
    try:
        stop.wait(delay_s)
        for n in range(cap):
            if stop.is_set() or time.monotonic() > until:
                break
            inputs = _inputs(repo, rng)
            if audio == "growing":  # the utterance so far: 1 to 8 chunks of 800 frames
                chunk = inputs["AUDIO"][:800]
                utterance = chunk if n % 8 == 0 else np.concatenate([utterance, chunk])
                inputs = {"AUDIO": utterance}
            rid = f"c{seed}-{n}" if ids == "mixed" and n % 2 == 0 else ""
            out.add("healthy", _send(client, repo, inputs, {}, rid), t0)
            if repo == "recsys":  # the profile endpoint calls the plain model directly
                direct = client.infer("rec_features", {"USER": inputs["USER"]}, "")
                out.add("healthy:rec_features", direct, t0)
            if repo == "med" and n % 2 == 1:  # the viewer pins the previous classifier
                viewer = client.infer("med_classifier", {"NORMED": inputs["SCAN"]}, "", version="1")
                out.add("healthy:med_classifier_v1", viewer, t0)
            stop.wait(rng.uniform(0, 2 * pause) if repo in _JITTERED else pause)
    finally:
        client.close()


def _inject(lab: object, repo: str, inj: Injection, idx: int, out: Outcomes, t0: float) -> None:
    from observability.load import TritonClient

    label = f"fault@{inj.at_s:g}"
    if inj.action == "kill_stub":
        _kill_stub(lab, inj.target, label, out, t0)
        return
    if inj.action in ("restart_server", "kill_server"):
        down_s = float(inj.params.get("down_s", 0)) if inj.action == "restart_server" else None
        _kill_server(lab, down_s, label, out, t0)
        return
    if inj.action == "request" and repo == "cx":  # params' cx_plan: the client's plan
        params = {k: v for k, v in inj.params.items() if k != "cx_plan"}
        plan = cxload.PLANS[str(inj.params.get("cx_plan", "calm"))]
        cxload.cx_inject(_client_url(lab, repo), idx, params, plan, label, out.add, t0)
        return
    if inj.action == "request" and repo == "dq":  # params' dq_front, dq_rows, dq_priority
        url = _client_url(lab, repo)
        timeout = inj.timeout_s or 60
        cap = MAX_REQUESTS_PER_WORKER
        dqload.dq_inject(url, idx, inj.params, timeout, inj.repeat_s, cap, label, out.add, t0)
        return
    if inj.action == "request" and repo == "day":  # one document, the usual 1 s deadline
        dayload.day_inject(_client_url(lab, repo), idx, dict(inj.params), label, out.add, t0)
        return
    if inj.action == "request" and repo == "sw":  # one gRPC client per faulty bid
        url = _client_url(lab, repo)
        swload.sw_inject(url, idx, dict(inj.params), inj.timeout_s or 60, label, out.add, t0)
        return
    if inj.action == "request" and repo == "gs":  # a stream of its own (tests.foreign.gsload)
        url = _client_url(lab, repo)
        timeout = inj.timeout_s or 60
        gsload.gs_inject(url, idx, dict(inj.params), timeout, inj.repeat_s, label, out.add, t0)
        return
    if inj.action == "request" and repo == "hx":  # one HTTP client per faulty ticket
        url = _client_url(lab, repo)
        hxload.hx_inject(url, idx, dict(inj.params), inj.timeout_s or 60, label, out.add, t0)
        return
    if inj.action == "request" and repo == "ex":  # params' ex_model: the model it calls
        url = _client_url(lab, repo)
        exload.ex_inject(url, idx, inj.params, inj.timeout_s or 60, label, out.add, t0)
        return
    if inj.action == "request" and repo == "stateful":
        url = _client_url(lab, repo)
        seqload.inject_sequence(url, inj.params, idx, inj.timeout_s or 60, label, out.add, t0)
        return
    client: Any
    if inj.action == "request":
        client = _load_client(repo, _client_url(lab, repo), inj.timeout_s or 60, inj.request_ids)
    else:
        client = TritonClient(lab.grpc_url, timeout_s=inj.timeout_s or 60, send_ids=False)  # type: ignore[attr-defined]
    try:
        if inj.action in ("unload", "load"):
            started = time.monotonic()
            try:
                if inj.action == "load":
                    client.load_model(inj.target)
                else:  # the wrapper has no unload
                    client._client.unload_model(inj.target)
                status, error = "ok", ""
            except Exception as err:  # the outcome is reported, not raised
                status, error = "error", str(err)
            out.note(label, started - t0, status, time.monotonic() - started, error)
            return
        if inj.action in ("reload", "swap_config"):
            started = time.monotonic()
            try:
                if inj.action == "swap_config":
                    # The served copy's config.pbtxt changes on disk; a load without a config
                    # override makes Triton read it again.
                    repo_dir = Path(lab.config.model_repository)  # type: ignore[attr-defined]
                    shutil.copyfile(HERE / inj.source, repo_dir / inj.target / "config.pbtxt")
                    client.load_model(inj.target)
                else:
                    # Loading an unchanged model (or with an equal config) is a no-op on
                    # 2.51: a changed config parameter makes Triton load it again with new
                    # instances, as a deploy of a new config does.
                    config = client.model_config(inj.target)
                    params = config.setdefault("parameters", {})
                    params["deployed_at"] = {"string_value": f"{time.time():.0f}"}
                    for key, value in inj.params.items():  # what the deploy changes
                        params[key] = {"string_value": str(value)}
                    client.load_model(inj.target, config=json.dumps(config))
                status, error = "ok", ""
            except Exception as err:  # the outcome is reported, not raised
                status, error = "error", str(err)
            out.note(label, started - t0, status, time.monotonic() - started, error)
            return
        rng = np.random.default_rng(1000 + idx)
        until = time.monotonic() + inj.repeat_s
        for n in range(MAX_REQUESTS_PER_WORKER):
            inputs = _inputs(repo, rng)
            rid = f"fault-{idx}-{n}" if inj.request_ids else ""
            out.add(label, _send(client, repo, inputs, dict(inj.params), rid), t0)
            if n + 1 >= MAX_REQUESTS_PER_WORKER or time.monotonic() >= until:
                break
    finally:
        client.close()


def _kill_stub(lab: object, instance: str, label: str, out: Outcomes, t0: float) -> None:
    """SIGKILL the python stub serving ``instance``: its command line names the model
    instance (``... <parent pid> <backend dir> <shm size> <instance> DEFAULT``)."""
    started = time.monotonic()
    procs = lab.lab_processes()  # type: ignore[attr-defined]
    pids = [
        pid
        for pid, cmd in procs.items()
        if "triton_python_backend_stub" in cmd and instance in cmd.split()
    ]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    status = f"killed pid {' '.join(map(str, pids))}" if pids else "error"
    out.note(label, started - t0, status, 0.0, "" if pids else "no stub found")


def _kill_server(lab: object, down_s: float | None, label: str, out: Outcomes, t0: float) -> None:
    """SIGKILL tritonserver (its stubs notice that their parent is gone and exit); with
    ``down_s``, start it again that many seconds later on the same ports (the lab's
    ``start(ports)``: the log goes on in the same file, the counters start at zero)."""
    started = time.monotonic()
    pid = lab.pid  # type: ignore[attr-defined]
    if pid is None:
        out.note(label, started - t0, "error", 0.0, "no server process")
        return
    os.kill(pid, signal.SIGKILL)
    out.note(label, started - t0, f"killed server pid {pid}", 0.0, "")
    if down_s is None:
        return
    time.sleep(down_s)
    again = time.monotonic()
    try:
        ports = lab.ports  # type: ignore[attr-defined]
        lab.stop()  # type: ignore[attr-defined]  # reaps the killed server and any stub left
        lab.start(ports)  # type: ignore[attr-defined]
        status, error = f"restarted, pid {lab.pid}", ""  # type: ignore[attr-defined]
    except Exception as err:  # the outcome is reported, not raised
        status, error = "error", str(err)
    out.note(label, again - t0, status, time.monotonic() - again, error)


# ------------------------------------------------------------------------------ record


def _scrub_meta(bundle: Path) -> None:
    path = bundle / "meta.json"
    meta = json.loads(path.read_text())
    for key in ("log", "trace"):
        if meta.get("sources", {}).get(key):
            meta["sources"][key] = Path(meta["sources"][key]).name
    path.write_text(json.dumps(meta, indent=2, sort_keys=True))


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _served_repository(scenario: Scenario, tmp: Path) -> Path:
    """The repository Triton serves: this folder's own, or a copy when an injection edits it.

    The copy keeps the layout ``<tmp>/foreign/repos/<repo>`` with ``<tmp>/foreign/pylib``
    linked to ours, so models that find shared helpers relative to their own file still do.
    """
    if not scenario.edits_repo:
        return REPOS / scenario.repo
    root = tmp / "foreign"
    served = root / "repos" / scenario.repo
    shutil.copytree(
        REPOS / scenario.repo, served, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    (root / "pylib").symlink_to(HERE / "pylib", target_is_directory=True)
    return served


def record_scenario(scenario: Scenario, out: Path) -> Path:
    """Record one scenario into ``out`` (which must not exist); return it."""
    from observability.bundle import write_archive
    from observability.bundle.capture import CaptureConfig, capture
    from observability.lab import LabConfig, TritonLab

    if out.exists():
        raise SystemExit(f"{out} exists: remove it first (or record elsewhere)")
    if any(i.at_s + scenario.lead_s < 0 for i in scenario.injections):
        raise SystemExit(f"{scenario.name}: an injection before the lead (at_s < -lead_s)")
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    outcomes = Outcomes()
    file_trace = scenario.trace and scenario.trace_mode == "triton"
    otlp_port = _free_loopback_port() if scenario.trace_mode == "opentelemetry" else None
    with tempfile.TemporaryDirectory(prefix=f"foreign-{scenario.name}-") as tmp:
        cfg = LabConfig(
            model_repository=_served_repository(scenario, Path(tmp)),
            run_dir=Path(tmp) / "run",
            log_verbose=scenario.log_verbose,
            log_format=scenario.log_format,
            trace=file_trace,
            trace_log_frequency=20 if file_trace else None,
            env=dict(scenario.env),
            exit_timeout_s=5,
            model_control=scenario.model_control,
            load_models=scenario.load_models,
            extra_args=_server_args(scenario) + _otel_args(otlp_port),
        )
        lab = TritonLab(cfg)
        stop = threading.Event()
        threads: list[threading.Thread] = []
        timers: list[threading.Timer] = []
        try:
            lab.start()
            _warm_up(_client_url(lab, scenario.repo), scenario, outcomes)
            t0 = time.monotonic() + scenario.lead_s  # the capture's start
            until = t0 + scenario.duration_s + 2
            for seed in range(1, scenario.clients + 1):
                th = threading.Thread(
                    target=_worker,
                    args=(
                        _client_url(lab, scenario.repo),
                        scenario.repo,
                        seed,
                        stop,
                        until,
                        outcomes,
                        t0,
                    ),
                    kwargs={
                        "delay_s": scenario.load_delay_s,
                        "ids": scenario.ids,
                        "audio": scenario.audio,
                        "pin": scenario.pins[(seed - 1) % 2],
                        "streams": scenario.streams,
                        "cap": scenario.request_cap,
                        "cx": scenario.cx,
                        "hx": scenario.hx,
                        "sw": scenario.sw,
                        "gs": scenario.gs,
                        "lz": scenario.lz,
                    },
                    daemon=True,
                )
                th.start()
                threads.append(th)
            for inj in scenario.injections:
                for i in range(inj.count):
                    timer = threading.Timer(
                        inj.at_s + scenario.lead_s,
                        _inject,
                        args=(lab, scenario.repo, inj, i, outcomes, t0),
                    )
                    timer.daemon = True
                    timer.start()
                    timers.append(timer)
            bundle = Path(tmp) / scenario.name
            time.sleep(max(0.0, t0 - time.monotonic()))  # the lead: the server runs first
            result = capture(
                CaptureConfig(
                    out=bundle,
                    url=lab.http_url,
                    metrics_url=lab.metrics_url,
                    log=lab.log_path,
                    trace=lab.trace_path if file_trace else None,
                    duration_s=scenario.duration_s,
                    interval_s=scenario.interval_s,
                    log_from_start=scenario.log_from_start,
                    otlp_port=otlp_port,
                )
            )
            stop.set()
            for th in threads:
                th.join(timeout=15)
            triton_version = lab.triton_version
            pytriton = lab.install.pytriton_version
        finally:
            stop.set()
            for timer in timers:
                timer.cancel()
            lab.stop()
        _scrub_meta(bundle)
        out.mkdir(parents=True)
        write_archive(bundle, out / ARCHIVE)
    expected = {"findings": [list(p) for p in scenario.expected], "healthy": scenario.healthy}
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    labels = sorted({str(r["label"]) for r in outcomes.rows})
    clients = {label: outcomes.summary(label) for label in labels}
    (out / "PROVENANCE.md").write_text(
        _provenance(scenario, out, started, triton_version, pytriton, result.failures, clients)
    )
    (out / "analysis-at-recording.md").write_text(analysis_markdown(out / ARCHIVE, scenario))
    return out


OTEL_SCHEDULE_DELAY_MS = 200
"""``opentelemetry,bsp_schedule_delay``: Triton's span processor posts every 200 ms (its
default, 5 s, would leave the window's last spans unsent)."""


def _free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (the capture's OTLP receiver binds it later)."""
    from observability.lab.ports import free_port

    return free_port()


def _otel_args(port: int | None) -> tuple[str, ...]:
    """Triton's flags for OpenTelemetry trace mode, exporting to 127.0.0.1:``port``."""
    if port is None:
        return ()
    return (
        "--trace-config=mode=opentelemetry",
        f"--trace-config=opentelemetry,url=127.0.0.1:{port}/v1/traces",
        f"--trace-config=opentelemetry,bsp_schedule_delay={OTEL_SCHEDULE_DELAY_MS}",
        "--trace-config=rate=1",
        "--trace-config=level=TIMESTAMPS",
    )


def _server_args(scenario: Scenario) -> tuple[str, ...]:
    # ``{foreign}`` stands for this folder (pz: a second model repository under variants/).
    args = tuple(a.replace("{foreign}", str(HERE)) for a in scenario.server_args)
    if not any("{caches}" in a for a in args):
        return args
    from observability.lab.install import find_install

    caches = str(find_install().root / "caches")
    return tuple(a.replace("{caches}", caches) for a in args)


def _warm_up(url: str, scenario: Scenario, outcomes: Outcomes) -> None:
    """``scenario.warmup`` requests, one at a time, before the capture starts."""
    if not scenario.warmup:
        return
    if scenario.repo == "stateful":
        seqload.warm_up(url, min(scenario.warmup, 20), outcomes.add)
        return
    client = _load_client(scenario.repo, url, 30, False)
    try:
        rng = np.random.default_rng(99)
        t0 = time.monotonic()
        for _ in range(min(scenario.warmup, 20)):
            inputs = _inputs(scenario.repo, rng)
            outcomes.add("warmup", _send(client, scenario.repo, inputs, {}), t0)
    finally:
        client.close()


def analysis_markdown(archive: Path, scenario: Scenario) -> str:
    from observability.analyze import analyze_bundle
    from observability.report import work_markdown

    result = analyze_bundle(archive)
    lines = [
        f"# analyze of {scenario.name} at recording time",
        "",
        f"expected: {list(map(list, scenario.expected)) or 'healthy (nothing >= warning)'}",
        "",
        "| kind | severity | model | instance | summary |",
        "|---|---|---|---|---|",
    ]
    for f in result.findings:
        summary = f.summary.replace("|", "/").replace("\n", " ")
        lines.append(
            f"| {f.kind} | {f.severity.value} | {f.model} | {f.instance or ''} | {summary} |"
        )
    cov = result.coverage.lines() if result.coverage is not None else []
    lines += ["", "## coverage", "", *(f"- {c}" for c in cov), "", "## in flight at the end", ""]
    lines.append(work_markdown(result.work))
    return "\n".join(lines) + "\n"


_LOAD_TEXT = {
    "cx": "`cx_gateway` infer of a quote, QUERY [16] FP32 and ROUNDS [1] INT32, with the "
    "scenario's client deadline in place of the 10 s below (`tests.foreign.cxload`, its plan "
    "in the summary above)",
    "ocr": "`ocr_ensemble` infer, a random 32x48 image",
    "llm": "`llm_bls` stream, MAX_NEW 10",
    "recsys": "`rec_orchestrator` infer, a random USER [16] and 32 candidate ITEMS; then "
    "`rec_features` infer straight from the client with the same USER",
    "asr": "`asr_router` infer, a random AUDIO [1600]",
    "vision": "`vis_ensemble` infer, a random PHOTO [1, 24, 40, 3] (INT32 pixels)",
    "stateful": "one step of a 4-step sequence: `sess_norm` infer of a random RAW [6], then "
    "`sess_tracker` infer of its READING [1, 6] with `sequence_id`, `sequence_start` on the "
    "first step and `sequence_end` on the last, each client pinned to one version of "
    "sess_tracker",
    "chain": "`ch_gateway` infer, a random QUERY [12]",
    "rag": "`rag_pipeline` infer, a random QUESTION [1, 1] (one string of 4 to 15 words)",
    "fraud": "`fr_gateway` infer, a random TXN [12]",
    "noisy": "`nz_router` infer, a random X [8]",
    "doc": "`doc_router` infer, a random DOC [16 x k] (a document of k = 2 to 4 pages)",
    "tts": "`tts_frontend` infer, a random TEXT [1] (1 or 2 sentences of 3 to 7 words, one "
    "in five with a number)",
    "vid": "`vid_gateway` infer, a random FRAME [48] (FP32 in [0, 1))",
    "emb": "`emb_ensemble` infer, a random TEXT [1, 1] (one string of 4 to 20 words)",
    "kws": "`kws_gateway` infer, a random AUDIO [1600] (FP32, 100 ms at 16 kHz)",
    "sum": "`sum_router` gRPC stream (`enable_empty_final_response`, read to the final flag), "
    "a random DOC_IDS [n] INT32, n = 50 to 160 token ids",
    "geo": "`geo_pipeline` infer, a random TILE [1, H, W] (UINT8, H and W 16 or 32) and "
    "ZOOM [1, 1] (INT32, 12 to 17)",
    "warm": "`warm_gateway` infer, a random PROBE [20] (FP32)",
    "img": "`img_gateway` infer, a random IMAGE [1, 256] (FP32 pixels 0-255)",
    "xl": "`xl_gateway` infer, a random SRC [8 k] (INT32 token ids, k = 2 or 3 sentences)",
    "gen": "a token stream from `gen_ensemble` or `gen_bls` in turn (`tests.foreign.genload`: "
    "a gRPC stream with `enable_empty_final_response` read to the final flag, or, where the "
    "scenario says so, HTTP `generate_stream` read to its end), text_input [1, 1] (a prompt "
    "of 3 to 12 words), max_tokens [1, 1] = 12",
    "ops": "`ops_router` infer of a random DOC [16 k] (k = 1 to 3 pages, FP32) and `ops_ensemble` "
    "infer of a random PAGE [1, 16] in turn",
    "bg": "a gRPC stream (`enable_empty_final_response`, read to the final flag) to "
    "`bg_stream` and `bg_caption` in turn, a random QUERY [n] INT32, n = 8 to 40 token ids",
    "med": "`med_gateway` infer, a batch of b = 1 to 4 random scans: SCAN [b, 64, 64] FP16 "
    "and PATIENT_AGE [b, 1] INT64; after every other one, `med_classifier` version 1 infer "
    "straight from the client (NORMED [b, 64, 64] FP16, the viewer that pins the previous "
    "classifier)",
}


def _provenance(
    scenario: Scenario,
    out: Path,
    started: str,
    triton_version: str,
    pytriton: str,
    failures: list[str],
    clients: dict[str, dict[str, object]],
) -> str:
    inj = (
        "\n".join(
            f"| {i.at_s:g} | {i.count} | {_injected(i)} | {i.timeout_s:g} | {i.what} |"
            for i in scenario.injections
        )
        or _lz_injected(scenario)
        or "| - | - | - | - | none: the healthy twin |"
    )
    env = ", ".join(f"{k}={v}" for k, v in sorted(scenario.env.items())) or "none"
    size = (out / ARCHIVE).stat().st_size
    expected = (
        ", ".join(f"`{k}` on `{m}`" for k, m in scenario.expected)
        or "none of severity warning or above (healthy)"
    )
    return f"""# {scenario.name}

{scenario.summary}.

Recorded by

    python -m tests.foreign.record tests/fixtures/foreign {scenario.name}

- Recorded: {started} (UTC), on {platform.platform()}, Python {platform.python_version()},
  tree at commit {_git_commit()} (plus its uncommitted edits).
- tritonserver {triton_version or "?"} from the nvidia-pytriton {pytriton} wheel, CPU only,
  python backend; the lab of `observability.lab` serving
  `tests/foreign/repos/{scenario.repo}`{_copy_text(scenario)} (model control
  `{scenario.model_control}`), `--log-verbose {scenario.log_verbose}`,{_format_text(scenario)}
  {_trace_text(scenario)}, `--exit-timeout-secs 5`,
  server environment: {env}{_args_text(scenario)}.
- Signals: `observability.bundle.capture` for {scenario.duration_s:g} s
  ({scenario.interval_s:g} s interval, the log {_log_text(scenario)}), written with
  `write_archive` as `{ARCHIVE}` ({size:,} bytes);
  `meta.json`'s source paths cut to file names. Capture failures: {len(failures)}.
- Load: {_load_text(scenario)}{_start_text(scenario)}.
{_pins_text(scenario)}- Injected (seconds after the capture started):

| at s | count | request parameters | client timeout s | what |
|---|---|---|---|---|
{inj}

- Expected: {expected}.
- What the clients saw: `{json.dumps(clients)}`
{f"{chr(10)}{scenario.note}{chr(10)}" if scenario.note else ""}"""


_COUNT = {1: "one", 2: "two", 8: "eight"}


def _lz_injected(scenario: Scenario) -> str:
    """The ``lz`` plans' faulty requests, sent by the load process's own slots."""
    plan = lzload.PLANS.get(scenario.lz) if scenario.repo == "lz" else None
    if plan is None or plan.change != "fault":
        return ""
    return (
        f"| {plan.at_s:g} | {plan.faults} | lz_fault=route_hang | {plan.fault_timeout_s:g} | "
        f"sent by slot(s) 0{'' if plan.faults == 1 else f' to {plan.faults - 1}'} of the load "
        f"process in place of its next quote: {_LZ_HANG} |"
    )


def _load_text(scenario: Scenario) -> str:
    if scenario.repo == "dq":  # tritonclient.grpc threads (priorities), not TritonClient
        return (
            f"{_count_text(scenario)} clients (`tests.foreign.dqload`, tritonclient.grpc: no "
            "request ids;\n  BLS children are built without ids too), each sending one request"
            f"\n  ({_LOAD_TEXT['dq']})\n  then pausing {dqload.PAUSE_S:g} s, client timeout "
            f"{dqload.TIMEOUT_S:g} s, for the whole\n  window"
        )
    if scenario.repo == "lz":  # closed-loop slots, the plan's one change
        return (
            f"{lzload.PLANS[scenario.lz].text()} (BLS children are built without ids too), "
            "each request a `lz_quote` infer"
        )
    if scenario.repo == "sw":  # perf_analyzer's modes, not one request at a time
        return (
            f"{swload.PLANS[scenario.sw].text()}; no request ids (BLS children are built "
            f"without ids too); each request {_LOAD_TEXT['sw']}"
        )
    if scenario.repo == "day":  # a production day's noise, not one kind of request
        return f"{dayload.text()}, for the whole window"
    if scenario.repo == "gs":  # one stream per client, several requests outstanding on it
        return (
            f"{_count_text(scenario)} clients (`tests.foreign.gsload`, plan `{scenario.gs}`, "
            "tritonclient.grpc: no\n  request ids; BLS children are built without ids too), "
            f"each holding {gsload.PLANS[scenario.gs].text()}; {_LOAD_TEXT['gs']}"
        )
    if scenario.repo == "hx":  # processes with many requests in flight, not one at a time
        return (
            f"{hxload.PLANS[scenario.hx].text(scenario.clients)} (`tests.foreign.hxload`, no "
            "request ids; BLS\n  children are built without ids too); each request "
            f"{_LOAD_TEXT['hx']}, the next sent as soon as one is answered, for the whole window"
        )
    return (
        f"{_count_text(scenario)} clients {_ids_text(scenario)}, each sending\n  one request\n"
        f"  ({_LOAD_TEXT[scenario.repo] if scenario.audio == 'fixed' else _GROWING_TEXT})\n"
        f"  then pausing {_pause_text(scenario.repo)}, timeout 10 s, for the whole\n  window"
    )


_LOAD_TEXT["pz"] = (  # round 29's family (kept out of the dict above to ease merges)
    "`pz_orchestrator` infer of a random QUERY [16] (FP32) and `pz_ensemble` infer of a "
    "random QUERY [1, 16] in turn"
)
_LOAD_TEXT["gs"] = (  # round 34's family
    "`async_stream_infer` to "
    "`gs_moderate` (MESSAGE [16] FP32, random; MSG_ID [1] INT64) and `gs_reply` (PROMPT [n] "
    "INT32, n = 4 to 24 random token ids; MSG_ID; `enable_empty_final_response`) in turn; "
    "each request's outcome decided in the stream callback by the MSG_ID its responses "
    "echo (ok at its final response, timeout after 10 s without it), for the whole window"
)
_LOAD_TEXT["rl"] = "an `rl_router` infer of a random FEATURES [16] (FP32)"  # round 37
_LOAD_TEXT["dq"] = (  # round 38's family
    "clients 1 and 2: a `dq_gateway` infer of a random QUERY [16] (FP32); client 3 (a bulk "
    "re-ranking job): a `dq_rank` infer of a random FEAT [2, 16] (FP32) at the default "
    "priority (`tests.foreign.dqload`, tritonclient.grpc)"
)
_LOAD_TEXT["hx"] = (  # round 32's family
    "an `hx_triage` infer of a random TICKET [1, 32] (FP32)"
)
_LOAD_TEXT["sw"] = (  # round 33's family
    "an infer of a random BID_REQUEST [1, 20] (FP32) to `sw_auction` or, from the side "
    "slots, `sw_prebid`"
)
_LOAD_TEXT["zoo"] = (  # round 30's family
    "an infer of a random X [1, 8] (FP32) to a model picked at random by weight (see "
    "the summary); client 1 also sends the rare models' fixed schedule (`_ZOO_RARE`), each "
    "request in its own thread"
)


_LOAD_TEXT["ex"] = (  # round 31's family
    "the next of `ex_bls` infer (INPUT0, INPUT1 FP32 [4], random), `ex_bls_sync` infer (the "
    'same and MODEL_NAME ["ex_add_sub"]), `ex_bls_decoupled` infer (IN [1] INT32, 1 to 4), '
    "an `ex_repeat` gRPC stream (IN [4] INT32, DELAY [4] UINT32 of 5 to 20 ms, WAIT [1] = 5) "
    "and an `ex_square` gRPC stream (IN [1] INT32, 1 to 4), each stream with "
    "`enable_empty_final_response` read to its final flag (`tests.foreign.exload`)"
)


def _count_text(scenario: Scenario) -> str:
    count = _COUNT.get(scenario.clients, str(scenario.clients))
    if scenario.repo == "gen":
        how = "HTTP `generate_stream`" if scenario.streams == "http" else "gRPC streaming"
        return f"{count} {how}"
    return f"{count} {_PROTOCOL.get(scenario.repo, 'gRPC')}"


_GROWING_TEXT = (
    "`asr_router` infer of the utterance so far: AUDIO of 800 x k frames, k = 1, 2, ... 8, "
    "then a new utterance"
)


def _ids_text(scenario: Scenario) -> str:
    if scenario.repo == "gen":
        return (
            "(`tests.foreign.genload.GenClient`: no request ids; BLS children are built\n"
            "  without ids too)"
        )
    if scenario.repo == "ex":
        return (
            "(`tests.foreign.exload`, tritonclient.grpc: no request ids; BLS children are\n"
            "  built without ids too, as the examples build them)"
        )
    if scenario.repo == "cx":
        return (
            "(`tests.foreign.cxload`, tritonclient.grpc and .http: no request ids; BLS\n"
            "  children are built without ids too)"
        )
    if scenario.repo == "med":
        return (
            "(`tests.foreign.medload.MedClient`, tritonclient.http: no request ids; BLS\n"
            "  children are built without ids too)"
        )
    if scenario.repo == "vid":
        return (
            "(`observability.load.TritonClient` over tritonclient.http, `send_ids=False`: no\n"
            "  request ids; BLS children are built without ids too)"
        )
    if scenario.ids == "mixed":
        return (
            "(`observability.load.TritonClient`, `send_ids=True`: a request id `c<client>-<n>`\n"
            "  on every other request, none on the others; BLS children are built without ids)"
        )
    if scenario.repo == "stateful":
        return "(`tests.foreign.seqload`, tritonclient.http: no request\n  ids)"
    return (
        "(`observability.load.TritonClient`, `send_ids=False`: no request\n"
        "  ids; BLS children are built without ids too)"
    )


def _pins_text(scenario: Scenario) -> str:
    if scenario.repo != "stateful":
        return ""
    return f"- Versions pinned: client 1 `{scenario.pins[0]}`, client 2 `{scenario.pins[1]}`.\n"


def _trace_text(scenario: Scenario) -> str:
    if scenario.trace_mode == "opentelemetry":
        return (
            "no trace file: **OpenTelemetry trace mode** (`mode=opentelemetry`, `rate=1`,\n"
            "  `level=TIMESTAMPS`, `opentelemetry,bsp_schedule_delay="
            f"{OTEL_SCHEDULE_DELAY_MS}`), OTLP/HTTP\n"
            "  posted to the capture's receiver on a loopback port (the bundle's `otlp/`)"
        )
    return "trace files " + ("with `log-frequency=20`" if scenario.trace else "off")


def _format_text(scenario: Scenario) -> str:
    return "" if scenario.log_format == "default" else f" `--log-format {scenario.log_format}`,"


def _args_text(scenario: Scenario) -> str:
    if not scenario.server_args:
        return ""
    return "; more server flags: " + ", ".join(f"`{a}`" for a in scenario.server_args)


def _copy_text(scenario: Scenario) -> str:
    return " (a copy in a temporary folder: an injection edits it)" if scenario.edits_repo else ""


def _injected(i: Injection) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(i.params.items()))
    if i.action == "swap_config":
        return f"(swap_config {i.target}: config.pbtxt := `tests/foreign/{i.source}`, then load)"
    if i.action == "reload" and params:
        return f"(reload {i.target}, config parameters {params})"
    if i.action != "request":
        return f"({i.action} {i.target})"
    ids = ", with request ids `fault-<client>-<n>`" if i.request_ids else ""
    if i.repeat_s:
        return f"{params or 'none'} (resent for {i.repeat_s:g} s{ids})"
    return params + ids


def _log_text(scenario: Scenario) -> str:
    if scenario.log_from_start:
        return "from its start"
    return "from the capture's start only: the server's start and first loads are not in it"


def _start_text(scenario: Scenario) -> str:
    parts = []
    if scenario.warmup:
        parts.append(f"{scenario.warmup} warm-up request(s) before the capture started")
    if scenario.load_delay_s:
        parts.append(f"the clients started {scenario.load_delay_s:g} s after the capture")
    if scenario.lead_s:
        parts.append(
            f"the clients started {scenario.lead_s:g} s before the capture (at most "
            f"{scenario.request_cap} requests each)"
        )
    return "; " + "; ".join(parts) if parts else ""


def main(argv: list[str] | None = None) -> int:
    return run_cli(argv, "python -m tests.foreign.record", __doc__, SCENARIOS, record_scenario)


def run_cli(
    argv: list[str] | None,
    prog: str,
    doc: str | None,
    scenarios: Mapping[str, Any],
    record: Callable[[Any, Path], Path],
) -> int:
    """``prog OUT_DIR [scenario ...]``: record each named scenario (all without names) into
    ``OUT_DIR/<scenario>`` and print what ``analyze`` said of it (this recorder's and
    ``record_pytriton``'s command line)."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("scenarios", nargs="*", help=", ".join(scenarios))
    args = parser.parse_args(argv)
    names = args.scenarios or list(scenarios)
    unknown = [n for n in names if n not in scenarios]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}: choose from {list(scenarios)}")
    for name in names:
        t = time.monotonic()
        out = record(scenarios[name], args.out_dir / name)
        print(f"== {name}: {time.monotonic() - t:.0f} s, {out}", flush=True)
        print((out / "analysis-at-recording.md").read_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
