"""Headless Chromium driven over the DevTools protocol: load a page, wait for it, capture.

Why not ``chromium --screenshot`` alone: Streamlit draws after its websocket answers, and the
one-shot screenshot fires at the load event, often on the loading skeleton. Here we wait
until the page's text holds a marker and Streamlit says it is idle, then capture the PNG and
the DOM.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from websockets.sync.client import ClientConnection, connect

from observability.lab.ports import free_port
from observability.lab.processes import stop_group

__all__ = ["CHROMIUM", "app_server", "capture"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,1000", "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]  # fmt: skip
_READY = (
    "document.body && document.body.innerText.includes({marker}) && "
    "!document.querySelector('[data-testid=\"stSkeleton\"]') && "
    "!document.querySelector('[data-testid=\"stSpinner\"]') && "
    "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
)


class _Session:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0

    def call(self, method: str, **params: object) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=60))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")


@contextlib.contextmanager
def app_server(store: Path, log: Path | None, server_log: Path) -> Iterator[str]:
    """``triton-obs triage`` on a free loopback port, as a user starts it; yields its URL once
    it answers, and stops it with the streamlit child it started (they share a session)."""
    port = free_port()
    argv = [sys.executable, "-m", "dashboards.app_cli", "--store", str(store), "--port", str(port)]
    if log is not None:
        argv += ["--log", str(log)]
    with server_log.open("w") as out:
        server = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
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
                raise AssertionError(f"the app server did not start: {server_log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        stop_group(server, 20)


def capture(url: str, marker: str, png: Path, profile: Path, timeout_s: float = 90.0) -> str:
    """Screenshot ``url`` into ``png`` once its text contains ``marker``; returns the DOM."""
    assert CHROMIUM is not None
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = _devtools_port(proc, time.monotonic() + 30)
        # Keep reading chromium's chatter so a full pipe never stalls it.
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # type: ignore[union-attr]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            pages = [t for t in json.load(resp) if t.get("type") == "page"]
        with connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 2**20) as ws:
            session = _Session(ws)
            session.call("Page.enable")
            session.call(
                "Emulation.setDeviceMetricsOverride",
                width=1400,
                height=1000,
                deviceScaleFactor=1,
                mobile=False,
            )
            session.call("Page.navigate", url=url)
            ready = _READY.format(marker=json.dumps(marker))
            deadline = time.monotonic() + timeout_s
            started = time.monotonic()
            while not session.evaluate(ready):
                if time.monotonic() > deadline:
                    text = session.evaluate("document.body ? document.body.innerText : ''")
                    raise AssertionError(f"{url} never showed {marker!r}; it showed: {text!r}")
                time.sleep(0.5)
            print(f"{url}: ready after {time.monotonic() - started:.1f} s")
            time.sleep(1.5)  # let Plotly and the data grids paint
            shot = session.call("Page.captureScreenshot", format="png")
            png.write_bytes(base64.b64decode(shot["data"]))
            return str(session.evaluate("document.documentElement.outerHTML"))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _devtools_port(proc: subprocess.Popen[str], deadline: float) -> int:
    """Chromium prints ``DevTools listening on ws://127.0.0.1:PORT/...`` on stderr."""
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if found:
            return int(found.group(1))
    raise RuntimeError("chromium did not start its DevTools endpoint")
