"""The TCP sockets a process tree listens on, read from /proc (no psutil needed).

Why /proc and not the process's own word: a server can say "127.0.0.1" and still open a
second listener elsewhere (a debug port, a library's default). The kernel's table joined with
the processes' socket inodes is what really listens.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Listener", "listeners", "process_tree"]

_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    pid: int
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback


def process_tree(root: int) -> set[int]:
    """``root`` and every live descendant (the triage CLI runs streamlit as a child)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo.extend(children.get(pid, []))
    return tree


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _address(hex_addr: str) -> str:
    """/proc/net/tcp{,6} write addresses as host-order 32-bit words in hex."""
    raw = bytes.fromhex(hex_addr)
    words = struct.unpack(f"<{len(raw) // 4}I", raw)
    packed = struct.pack(f">{len(words)}I", *words)
    family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, packed)


def _listening(pid: int) -> dict[int, tuple[str, int]]:
    """inode -> (address, port) of every listening TCP socket in ``pid``'s network namespace."""
    out: dict[int, tuple[str, int]] = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != _LISTEN:
                continue
            addr, port = fields[1].rsplit(":", 1)
            out[int(fields[9])] = (_address(addr), int(port, 16))
    return out


def listeners(root: int) -> list[Listener]:
    """Every TCP socket in LISTEN state held by ``root`` or a descendant."""
    found: list[Listener] = []
    for pid in sorted(process_tree(root)):
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        for inode, (addr, port) in _listening(pid).items():
            if inode in inodes:
                found.append(Listener(pid, addr, port))
    return found
