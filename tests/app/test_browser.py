"""The real app server in a real (headless) browser: Now and a request timeline render.

Starts ``python -m dashboards.app_cli`` (what ``triton-obs triage`` runs) on a free
loopback port, captures both pages with headless Chromium and keeps the PNGs and DOMs in
``test-artifacts/app/`` for people to look at.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.browser import CHROMIUM, capture
from tests.app.conftest import AppStore

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "app"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def app_url(faulty_store: AppStore, tmp_path_factory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("app-server") / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "dashboards.app_cli", "--store", str(faulty_store.store),
             "--log", str(faulty_store.log), "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the app server did not start: {log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        # The server and the streamlit child it started share the session we created.
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


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
