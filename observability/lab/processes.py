"""Find the processes a lab started, so that stopping it leaves nothing behind.

Python backend stubs are children of tritonserver but outlive it for a while when the server
is killed; we find them by the lab's own backend directory in their command line, which is
unique to one run folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

__all__ = ["pid_alive", "processes_mentioning", "stop_group"]


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


def stop_group(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    """Stop a process started in a session of its own, with everything it started.

    SIGTERM to the whole group lets a CLI stop its children (streamlit, a collector) its
    own way; what is still there after ``timeout_s`` is SIGKILLed."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
