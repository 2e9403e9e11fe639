"""Bundles: capture a live Triton's signals to a folder, read them back, ingest them."""

from observability.bundle.capture import CaptureConfig, CaptureResult, capture
from observability.bundle.layout import FORMAT, Bundle, BundleError, BundleMeta, open_bundle

__all__ = [
    "FORMAT",
    "Bundle",
    "BundleError",
    "BundleMeta",
    "CaptureConfig",
    "CaptureResult",
    "capture",
    "open_bundle",
]
