"""Free loopback ports for the servers we start (Triton's three listeners, our collector's).

A port the kernel picks for ``bind(port 0)`` comes from its ephemeral range, the same range
it hands to every outgoing connection. Between our closing the probe socket and the server's
bind, any client on the machine (a load generator, a scrape, another test) can take that port
as its source, and the server fails with "[Errno 98] Address already in use". A port below the
ephemeral range is never given out implicitly, so only another explicit pick can take it.
"""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LabPorts", "free_port", "free_ports"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_SPAN = 16_384
"""How many ports below the ephemeral range we draw from."""
_LOWEST = 10_000
_TRIES = 64
_draw = random.SystemRandom()
"""Not the module's random: a test that seeds it would make every worker draw the same ports."""
_given: set[int] = set()
"""Ports this process handed out already: a later pick in the same process skips them even
once the server that holds one has stopped (a restart rebinds it)."""


@dataclass(frozen=True)
class LabPorts:
    http: int
    grpc: int
    metrics: int


def _ephemeral_low() -> int | None:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _kernel_pick(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, below the kernel's ephemeral range where there is room.

    The probe socket is closed before the caller binds, so another explicit pick can still
    win the race (a random draw from thousands of ports makes that rare); callers that start
    a server retry on "address in use" as :class:`~observability.lab.TritonLab` does.
    """
    low = _ephemeral_low()
    if low is None or low - _LOWEST < 1_024:
        port = _kernel_pick(host)
        _given.add(port)
        return port
    start = max(_LOWEST, low - _SPAN)
    for _ in range(_TRIES):
        port = _draw.randrange(start, low)
        if port not in _given and _bindable(host, port):
            _given.add(port)
            return port
    port = _kernel_pick(host)
    _given.add(port)
    return port


def free_ports(host: str = "127.0.0.1") -> LabPorts:
    """Three distinct free ports (see :func:`free_port`); the lab detects a lost race from
    Triton's log and retries with fresh ports."""
    return LabPorts(http=free_port(host), grpc=free_port(host), metrics=free_port(host))
