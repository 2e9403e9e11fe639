"""Bounded load against the demo pipeline, with per-request faults and client-side ids."""

from observability.load.client import Outcome, Status, TritonClient
from observability.load.faults import FAULTS, FaultSpecError, parse_faults, parse_params
from observability.load.report import LoadReport
from observability.load.runner import LoadConfig, run_load, set_cold_start

__all__ = [
    "FAULTS",
    "FaultSpecError",
    "LoadConfig",
    "LoadReport",
    "Outcome",
    "Status",
    "TritonClient",
    "parse_faults",
    "parse_params",
    "run_load",
    "set_cold_start",
]
