"""Every detector, listed explicitly: one class per kind of ``observability.catalogue``.

Explicit, not discovered by module name: a detector that fails to import, or a catalogue row
without a detector, is an error at import instead of a silently skipped kind.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType

from observability.catalogue import CATALOGUE, KINDS
from observability.detectors.base import Detector
from observability.detectors.bls_call_hung import BlsCallHung
from observability.detectors.bls_deadlock import BlsDeadlockDetector
from observability.detectors.callback_error import CallbackErrorDetector
from observability.detectors.cold_start import ColdStart
from observability.detectors.ensemble_fanout import EnsembleFanoutDetector
from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.instance_saturation import InstanceSaturation
from observability.detectors.model_failing import ModelFailing
from observability.detectors.model_load_failed import ModelLoadFailed
from observability.detectors.model_load_stuck import ModelLoadStuck
from observability.detectors.model_stalled import ModelStalled
from observability.detectors.output_contract import OutputContract
from observability.detectors.requests_rejected import RequestsRejected
from observability.detectors.shape_growth import ShapeGrowthDetector
from observability.detectors.stream_stalled import StreamStalled
from observability.detectors.stub_unhealthy import StubUnhealthyDetector
from observability.detectors.target_down import TargetDown
from observability.detectors.thread_pool_exhaustion import ThreadPoolExhaustion

__all__ = ["DETECTORS", "default_detectors"]

DETECTORS: Mapping[str, type] = MappingProxyType(
    {
        cls.kind: cls
        for cls in (
            HungRequestDetector,
            BlsCallHung,
            InstanceSaturation,
            ThreadPoolExhaustion,
            BlsDeadlockDetector,
            CallbackErrorDetector,
            EnsembleFanoutDetector,
            ShapeGrowthDetector,
            ColdStart,
            StubUnhealthyDetector,
            ModelFailing,
            OutputContract,
            RequestsRejected,
            ModelLoadFailed,
            ModelLoadStuck,
            TargetDown,
            ModelStalled,
            StreamStalled,
        )
    }
)


def _check() -> None:
    for p in CATALOGUE:
        cls = DETECTORS.get(p.kind)
        if cls is None or cls.__name__ != p.detector:
            raise ImportError(f"catalogue kind {p.kind!r} names detector {p.detector}, got {cls}")
    extra = set(DETECTORS) - set(KINDS)
    if extra:
        raise ImportError(f"detectors for kinds not in the catalogue: {sorted(extra)}")


_check()


def default_detectors(kinds: tuple[str, ...] = KINDS, **settings: object) -> list[Detector]:
    """One detector per kind with its default settings; ``settings`` override fields by name
    where a detector has them (e.g. ``deadline_s``)."""
    out: list[Detector] = []
    for kind in kinds:
        cls = DETECTORS[kind]
        params = inspect.signature(cls).parameters
        out.append(cls(**{k: v for k, v in settings.items() if k in params}))
    return out
