"""``triton-obs triage``: run the Streamlit triage app on a store or a bundle.

Mounted by ``observability/cli.py`` with ``app.command("triage")(triage)``. Streamlit owns
the command line of the script it runs, so the source travels in the environment
(``dashboards.app.state``). The server binds 127.0.0.1 unless told otherwise (the app shows
request ids and log lines), runs headless and sends no usage statistics. Streamlit is
imported by the child process only, so ``triton-obs --help`` works without the ``app`` extra.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["MAIN", "streamlit_command", "triage"]

MAIN = Path(__file__).resolve().parent / "app" / "main.py"


def streamlit_command(port: int, host: str) -> list[str]:
    """The ``streamlit run`` command line: headless, no usage statistics, bound to ``host``."""
    return [
        sys.executable, "-m", "streamlit", "run", str(MAIN),
        "--server.port", str(port),
        "--server.address", host,
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        "--global.developmentMode", "false",
        "--client.toolbarMode", "viewer",
    ]  # fmt: skip


def triage(
    store: Annotated[
        Path | None, typer.Option(help="a store written by `collect`/`watch` (read-only)")
    ] = None,
    bundle: Annotated[
        Path | None, typer.Option(help="a bundle folder, analysed into a store of its own")
    ] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="the app's port")] = 8501,
    host: Annotated[
        str, typer.Option(help="the address to bind; beyond loopback warns (no login)")
    ] = "127.0.0.1",
    log: Annotated[
        Path | None,
        typer.Option(help="the Triton log the store reads, for exact evidence lines"),
    ] = None,
) -> None:
    """Open the triage app (Streamlit) on a store or a bundle, at http://HOST:PORT."""
    if store is not None and bundle is not None:
        raise typer.BadParameter("give --store or --bundle, not both")
    if store is not None and not store.is_file():
        raise typer.BadParameter(f"no store at {store}", param_hint="--store")
    if bundle is not None and not (bundle / "meta.json").is_file():
        raise typer.BadParameter(f"{bundle} is not a bundle (no meta.json)", param_hint="--bundle")
    if importlib.util.find_spec("streamlit") is None:
        typer.echo("the triage app needs the app extra: pip install 'triton-observability[app]'")
        raise typer.Exit(2)
    env = dict(os.environ)
    for key, value in (
        ("TRITON_OBS_TRIAGE_STORE", store),
        ("TRITON_OBS_TRIAGE_BUNDLE", bundle),
        ("TRITON_OBS_TRIAGE_LOG", log),
    ):
        env.pop(key, None)
        if value is not None:
            env[key] = str(value.resolve())
    from observability.netaddr import is_loopback

    if not is_loopback(host):
        # The app shows request ids and log lines, with no login: say so where it is seen.
        typer.echo(
            f"warning: the triage app listens on {host}, beyond loopback: anyone who can "
            "reach this machine can read the store (--host 127.0.0.1 keeps it local)",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"triage app on http://{shown}:{port} (Ctrl-C to stop)")
    child = subprocess.Popen(streamlit_command(port, host), env=env)
    # A supervisor's SIGTERM must stop the server too, not orphan it.
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    try:
        code = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        try:
            code = child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
    raise typer.Exit(code)


if __name__ == "__main__":
    typer.run(triage)
