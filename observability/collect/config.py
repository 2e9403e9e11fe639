"""What ``collect`` and ``watch`` are told: which sources to read, how often, where to store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["CollectConfig"]


@dataclass
class CollectConfig:
    store: Path
    url: str | None = None
    metrics_url: str | None = None
    log: Path | None = None
    """A log file, or a glob (``*``, ``?``, ``[``): every file it matches, as they appear
    (``collect/logglob.py``)."""
    trace: Path | None = None
    otlp_port: int | None = None
    """Start an OTLP/HTTP receiver on 127.0.0.1:PORT (0 picks a free port)."""
    metrics_port: int | None = None
    """Serve our own /metrics on 127.0.0.1:PORT (0 picks a free port)."""
    host: str = "127.0.0.1"
    """Where both servers listen; anything but loopback is logged as a warning."""
    interval_s: float = 1.0
    log_interval_s: float = 0.25
    checkpoint: Path | None = None
    """Where the log tailer keeps its position; default: beside the store."""
    retention_max_age_s: float | None = 7 * 24 * 3600
    retention_max_bytes: int | None = 4 * 1024**3
    max_pending: int = 200
    log_utc_offset_s: int = 0
    log_format: str = "auto"
    """The log's frame (``collectors/logs/framing.py``): ``auto`` decides from its lines."""
