"""Bundles: capture a live Triton's signals to a folder (or a ``.tar.gz``), read them back
safely whoever made them, ingest them."""

from observability.bundle.archive import extract_archive, write_archive
from observability.bundle.capture import CaptureConfig, CaptureResult, capture
from observability.bundle.layout import (
    FORMAT,
    LIMITS,
    Bundle,
    BundleError,
    BundleMeta,
    Limits,
    open_bundle,
)

__all__ = [
    "FORMAT",
    "LIMITS",
    "Bundle",
    "BundleError",
    "BundleMeta",
    "CaptureConfig",
    "CaptureResult",
    "Limits",
    "capture",
    "extract_archive",
    "open_bundle",
    "write_archive",
]
