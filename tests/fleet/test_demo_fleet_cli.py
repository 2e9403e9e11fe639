"""``triton-obs demo --fleet N`` reaches the fleet box with N pods (no Triton started here)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import observability.demo.fleet as fleet
from observability.cli import app


@pytest.mark.parametrize(("argv", "pods", "hang", "ui"), [
    (["demo", "--fleet", "3", "--no-ui"], 3, 1, False),
    (["demo", "--fleet", "1"], 1, 0, True),
])  # fmt: skip
def test_fleet_option(monkeypatch, argv: list[str], pods: int, hang: int, ui: bool) -> None:
    seen: list[tuple[int, int, bool]] = []

    def fake(options: fleet.FleetOptions, console: object, ui: bool) -> int:
        seen.append((options.pods, options.hang_pod, ui))
        return 0

    monkeypatch.setattr(fleet, "run_fleet_demo", fake)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert seen == [(pods, hang, ui)]


def test_fleet_size_is_bounded() -> None:
    result = CliRunner().invoke(app, ["demo", "--fleet", "9"])
    assert result.exit_code == 2
