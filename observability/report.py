"""Findings for people: a rich table, Markdown, or the fixed JSON array."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from observability.findings import Finding

__all__ = ["findings_json", "findings_markdown", "findings_table"]

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def findings_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2, sort_keys=True)


def findings_table(
    findings: Sequence[Finding], title: str = "findings", advice: bool = True
) -> Table:
    """Log text is shown as text (``Text``), never interpreted as markup."""
    table = Table(title=title, title_justify="left", show_lines=True)
    columns = ["severity", "kind", "model", "request", "summary"] + (["advice"] if advice else [])
    for col in columns:
        table.add_column(col, overflow="fold")
    for f in findings:
        row = [
            Text(f.severity.value, style=_STYLE[f.severity.value]),
            Text(f.kind),
            Text(f.model or "-"),
            Text(f.request_id or "-"),
            Text(f.summary),
        ]
        table.add_row(*row, *([Text(f.advice)] if advice else []))
    if not findings:
        table.caption = "no findings"
    return table


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def findings_markdown(findings: Sequence[Finding]) -> str:
    lines = [
        "| severity | kind | model | request | summary |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {f.severity.value} | {f.kind} | {_cell(f.model or '-')} | {_cell(f.request_id or '-')} "
        f"| {_cell(f.summary)} |"
        for f in findings
    ]
    for f in findings:
        lines += [
            "",
            f"### {f.kind}: {_cell(f.model)}",
            "",
            f.summary,
            "",
            f"**Advice:** {f.advice}",
        ]
        lines += [
            f"- `{e.source}` {e.to_dict()['at']} `{e.ref}`: {_cell(e.detail)}" for e in f.evidence
        ]
    return "\n".join(lines) + "\n"
