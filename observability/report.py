"""Findings for people: a rich table, Markdown, or the fixed JSON array."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from observability.detectors.work import ModelWork
from observability.findings import Finding

__all__ = [
    "findings_json",
    "findings_markdown",
    "findings_table",
    "work_markdown",
    "work_rows",
    "work_table",
]

WORK_COLUMNS = ("model", "instance", "state", "for (s)", "requests", "queued (log)", "pending")

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


def work_rows(work: Sequence[ModelWork], limit: int = 5) -> list[tuple[str, ...]]:
    """``WORK_COLUMNS`` rows for the models with work in flight: one per busy instance (at
    most ``limit``), or one for a model whose work is only queued. Requests without an id
    are counted, never left out."""
    rows: list[tuple[str, ...]] = []
    for m in work:
        if not m.active:
            continue
        queued = "-" if m.queued is None else str(m.queued)
        pending = "-" if m.pending is None else f"{m.pending:g}"
        of = f" ({len(m.busy)} of {len(m.instances)} busy)" if m.instances else ""
        if not m.busy:
            age = f"{m.oldest_queued_s:.1f}" if m.oldest_queued_s is not None else "-"
            rows.append((m.model, "-" + of, "queued", age, "-", queued, pending))
        for i in m.busy[:limit]:
            named = ", ".join(i.request_ids[:3]) + (", ..." if len(i.request_ids) > 3 else "")
            unnamed = i.batch - len(i.request_ids)
            if unnamed:
                named = ", ".join(filter(None, [named, f"{unnamed} without id"]))
            state = f"executing a batch of {i.batch}"
            rows.append((m.model, i.instance + of, state, f"{i.age_s:.1f}", named, queued, pending))
            queued = pending = of = ""  # the model's figures once, on its first row
    return rows


def work_table(work: Sequence[ModelWork], title: str = "in flight") -> Table:
    table = Table(title=title, title_justify="left")
    for col in WORK_COLUMNS:
        table.add_column(col, overflow="fold")
    for row in work_rows(work):
        table.add_row(*(Text(cell) for cell in row))
    if not table.rows:
        table.caption = "nothing executing or queued"
    return table


def work_markdown(work: Sequence[ModelWork]) -> str:
    lines = ["| " + " | ".join(WORK_COLUMNS) + " |", "|" + "---|" * len(WORK_COLUMNS)]
    lines += ["| " + " | ".join(_cell(c or " ") for c in row) + " |" for row in work_rows(work)]
    return "\n".join(lines) + "\n"
