"""Stand-ins for ``pb_utils`` objects with the methods the library calls (names, shapes, exec).

Why fakes beside the real-Triton tests: they make the unit tests fast and deterministic (a call
that blocks until the test releases it), while tests/bls/test_lab.py checks the real thing.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["FakeMetricFamily", "FakePbUtils", "FakeRequest", "FakeResponse", "FakeTensor"]


class FakeTensor:
    def __init__(self, name: str, shape: tuple[int, ...], dtype: int = 11) -> None:
        self._name, self._shape, self._dtype = name, shape, dtype

    def name(self) -> str:
        return self._name

    def shape(self) -> list[int]:
        return list(self._shape)

    def triton_dtype(self) -> int:
        return self._dtype


class _Error:
    def __init__(self, message: str) -> None:
        self._message = message

    def message(self) -> str:
        return self._message


class FakeResponse:
    def __init__(self, outputs: list[FakeTensor] | None = None, error: str | None = None):
        self._outputs = outputs or []
        self._error = error

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> _Error | None:
        return _Error(self._error) if self._error else None

    def output_tensors(self) -> list[FakeTensor]:
        return self._outputs


class _Trace:
    def __init__(self, context: str | None) -> None:
        self._context = context

    def get_context(self) -> str | None:
        return self._context


class FakeRequest:
    """A parent request (request_id, trace) or a BLS child (model_name, inputs, exec)."""

    def __init__(
        self,
        model: str = "child",
        request_id: str = "",
        response: Any = None,
        block: threading.Event | None = None,
        raises: BaseException | None = None,
        traceparent: str | None = None,
        stream: list | None = None,
    ) -> None:
        self._model = model
        self._id = request_id
        self._response = (
            response if response is not None else FakeResponse([FakeTensor("OUT", (1, 16))])
        )
        self._block = block
        self._raises = raises
        self._trace = _Trace(traceparent)
        self._stream = stream

    def model_name(self) -> str:
        return self._model

    def request_id(self) -> str:
        return self._id

    def trace(self) -> _Trace:
        return self._trace

    def inputs(self) -> list[FakeTensor]:
        return [FakeTensor("FEATURES", (1, 64))]

    def exec(self, decoupled: bool = False) -> Any:
        if self._block is not None:
            self._block.wait(10)
        if self._raises is not None:
            raise self._raises
        if decoupled:
            return iter(self._stream or [])
        return self._response

    def async_exec(self, decoupled: bool = False) -> Any:
        import asyncio

        return asyncio.get_running_loop().run_in_executor(None, self.exec, decoupled)


class FakeMetric:
    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels
        self.value = 0.0

    def increment(self, v: float) -> None:
        self.value += v

    def set(self, v: float) -> None:
        self.value = v


class FakeMetricFamily:
    COUNTER, GAUGE, HISTOGRAM = "COUNTER", "GAUGE", "HISTOGRAM"
    families: dict[str, FakeMetricFamily] = {}

    def __init__(self, name: str, description: str, kind: str) -> None:
        self.name, self.kind = name, kind
        self.metrics: list[FakeMetric] = []
        FakeMetricFamily.families[name] = self

    def Metric(self, labels: dict[str, str]) -> FakeMetric:
        metric = FakeMetric(labels)
        self.metrics.append(metric)
        return metric


class FakePbUtils:
    MetricFamily = FakeMetricFamily

    @staticmethod
    def value(name: str, **labels: str) -> float:
        family = FakeMetricFamily.families.get(name)
        if family is None:
            return 0.0
        return sum(
            m.value for m in family.metrics if all(m.labels.get(k) == v for k, v in labels.items())
        )
