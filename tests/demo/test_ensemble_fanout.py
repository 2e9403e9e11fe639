"""The ensemble fan-out repositories on a real Triton 2.51 (server#7366, #4560)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as http

from observability.lab import LabError, repository

pytestmark = pytest.mark.lab

NOT_WRITTEN = (
    "output 'RIGHT' for ensemble 'fanout_ensemble' is not written: at least one of its "
    "depending tensors, 'OUTPUT', is not connected"
)


def _infer(url: str) -> dict[str, np.ndarray]:
    client = http.InferenceServerClient(url.removeprefix("http://"))
    meta = client.get_model_metadata("fanout_ensemble")
    item = meta["inputs"][0]
    dtype = {"FP32": np.float32, "INT64": np.int64}[item["datatype"]]
    data = np.arange(4, dtype=dtype)
    inp = http.InferInput(item["name"], [4], item["datatype"])
    inp.set_data_from_numpy(data)
    result = client.infer("fanout_ensemble", [inp])
    return {o["name"]: result.as_numpy(o["name"]) for o in meta["outputs"]}


@pytest.mark.parametrize("name", ["ensemble_fanout", "ensemble_fanout_fixed"])
def test_fanout_that_loads_answers_on_both_branches(lab_factory, name: str) -> None:
    lab = lab_factory(repository(name), name=name, trace=False, exit_timeout_s=10)
    try:
        outputs = _infer(lab.http_url)
        assert len(outputs) == 2
        assert all(v.size == 4 for v in outputs.values())
    finally:
        lab.stop()


def test_miswired_fanout_is_refused_with_not_written(lab_factory) -> None:
    lab = lab_factory(
        repository("ensemble_fanout_broken"),
        name="broken",
        trace=False,
        exit_on_error=False,
        strict_readiness=False,
        exit_timeout_s=10,
    )
    try:
        assert any(NOT_WRITTEN in line for line in lab.log_text().splitlines())
        client = http.InferenceServerClient(lab.http_url.removeprefix("http://"))
        assert not client.is_model_ready("fanout_ensemble")
    finally:
        lab.stop()


def test_miswired_fanout_stops_a_strict_server(lab_factory) -> None:
    """The server never becomes ready, and the error quotes Triton's reason. Not its last
    words: after the failed load, 2.51 sometimes dies of SIGSEGV while it unloads the other
    models (exit -11, one run in three here) before writing "failed to load all models"."""
    with pytest.raises(
        LabError, match=r"tritonserver exited with code -?\d+ before it was ready"
    ) as err:
        lab_factory(repository("ensemble_fanout_broken"), name="broken-strict", trace=False)
    assert NOT_WRITTEN in str(err.value)
