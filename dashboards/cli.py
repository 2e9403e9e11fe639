"""``triton-obs dashboards``: build the Grafana dashboards from their Python sources.

Mounted by ``observability/cli.py`` as a sub-command group (``app``). ``--check`` is what CI and
the tests do: rebuild in memory and fail when the committed JSON differs. The SDK is imported
only when a command runs, so ``triton-obs --help`` works without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

GENERATED = Path(__file__).resolve().parent / "grafana" / "generated"
app = typer.Typer(help="Grafana dashboards as code.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Grafana dashboards as code (grafana-foundation-sdk, Grafana 11)."""


@app.command()
def build(
    out: Annotated[Path, typer.Option(help="Folder for the generated *.json.")] = GENERATED,
    check: Annotated[
        bool, typer.Option(help="Write nothing; exit 1 if the files are stale.")
    ] = False,
) -> None:
    """Write the dashboards' JSON (sorted keys, deterministic) into dashboards/grafana/generated."""
    # Imported here so that mounting this group costs nothing without grafana-foundation-sdk.
    from dashboards.grafana.build import build_all, write_all

    if check:
        stale = [
            name for name, text in build_all().items()
            if not (out / name).exists() or (out / name).read_text(encoding="utf-8") != text
        ]  # fmt: skip
        if stale:
            typer.echo(f"stale: {', '.join(stale)}; run `triton-obs dashboards build`", err=True)
            raise typer.Exit(1)
        typer.echo("dashboards up to date")
        return
    for path in write_all(out):
        typer.echo(str(path))
