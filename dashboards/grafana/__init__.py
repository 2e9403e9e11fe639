"""Grafana dashboards as code (grafana-foundation-sdk, Grafana 11 line).

``triton-obs dashboards build`` renders :data:`DASHBOARDS` into ``generated/*.json``; the JSON
is an output, never edited by hand (a test rebuilds it and fails on a diff).
"""

from __future__ import annotations

from dashboards.grafana.build import DASHBOARDS, GENERATED, build_all, render, write_all

__all__ = ["DASHBOARDS", "GENERATED", "build_all", "render", "write_all"]
