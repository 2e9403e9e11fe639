"""Log text made safe to show as text: what the log said, nothing a terminal or browser acts on.

Log lines are attacker-reachable (request ids, exception messages, tensor names come from
clients and models). The app shows them with ``st.code``/``st.text`` only; this module also
makes control characters visible (an ANSI escape becomes the four characters ``\\x1b``)
and cuts very long lines, so a hostile line can neither restyle the page nor freeze it.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_LINE_CHARS",
    "cell",
    "chart_text",
    "plain",
    "visible_controls",
]

MAX_LINE_CHARS = 2000
MAX_CELL_CHARS = 300
"""Table cells, chart labels and choices: one line each, the full text is on the Finding page."""
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible format characters that reorder or hide text (Trojan Source): bidi embeddings,
# overrides and isolates, zero-width characters, line and paragraph separators, the BOM.
_FORMATS = re.compile("[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def visible_controls(text: str) -> str:
    """Control characters (ESC, NUL, CR, C1) as ``\\xNN`` and invisible format characters
    (bidi overrides, zero-width) as ``\\uNNNN``; newlines and tabs stay."""
    text = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _FORMATS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def cell(text: object, max_chars: int = MAX_CELL_CHARS) -> str:
    """One line for a table cell or a choice: controls visible, newlines and tabs as
    ``\\n``/``\\t``, cut at ``max_chars``."""
    line = visible_controls(str(text)).replace("\n", "\\n").replace("\t", "\\t")
    if len(line) > max_chars:
        line = f"{line[:max_chars]}… [{len(line) - max_chars} more characters]"
    return line


def chart_text(text: object, max_chars: int = MAX_CELL_CHARS) -> str:
    """:func:`cell` for Plotly, which reads ``<a href>``, ``<b>``, ``<span style>`` and
    ``<br>`` in labels and hover text as markup: ``&``, ``<`` and ``>`` become entities, which
    Plotly shows as the characters."""
    return cell(text, max_chars).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plain(text: str, max_line_chars: int = MAX_LINE_CHARS, max_lines: int = 200) -> str:
    """Text fit for ``st.code``: controls visible, each line cut at ``max_line_chars``."""
    lines = visible_controls(text).split("\n")
    out = []
    for line in lines[:max_lines]:
        if len(line) > max_line_chars:
            line = f"{line[:max_line_chars]}… [{len(line) - max_line_chars} more characters]"
        out.append(line)
    if len(lines) > max_lines:
        out.append(f"… [{len(lines) - max_lines} more lines]")
    return "\n".join(out)
