"""Run the app's script under ``streamlit.testing`` against a given store."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

MAIN = Path(__file__).resolve().parents[2] / "dashboards" / "app" / "main.py"


def skip_without_the_app_extra() -> None:
    """Skip the calling module (or conftest's folder) where the app extra is not installed,
    found without importing it: streamlit and plotly take 0.7 s of CPU to import, which every
    pytest-xdist worker paid at collection whether or not it ran a page."""
    for name in ("streamlit", "plotly"):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"the triage app needs the app extra ({name})", allow_module_level=True)


@functools.cache
def _scan_once() -> None:
    """Each new ``AppTest`` scans the metadata of every installed distribution for
    streamlit components (about 0.4 s of CPU on this venv, every page of every test). The
    installed packages do not change during a test session: scan once per process. Where a
    streamlit version lacks this scanner, nothing is changed."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:
        return
    scan = getattr(manifest_scanner, "scan_component_manifests", None)
    if scan is not None and not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(scan)  # type: ignore[attr-defined]


def run_page(
    monkeypatch, store: Path | None, page: str, log: Path | None = None, **params: str
) -> AppTest:
    """One page, rendered once, with the source set as ``triton-obs triage`` sets it."""
    from streamlit.testing.v1 import AppTest

    _scan_once()
    monkeypatch.delenv("TRITON_OBS_TRIAGE_BUNDLE", raising=False)
    if store is None:
        monkeypatch.delenv("TRITON_OBS_TRIAGE_STORE", raising=False)
    else:
        monkeypatch.setenv("TRITON_OBS_TRIAGE_STORE", str(store))
    if log is None:
        monkeypatch.delenv("TRITON_OBS_TRIAGE_LOG", raising=False)
    else:
        monkeypatch.setenv("TRITON_OBS_TRIAGE_LOG", str(log))
    at = AppTest.from_file(str(MAIN), default_timeout=120)
    at.query_params["page"] = page
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    """Everything the page showed as text (code blocks, text, captions, alerts, tables)."""
    parts = [c.value for c in at.code] + [t.value for t in at.text]
    parts += [c.value for c in at.caption] + [m.value for m in at.markdown]
    for kind in ("error", "warning", "info", "success"):
        parts += [e.value for e in getattr(at, kind)]
    for frame in at.dataframe:
        parts.append(frame.value.to_csv())
    return "\n".join(str(p) for p in parts)
