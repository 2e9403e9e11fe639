"""Errors the lab raises: each one says what to do, so the CLI can print it without a traceback."""

from __future__ import annotations

__all__ = ["LabError", "PortInUseError"]


class LabError(RuntimeError):
    """The lab Triton could not be found, started or stopped; the message says what to do."""


class PortInUseError(LabError):
    """Triton lost the race for a port we picked; the caller retries with fresh ports."""
