"""Fixtures for the in-model BLS library: a live OTLP receiver and a set-up instrumenter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from observability import bls
from tests.bls.fakes import FakeMetricFamily, FakePbUtils
from tests.bls.otlp_receiver import OtlpReceiver


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture
def instrumented(receiver: OtlpReceiver) -> Iterator[bls.Instrumenter]:
    FakeMetricFamily.families.clear()
    inst = bls.setup(
        {"model_name": "router", "model_instance_name": "router_0_0"},
        pb_utils=FakePbUtils,
        endpoint=receiver.endpoint,
        deadline_s=0.4,
        flush_interval_s=0.1,
    )
    assert inst is not None
    yield inst
    bls.shutdown()
