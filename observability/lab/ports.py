"""Free loopback ports for the lab's three listeners."""

from __future__ import annotations

import socket
from dataclasses import dataclass

__all__ = ["LabPorts", "free_ports"]


@dataclass(frozen=True)
class LabPorts:
    http: int
    grpc: int
    metrics: int


def free_ports(host: str = "127.0.0.1") -> LabPorts:
    """Ask the kernel for three distinct free ports.

    The sockets are closed before Triton binds, so another process can win the race; the
    lab detects that from Triton's log and retries with fresh ports.
    """
    socks = []
    try:
        for _ in range(3):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        http, grpc, metrics = (s.getsockname()[1] for s in socks)
    finally:
        for s in socks:
            s.close()
    return LabPorts(http=http, grpc=grpc, metrics=metrics)
