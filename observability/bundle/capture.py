"""``triton-obs capture``: record a bundle from a live Triton for a bounded window.

The capture runs on the Triton host (it reads the log and trace files), so it records the
host's ``epoch - monotonic`` clock offset: the only way to join trace timestamps (monotonic)
with log lines (wall clock) later.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from observability.bundle.layout import FORMAT, SCRAPES, BundleMeta, snapshot_name

__all__ = ["CaptureConfig", "CaptureResult", "capture"]


@dataclass
class CaptureConfig:
    out: Path
    url: str | None = None
    """Triton's HTTP endpoint, for /v2 and /v2/models/stats."""
    metrics_url: str | None = None
    log: Path | None = None
    trace: Path | None = None
    """The trace file as given to ``--trace-config triton,file=F``; ``F.N`` files come too."""
    duration_s: float = 30.0
    interval_s: float = 1.0
    timeout_s: float = 2.0
    otlp_port: int | None = None
    """Receive OTLP/HTTP on 127.0.0.1:PORT during the window; requests land in ``otlp/``."""
    log_utc_offset_s: int = 0
    """The zone of the log's wall-clock stamps. Triton 2.51 writes UTC whatever ``TZ`` says
    (seen with TZ=America/New_York); give the offset for a build that logs local time."""
    log_from_start: bool = False
    """Copy the whole log, not only the window: requests that began before it are kept."""


@dataclass
class CaptureResult:
    out: Path
    metrics: int = 0
    stats: int = 0
    traces: int = 0
    log_bytes: int = 0
    otlp_url: str = ""
    failures: list[str] = field(default_factory=list)
    failed_scrapes: list[tuple[int, str, str]] = field(default_factory=list)
    """``(unix_ms, target, error)`` of each scrape that failed: the bundle's ``scrapes.jsonl``."""


def _get(url: str, timeout_s: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return bytes(resp.read())


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def capture(
    cfg: CaptureConfig, on_tick: Callable[[CaptureResult], None] | None = None
) -> CaptureResult:
    out = Path(cfg.out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose a new folder")
    (out / "metrics").mkdir(parents=True, exist_ok=True)
    (out / "stats").mkdir(exist_ok=True)
    result = CaptureResult(out)
    started_at = _now_iso()
    clock = time.time_ns() - time.monotonic_ns()
    log_start = 0
    if cfg.log is not None and not cfg.log_from_start:
        with contextlib.suppress(OSError):
            log_start = cfg.log.stat().st_size
    triton_version = ""
    if cfg.url:
        try:
            triton_version = str(json.loads(_get(f"{cfg.url}/v2", cfg.timeout_s))["version"])
        except (urllib.error.URLError, OSError, ValueError, KeyError) as err:
            result.failures.append(f"server metadata: {err}")
    receiver = None
    if cfg.otlp_port is not None:
        from collectors.otlp import OtlpReceiver

        (out / "otlp").mkdir(exist_ok=True)
        receiver = OtlpReceiver(port=cfg.otlp_port, keep_dir=out / "otlp").start()
        result.otlp_url = receiver.url
    deadline = time.monotonic() + cfg.duration_s
    while True:
        tick = time.monotonic()
        unix_ms = time.time_ns() // 1_000_000
        if cfg.metrics_url:
            try:
                body = _get(cfg.metrics_url, cfg.timeout_s)
                (out / "metrics" / snapshot_name(unix_ms, "prom")).write_bytes(body)
                result.metrics += 1
            except (urllib.error.URLError, OSError) as err:
                result.failures.append(f"{unix_ms} metrics: {err}")
                result.failed_scrapes.append((unix_ms, "metrics", str(err)))
        if cfg.url:
            try:
                body = _get(f"{cfg.url}/v2/models/stats", cfg.timeout_s)
                (out / "stats" / snapshot_name(unix_ms, "json")).write_bytes(body)
                result.stats += 1
            except (urllib.error.URLError, OSError) as err:
                result.failures.append(f"{unix_ms} stats: {err}")
                result.failed_scrapes.append((unix_ms, "stats", str(err)))
        if on_tick is not None:
            on_tick(result)
        if tick >= deadline:
            break
        time.sleep(max(0.0, min(cfg.interval_s - (time.monotonic() - tick), deadline - tick)))
    if receiver is not None:
        receiver.stop()
    if cfg.log is not None:
        try:
            with cfg.log.open("rb") as src, (out / "triton.log").open("wb") as dst:
                size = cfg.log.stat().st_size
                src.seek(log_start if log_start <= size else 0)  # truncated: take it all
                result.log_bytes = dst.write(src.read())
        except OSError as err:
            result.failures.append(f"log: {err}")
    if cfg.trace is not None:
        parent = cfg.trace.parent
        for path in sorted(parent.glob(cfg.trace.name + "*")):
            suffix = path.name[len(cfg.trace.name) :]
            if suffix == "" or (suffix.startswith(".") and suffix[1:].isdigit()):
                shutil.copyfile(path, out / ("trace.json" + suffix))
                result.traces += 1
    if result.failed_scrapes:
        (out / SCRAPES).write_text(
            "".join(
                json.dumps({"unix_ms": ms, "target": target, "error": error}) + "\n"
                for ms, target, error in result.failed_scrapes
            )
        )
    offset_s = cfg.log_utc_offset_s
    meta = BundleMeta(
        format=FORMAT,
        bundle_id=uuid.uuid4().hex,
        triton_version=triton_version,
        started_at=started_at,
        ended_at=_now_iso(),
        sources={
            "url": cfg.url,
            "metrics_url": cfg.metrics_url,
            "log": str(cfg.log) if cfg.log else None,
            "log_start_offset": log_start,
            "trace": str(cfg.trace) if cfg.trace else None,
            "interval_s": cfg.interval_s,
            "otlp": result.otlp_url or None,
        },
        clock={
            "epoch_ns_minus_monotonic_ns": clock,
            "log_utc_offset_s": offset_s,
            "log_timezone": "UTC" if offset_s == 0 else f"UTC{offset_s / 3600:+g}h",
        },
    )
    (out / "meta.json").write_text(meta.to_json())
    return result
