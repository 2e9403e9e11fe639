"""Shared test helpers. The real-Triton fixtures come from observability.lab.pytest_plugin."""

from __future__ import annotations

import gc
import logging
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import hypothesis_profiles  # noqa: F401  (loads the dev or ci profile first)
from tests.detectors.recording import RecordedRun
from tests.fixtures.recordings import session_recording
from tests.foreign import parsed as corpus
from tests.foreign.sample import quick_sample, sweeps_everything

ECHO_CONFIG = """
name: "echo"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

ECHO_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            data = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
        return out
"""


def ctrl_c_as_from_a_terminal() -> None:
    """``preexec_fn`` for a child a test sends SIGINT: restore SIGINT's default action. A
    shell's background job ignores SIGINT and every child inherits that (Python then keeps it
    ignored: no KeyboardInterrupt), so a suite started with ``nohup ... &`` failed the Ctrl-C
    tests while the command under test was fine."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_model(repo: Path, name: str, config: str, model_py: str) -> Path:
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    (repo / name / "config.pbtxt").write_text(config.replace('name: "echo"', f'name: "{name}"'))
    (repo / name / "1" / "model.py").write_text(model_py)
    return repo


class _DetectorFailures(logging.Handler):
    """``run_detectors`` logs a detector that raises and goes on, so that one bug never hides
    the other findings. In a test that would read as a detector that found nothing: every
    such record is kept, and the test fails (``detector_may_raise`` marks the exceptions)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage() + f" ({record.exc_info and record.exc_info[1]!r})")


_FAILURES = _DetectorFailures()
logging.getLogger("observability.detectors.base").addHandler(_FAILURES)


@pytest.fixture(autouse=True)
def _no_detector_raised(request: pytest.FixtureRequest) -> Iterator[None]:
    start = len(_FAILURES.messages)
    yield
    raised = _FAILURES.messages[start:]
    if raised and request.node.get_closest_marker("detector_may_raise") is None:
        pytest.fail(f"a detector raised while the test ran: {raised[:3]}")


SHARED_LABS = {"triton_lab": "demo-lab", "security_run": "security-lab"}
"""Session fixtures that start a real Triton shared by several files: their tests share a
worker, or each pytest-xdist worker would start its own copy and the two would compete for
this machine's two cores."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers, three for the quick suite (``-m "not lab and not soak"``). With a lab, two
    real Tritons are what two cores take. Without, a third of the suite's time is waits
    (servers starting, sockets, subprocesses, a watch running its ``--duration``) that a third
    worker fills: 53-57 s against 64 s here (2026-11-26, 315 recordings)."""
    return 3 if _quick(config) else 2


def _quick(config: pytest.Config) -> bool:
    """The quick suite: a run that leaves out the lab (``-m "not lab ..."``)."""
    return "not lab" in str(config.getoption("markexpr", "") or "")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests of a shared lab (``--dist loadgroup``). ``tryfirst``: xdist reads the
    ``xdist_group`` marks in its own hook of this name, which would otherwise run first. The
    grouping needs pytest below 9.2 (see pyproject.toml's pin). The quick suite sweeps a
    sample of the corpus (``tests/foreign/sample.py``)."""
    if _quick(config) and not sweeps_everything():
        _sweep_the_sample(config, items)
    corpus_at: list[int] = []
    for i, item in enumerate(items):
        names = set(getattr(item, "fixturenames", ()))
        group = next((g for f, g in SHARED_LABS.items() if f in names), None)
        if group is None and _reads_the_corpus(item):
            # One group per recording: its parsed events stay in that worker's memory for
            # all of its tests, and the recordings spread over the workers (parsing and
            # judging them all on one worker was most of a cold run).
            group = f"foreign-corpus-{_recording_of(item) or 'all'}"
            corpus_at.append(i)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    # The corpus's tests in recording order, in the places they had: a recording's parsed
    # events are kept for the last few only (tests/foreign/parsed.py), and each module read
    # them all in its own order, loading a third of them twice.
    ordered = sorted((items[i] for i in corpus_at), key=_recording_of)
    for i, item in zip(corpus_at, ordered, strict=True):
        items[i] = item


SWEEP = 40
"""A test over this many recordings sweeps the corpus (or all its healthy recordings); the
tests that name their recordings name a handful."""


def _sweep_the_sample(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the items of a corpus sweep (a test parametrized over :data:`SWEEP` recordings
    or more) whose recording is not in the quick sample; pytest reports them as deselected."""
    per_test: Counter[str] = Counter(
        item.nodeid.partition("[")[0] for item in items if _recording_of(item)
    )
    sweeps = {test for test, n in per_test.items() if n >= SWEEP}
    sample = quick_sample(corpus.FIXTURES)
    dropped = [
        item
        for item in items
        if item.nodeid.partition("[")[0] in sweeps and _recording_of(item) not in sample
    ]
    if dropped:
        gone = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in gone]
        config.hook.pytest_deselected(items=dropped)


def _recording_of(item: pytest.Item) -> str:
    """The foreign recording a parametrized test reads (its first such parameter), or ``""``
    (those run first, in their order: the sort is stable)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return next((v for v in params.values() if isinstance(v, str) and v in _RECORDINGS), "")


_RECORDINGS = frozenset(p.name for p in corpus.FIXTURES.iterdir() if p.is_dir())


def _reads_the_corpus(item: pytest.Item) -> bool:
    """Tests of a module that imported the corpus's parsed analyses: a recording's tests
    share one worker, where its parsed events are kept in memory (its analyses are kept on
    disk, ``tests/judged.py``, for every worker)."""
    module = getattr(item, "module", None)
    shared = (corpus.analysis, corpus.parsed, corpus.window, corpus.log_window, corpus.log_findings)
    return module is not None and any(v in shared for v in vars(module).values() if callable(v))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Cyclic garbage collection in the test process only: what the imports and the
    collection made is frozen (never scanned again), and the young generation is collected
    after 200,000 allocations instead of 700. The session's shared recordings and analyses
    make a large heap that each full collection walked again: a quarter of the suite's CPU
    (28 of 114 s on tests/detectors, app and bundle, 4 s after). With 50,000 the quick
    suite's workers still spent 7.7 CPU-seconds collecting, 4.8 with 200,000 (measured by
    ``gc.callbacks``, 2026-11-27). What a test proves does not depend on when garbage is
    collected; a test that needs it calls ``gc.collect()``."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(200_000, 20, 20)


@pytest.fixture(scope="session")
def echo_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-model python repository: the smallest thing a real Triton can serve."""
    return write_model(tmp_path_factory.mktemp("echo-repo"), "echo", ECHO_CONFIG, ECHO_MODEL)


@pytest.fixture(scope="session")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """The demo's fault schedule on a real Triton: the checked-in recording
    (tests/fixtures/recordings/faulty), its store ingested once per session. Detectors and
    the triage app read it."""
    return session_recording("faulty", tmp_path_factory)


@pytest.fixture(scope="session")
def healthy_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """The same load with no fault: what every detector must stay silent on."""
    return session_recording("healthy", tmp_path_factory)


@pytest.fixture(scope="session")
def faulty_none_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """The faulty run again with no request id anywhere (``--ids none``): clients send none
    and BLS children are built without, as tritonclient, perf_analyzer and
    ``pb_utils.InferenceRequest`` do by default."""
    return session_recording("faulty-ids-none", tmp_path_factory)
