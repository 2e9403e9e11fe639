"""Log text made safe to show as text: what the log said, nothing a terminal or browser acts on.

Log lines are attacker-reachable (request ids, exception messages, tensor names come from
clients and models). The app shows them with ``st.code``/``st.text`` only; this module also
makes control characters visible (an ANSI escape becomes the four characters ``\\x1b``)
and cuts very long lines, so a hostile line can neither restyle the page nor freeze it.
"""

from __future__ import annotations

import re

__all__ = ["MAX_LINE_CHARS", "plain", "visible_controls"]

MAX_LINE_CHARS = 2000
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible_controls(text: str) -> str:
    """Control characters (ESC, NUL, CR, C1) as ``\\xNN``; newlines and tabs stay."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


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
