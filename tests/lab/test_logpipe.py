"""The compose stack runs Triton under ``triton-obs logpipe`` (compose.yaml): a python stub's
traceback, which Triton's ``--log-file`` never receives, reaches the log that ``watch``
tails, and ``analyze`` finds the swallowed callback in it. Run here on the lab Triton with the
demo pipeline, the way the stack's tritonserver service runs it."""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable

import pytest

from observability.analyze import analyze_bundle
from observability.lab import TritonLab, demo_repository
from observability.load import Status, TritonClient
from observability.load.workload import inputs_for

pytestmark = pytest.mark.lab

LOGPIPE = (sys.executable, "-m", "observability.cli", "logpipe", "--file", "{log}", "--")


def test_a_callback_traceback_reaches_the_piped_log(lab_factory: Callable[..., TritonLab]) -> None:
    lab = lab_factory(demo_repository(), name="logpipe", launcher=LOGPIPE, trace=False)
    try:
        client = TritonClient(lab.grpc_url, 20.0)
        try:
            inputs = inputs_for("router", random.Random(1))
            broken = client.infer(
                "router", inputs, "lp-callback",
                fault="callback", parameters={"fault": "callback", "callback_wait_s": "2"},
            )  # fmt: skip
            healthy = client.infer("router", inputs, "lp-twin")
        finally:
            client.close()
        assert broken.status is Status.ERROR and healthy.status is Status.OK
        deadline = time.monotonic() + 20
        while "Exception in callback" not in lab.log_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        text = lab.log_text()
    finally:
        lab.stop()
    assert "Exception in callback" in text  # the stub's stderr, through the pipe
    assert "[request id: lp-callback]" in text  # and Triton's own verbose lines
    result = analyze_bundle(lab.log_path)
    found = {(f.kind, f.model) for f in result.findings}
    # Failed once in a full CI run with nothing found at all (2026-11-27, not seen again in
    # seven runs here): the lines around the traceback and the analysis' notes, to tell why.
    at = text.index("Exception in callback")
    around = text[max(0, at - 1500) : at + 1500]
    assert ("callback_error", "router") in found, (found, result.notes, around)


def test_without_the_pipe_the_log_file_misses_the_traceback(
    lab_factory: Callable[..., TritonLab], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Why the stack needs the pipe: Triton's own --log-file gets Triton's lines only."""
    log_file = tmp_path_factory.mktemp("log-file") / "triton.log"
    lab = lab_factory(
        demo_repository(), name="log-file", trace=False, extra_args=(f"--log-file={log_file}",)
    )
    try:
        client = TritonClient(lab.grpc_url, 20.0)
        try:
            client.infer(
                "router", inputs_for("router", random.Random(1)), "lf-callback",
                fault="callback", parameters={"fault": "callback", "callback_wait_s": "2"},
            )  # fmt: skip
        finally:
            client.close()
        deadline = time.monotonic() + 20
        while "Exception in callback" not in lab.log_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        stdout = lab.log_text()  # the lab keeps Triton's stdout and stderr
    finally:
        lab.stop()
    assert "Exception in callback" in stdout
    written = log_file.read_text()
    assert "[request id: lf-callback]" in written and "Exception in callback" not in written
