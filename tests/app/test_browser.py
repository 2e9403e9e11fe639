"""The real app server in a real (headless) browser: Now and a request timeline render.

Starts ``python -m dashboards.app_cli`` (what ``triton-obs triage`` runs) on a free
loopback port, captures both pages with headless Chromium and keeps the PNGs and DOMs in
``test-artifacts/app/`` for people to look at.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.browser import CHROMIUM, app_server, capture
from tests.app.conftest import AppStore

pytestmark = [
    pytest.mark.lab,  # a live browser: with the other live tests, out of the quick run
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
    ),
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "app"


@pytest.fixture(scope="module")
def app_url(faulty_store: AppStore, tmp_path_factory) -> Iterator[str]:
    server_log = tmp_path_factory.mktemp("app-server") / "server.log"
    with app_server(faulty_store.store, faulty_store.log, server_log) as url:
        yield url


def _check_png(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as img:
        assert img.size == (1400, 1000)
        colours = img.convert("RGB").getcolors(maxcolors=1_000_000) or []
    assert len(colours) > 50, f"{path} is blank or nearly so ({len(colours)} colours)"


@pytest.mark.parametrize(
    ("name", "query", "marker"),
    [
        ("now", "?page=now", "demo-hang-0"),
        ("timeline", "?page=timeline&request=demo-hang-0", "demo-hang-0.detector"),
    ],
)
def test_page_renders_in_chromium(app_url, tmp_path, name, query, marker) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    png = ARTIFACTS / f"{name}.png"
    dom = capture(app_url + "/" + query, marker, png, tmp_path / "profile")
    (ARTIFACTS / f"{name}.html").write_text(dom)
    assert marker in dom
    assert "Traceback" not in dom and "stException" not in dom
    _check_png(png)
