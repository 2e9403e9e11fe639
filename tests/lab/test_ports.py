"""free_port: ports below the ephemeral range, so no outgoing connection can hold one.

A server started on a ``bind(0)`` probe's port failed once in CI with "[Errno 98] Address
already in use": between the probe's close and the server's bind, a client's connection on the
busy two-worker machine took the port as its source.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from observability.lab import ports


def _ephemeral() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_picks_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    low, _ = _ephemeral()
    if low < 11_024:
        pytest.skip(f"this kernel's ephemeral range starts at {low}: no room below it")
    picked = [ports.free_port() for _ in range(200)]
    assert len(set(picked)) == len(picked)
    assert all(1_024 <= p < low for p in picked), sorted(picked)[:5]
    with socket.socket() as s:
        s.bind(("127.0.0.1", picked[-1]))


def test_a_port_in_use_is_never_given(monkeypatch: pytest.MonkeyPatch) -> None:
    real = random.SystemRandom()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        busy = held.getsockname()[1]
        draws: list[int] = []

        class BusyFirst:
            def randrange(self, start: int, stop: int) -> int:
                draws.append(busy if not draws else real.randrange(start, stop))
                return draws[-1]

        monkeypatch.setattr(ports, "_draw", BusyFirst())
        assert ports.free_port() != busy
        assert draws[0] == busy and len(draws) >= 2


def test_a_seeded_global_random_does_not_repeat_another_workers_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two xdist workers whose tests seed ``random`` the same must not draw the same ports."""

    def fixed(*args: object, **kwargs: object) -> int:
        raise AssertionError("free_port draws from the module's shared random")

    monkeypatch.setattr(random, "randrange", fixed)
    monkeypatch.setattr(random, "randint", fixed)
    ports.free_port()


def test_without_the_range_file_the_kernel_picks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "absent")
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
