"""Every detector, one per finding kind, found by module name so each stays self-contained."""

from __future__ import annotations

import importlib
import inspect
import logging

from observability.detectors.base import Detector
from observability.findings import KINDS

__all__ = ["default_detectors"]

log = logging.getLogger(__name__)


def default_detectors(kinds: tuple[str, ...] = KINDS, **settings: object) -> list[Detector]:
    """One detector per kind with its default settings; ``settings`` override fields by name
    where a detector has them (e.g. ``deadline_s``)."""
    out: list[Detector] = []
    for kind in kinds:
        try:
            module = importlib.import_module(f"observability.detectors.{kind}")
        except ModuleNotFoundError:
            log.debug("no detector module for %s", kind)
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and getattr(cls, "kind", None) == kind:
                params = inspect.signature(cls).parameters
                out.append(cls(**{k: v for k, v in settings.items() if k in params}))
                break
    return out
