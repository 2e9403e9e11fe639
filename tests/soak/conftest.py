"""The long form outlives pytest-timeout's per-test limit: give it its own."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    minutes = config.getoption("--soak-minutes")
    if minutes is None:
        return
    limit = int(minutes * 60 * 1.25) + 600  # the cycles, a late last cycle, set-up and checks
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(pytest.mark.timeout(limit))
