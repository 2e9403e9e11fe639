"""The shipped alert rules for your Prometheus: job selectors and the runbook base of your own.

Why not rules generated from code like the dashboards: the rule files are read and tested by
promtool as they are (each ``*.rules.yml`` beside its ``*.test.yml``), and a user reviews them
as YAML. What differs between deployments is small and textual: the job that scrapes Triton
(``job="triton"``), the job that scrapes ``watch`` (``job="triton-obs"``), and where the
runbooks live. ``render`` replaces exactly those, nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

from observability.catalogue import RUNBOOK_BASE

__all__ = ["ALERTS", "render", "render_all"]

ALERTS = Path(__file__).resolve().parent / "alerts"
TRITON_JOB = 'job="triton"'
WATCH_JOB = 'job="triton-obs"'
_MATCHER = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*(=|!=|=~|!~)"[^"]*"$')


def _checked(matcher: str, flag: str) -> str:
    if not _MATCHER.match(matcher):
        raise ValueError(f'{flag} {matcher!r} is not one label matcher such as job="triton"')
    return matcher


def render(
    text: str,
    triton_job: str = TRITON_JOB,
    watch_job: str = WATCH_JOB,
    runbook_base: str = RUNBOOK_BASE,
) -> str:
    """One rule file's text with the selectors and the runbook base replaced."""
    triton_job = _checked(triton_job, "--triton-job")
    watch_job = _checked(watch_job, "--watch-job")
    if not runbook_base.endswith("/"):
        runbook_base += "/"
    out = text.replace(TRITON_JOB, "\0triton\0").replace(WATCH_JOB, "\0watch\0")
    out = out.replace("\0triton\0", triton_job).replace("\0watch\0", watch_job)
    return out.replace(RUNBOOK_BASE, runbook_base)


def render_all(out: Path, **options: str) -> list[Path]:
    """Every shipped ``*.rules.yml`` rendered into ``out`` (created)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(ALERTS.glob("*.rules.yml")):
        target = out / path.name
        target.write_text(render(path.read_text(encoding="utf-8"), **options), encoding="utf-8")
        written.append(target)
    return written
