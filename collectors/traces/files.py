"""Find a trace file and its ``log-frequency`` rollover files, in the order Triton wrote them.

Why numeric order matters: with ``--trace-config triton,log-frequency=N`` Triton writes
``F.0``, ``F.1``, ... ``F.10``; a plain sort puts ``F.10`` before ``F.2``. (On 2.51 the
global form ``--trace-config log-frequency=N`` is accepted and silently ignored: it must be
``triton,log-frequency=N``.) ``F`` itself, written only at a clean exit without
``log-frequency``, sorts last. Names like ``F.json`` or ``F.3.tmp`` are not ours.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["rollover_index", "trace_files"]


def rollover_index(base: str, name: str) -> int | None:
    """The ``N`` of ``base.N``; ``None`` for any other name (``base`` itself included)."""
    prefix = base + "."
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix) :]
    if not digits.isascii() or not digits.isdigit():
        return None
    return int(digits)


def trace_files(path: str | Path) -> list[Path]:
    """``F.0``, ``F.1``, ... in numeric order, then ``F`` — those that exist now."""
    path = Path(path)
    numbered: list[tuple[int, Path]] = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return []
    for entry in entries:
        index = rollover_index(path.name, entry.name)
        if index is not None and entry.is_file():
            numbered.append((index, entry))
    found = [p for _, p in sorted(numbered)]
    if path.is_file():
        found.append(path)
    return found
