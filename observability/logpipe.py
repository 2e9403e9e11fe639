"""``triton-obs logpipe --file F -- tritonserver ...``: one log with Triton's lines and its stubs'.

Why: Triton's ``--log-file`` receives Triton's own lines only. A python stub's output (the
``Exception in callback`` tracebacks ``callback_error`` reads, the in-model library's HUNG and
STALLED lines) goes to the stub's stderr, which the stub inherits from ``tritonserver``, so it
reaches the container runtime but never that file. Run Triton under this command instead of
``--log-file``: its stdout and stderr (and every stub's) go through one pipe into ``F``,
opened for append and reopened when it is rotated by rename, and on to this process's stdout,
so ``docker logs`` still shows everything. Signals are passed on to Triton, whose exit code
this command returns.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from observability.lab.logpump import LogPump

__all__ = ["run"]

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run(command: Sequence[str], path: Path, mirror: bool = True) -> int:
    """Run ``command`` with its output piped into ``path``; its exit code."""
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    pump = LogPump(proc.stdout, path, sys.stdout.fileno() if mirror else None).start()
    previous = {
        s: signal.signal(s, lambda signum, _f: proc.send_signal(signum)) for s in _FORWARDED
    }
    try:
        code = proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        pump.join(timeout=10)
    return code
