"""Find the processes a lab started, so that stopping it leaves nothing behind.

Python backend stubs are children of tritonserver but outlive it for a while when the server
is killed; we find them by the lab's own backend directory in their command line, which is
unique to one run folder.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pid_alive", "processes_mentioning"]


def processes_mentioning(needle: str) -> dict[int, str]:
    """Map pid -> command line of every live process whose command line contains ``needle``."""
    found: dict[int, str] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            status = (entry / "stat").read_text()
        except OSError:
            continue
        # A zombie has an empty cmdline and state Z: it is already dead, only unreaped.
        if not raw or status.rsplit(")", 1)[-1].split()[0] == "Z":
            continue
        cmdline = raw.replace(b"\0", b" ").decode(errors="replace")
        if needle in cmdline:
            found[int(entry.name)] = cmdline
    return found


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
