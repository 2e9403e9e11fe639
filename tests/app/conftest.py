"""Stores for the triage app's tests: the real faulty recording with its findings saved, a
store holding hostile log text, an empty store. Each is a copy: the app only ever reads."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from observability import events as ev
from observability.findings import Evidence, Finding, Severity
from observability.store import Store
from tests.app.helpers import skip_without_the_app_extra
from tests.detectors.conftest import findings_at_end
from tests.detectors.recording import RecordedRun

skip_without_the_app_extra()

HOSTILE = (
    "<script>alert('x')</script> <img src=x onerror=alert(1)> **bold** [link](http://evil) "
    "\x1b[31mRED\x1b[0m " + "A" * 5000
)


@dataclass(frozen=True)
class AppStore:
    store: Path
    log: Path | None
    since_ns: int
    until_ns: int


def _analysed(run: RecordedRun, folder: Path) -> AppStore:
    """A copy of a recording's store with the findings ``analyze`` gives at its end saved
    (judged once per process on the recording's store: tests/detectors/conftest.py)."""
    path = folder / "store.db"
    shutil.copy(run.store, path)
    with Store(path) as store:
        store.save_findings(list(findings_at_end(run)))
    return AppStore(path, run.log, run.since_ns, run.until_ns)


@pytest.fixture(scope="session")
def faulty_store(faulty_run: RecordedRun, tmp_path_factory: pytest.TempPathFactory) -> AppStore:
    return _analysed(faulty_run, tmp_path_factory.mktemp("app-faulty"))


@pytest.fixture(scope="session")
def faulty_none_store(
    faulty_none_run: RecordedRun, tmp_path_factory: pytest.TempPathFactory
) -> AppStore:
    """The same faults with no request id anywhere."""
    return _analysed(faulty_none_run, tmp_path_factory.mktemp("app-faulty-none"))


@pytest.fixture(scope="session")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> AppStore:
    """A log line full of HTML, script, markdown and ANSI escapes, cited by a finding."""
    root = tmp_path_factory.mktemp("app-hostile")
    log = root / "triton.log"
    first = "I1122 04:41:30.000000 1 server.cc:1 started\n"
    log.write_text(first + f"E1122 04:41:31.000000 1 model.cc:2 {HOSTILE}\n")
    at = 1_795_322_491_000_000_000
    header = ev.LogRecord(at, ev.LogLevel.ERROR, "model.cc", 2, len(first))
    path = root / "store.db"
    with Store(path) as store:
        store.write([ev.ErrorLine(header, HOSTILE)], source="hostile")
        store.save_findings([
            Finding(
                kind="callback_error", severity=Severity.CRITICAL, model="<b>evil</b>",
                summary=f"summary {HOSTILE[:200]}", advice="advice <script>x</script>",
                first_seen_ns=at, last_seen_ns=at, request_id="<script>rid</script>",
                evidence=(Evidence("log", at, f"triton.log@{len(first)}", HOSTILE[:300]),),
            )
        ])  # fmt: skip
    return AppStore(path, log, at, at)


@pytest.fixture
def empty_store(tmp_path: Path) -> Path:
    path = tmp_path / "empty.db"
    Store(path).close()
    return path
