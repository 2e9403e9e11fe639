"""Detectors: one module per pathology, each pure over a :class:`Window` of the signals."""

from observability.detectors.base import Detector, DetectorFailure, run_detectors
from observability.detectors.window import Window

__all__ = ["Detector", "DetectorFailure", "Window", "run_detectors"]
