"""The verbose-log fields the detectors need, as columns, at well over 1M lines/s.

``parser.parse_lines`` builds one frozen dataclass per record, and building it costs more
than reading the line: CPython cannot get past ~200k lines/s that way. Detectors need only
five kinds of record (request state changes, instance executing / released, response
outputs, request prepared) and read them column-wise, so ``scan`` returns those kinds as
lists of plain ``int``/``str``/``tuple`` values built by the C extension ``_fastscan``.

The contract is exactness, not approximation: for those kinds ``scan(data, ...)`` equals,
value for value, what ``parse_lines`` yields for ``data`` split after each ``b"\\n"`` with
``final=False`` (``tests/collectors/logs/test_fastscan.py`` checks every fixture line, the
1M-line synthetic log and random input). Where the extension was not built (no compiler at
install time: it is an optional extension) ``scan`` runs ``parse_lines`` and converts its
records: identical results, the parser's speed. ``ACCELERATED`` says which one runs.

A last line without ``\\n`` is a write in flight: it is not read, and ``resume_offset``
points at it. ``year`` and ``utc_offset_s`` mean what they mean for ``parse_lines`` (glog
headers carry no year; ISO8601 headers ignore both).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, NamedTuple

from collectors.logs.parser import ParseStats, _ident, parse_lines
from observability.events import (
    InstanceExecuting,
    InstanceReleased,
    RequestPrepared,
    RequestStateChange,
    ResponseOutput,
)

try:
    from collectors.logs import _fastscan  # type: ignore[attr-defined]
except ImportError:  # built without a compiler: the Python path gives the same results
    _fastscan = None

__all__ = [
    "ACCELERATED",
    "Executing",
    "Outputs",
    "Prepared",
    "Released",
    "ScanResult",
    "StateChanges",
    "scan",
]

ACCELERATED: bool = _fastscan is not None
"""True when ``scan`` runs the compiled scanner, False when it falls back to the parser."""


class StateChanges(NamedTuple):
    """``RequestStateChange`` records, one list per field (``""`` for ``<id_unknown>``)."""

    at_ns: list[int]
    offset: list[int]
    request_id: list[str]
    from_state: list[str]
    to_state: list[str]


class Executing(NamedTuple):
    """``InstanceExecuting`` records."""

    at_ns: list[int]
    offset: list[int]
    model: list[str]
    instance: list[str]
    count: list[int]


class Released(NamedTuple):
    """``InstanceReleased`` records."""

    at_ns: list[int]
    offset: list[int]
    instance: list[str]
    count: list[int]


class Outputs(NamedTuple):
    """``ResponseOutput`` records (2.51 names no model on that line, so there is none)."""

    at_ns: list[int]
    offset: list[int]
    output: list[str]
    dtype: list[str]
    shape: list[tuple[int, ...]]


class Prepared(NamedTuple):
    """``RequestPrepared`` records."""

    at_ns: list[int]
    offset: list[int]
    request_id: list[str]
    model: list[str]
    version: list[int]
    batch_size: list[int]
    timeout_us: list[int]


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Columns of the scanned kinds, plus line accounting.

    ``lines`` counts the lines read, as ``ParseStats.lines`` does (two Triton lines glued on
    one physical line count as two); ``skipped`` is how many of them gave none of the five
    kinds; ``resume_offset`` is where the next call should start (``offset`` plus the bytes
    read, a trailing line without ``\\n`` excluded).
    """

    lines: int
    skipped: int
    resume_offset: int
    state: StateChanges
    executing: Executing
    released: Released
    outputs: Outputs
    prepared: Prepared

    @property
    def records(self) -> int:
        return (
            len(self.state.at_ns)
            + len(self.executing.at_ns)
            + len(self.released.at_ns)
            + len(self.outputs.at_ns)
            + len(self.prepared.at_ns)
        )


def scan(
    data: bytes | bytearray | memoryview, *, year: int, utc_offset_s: int = 0, offset: int = 0
) -> ScanResult:
    """Scan a chunk of a verbose log that starts at byte ``offset`` of its file.

    Raises ``ValueError`` only for arguments out of range (``year`` outside 1..9999,
    ``offset`` outside 0..2**62, ``utc_offset_s`` beyond +-2**40: the compiled scanner's
    limits, checked here so that both paths agree); bad log content never raises.
    """
    if not 1 <= year <= 9999:
        raise ValueError(f"year must be in 1..9999, got {year!r}")
    if not 0 <= offset <= 1 << 62:
        raise ValueError(f"offset must be in 0..2**62, got {offset!r}")
    if not -(1 << 40) <= utc_offset_s <= 1 << 40:
        raise ValueError(f"utc_offset_s must be within +-2**40, got {utc_offset_s!r}")
    if _fastscan is None:
        return _scan_python(data, year=year, utc_offset_s=utc_offset_s, offset=offset)
    lines, resume, state, execs, rels, outs, preps = _fastscan.scan(
        data, year, utc_offset_s, offset, _ident
    )
    return _result(
        lines,
        resume,
        StateChanges(*state),
        Executing(*execs),
        Released(*rels),
        Outputs(*outs),
        Prepared(*preps),
    )


def _result(
    lines: int,
    resume: int,
    state: StateChanges,
    execs: Executing,
    rels: Released,
    outs: Outputs,
    preps: Prepared,
) -> ScanResult:
    records = sum(len(k.at_ns) for k in (state, execs, rels, outs, preps))
    return ScanResult(lines, lines - records, resume, state, execs, rels, outs, preps)


def _scan_python(
    data: bytes | bytearray | memoryview, *, year: int, utc_offset_s: int, offset: int
) -> ScanResult:
    """The same result through ``parse_lines``: the fallback, and the tests' reference."""
    stats = ParseStats()
    cols: dict[type, tuple[list[Any], ...]] = {
        RequestStateChange: tuple([] for _ in StateChanges._fields),
        InstanceExecuting: tuple([] for _ in Executing._fields),
        InstanceReleased: tuple([] for _ in Released._fields),
        ResponseOutput: tuple([] for _ in Outputs._fields),
        RequestPrepared: tuple([] for _ in Prepared._fields),
    }
    # io.BytesIO splits after b"\n" only, as reading the file in binary mode does
    events = parse_lines(
        io.BytesIO(bytes(data)),
        year=year,
        utc_offset_s=utc_offset_s,
        offset=offset,
        final=False,
        stats=stats,
    )
    for ev in events:
        c = cols.get(type(ev))
        if c is None:
            continue
        h = ev.header  # type: ignore[union-attr]
        c[0].append(h.at_ns)
        c[1].append(h.offset)
        if isinstance(ev, RequestStateChange):
            vals: tuple[Any, ...] = (ev.request_id, ev.from_state, ev.to_state)
        elif isinstance(ev, InstanceExecuting):
            vals = (ev.model, ev.instance, ev.count)
        elif isinstance(ev, InstanceReleased):
            vals = (ev.instance, ev.count)
        elif isinstance(ev, ResponseOutput):
            vals = (ev.output, ev.dtype, ev.shape)
        else:
            assert isinstance(ev, RequestPrepared)
            vals = (ev.request_id, ev.model, ev.version, ev.batch_size, ev.timeout_us)
        for col, v in zip(c[2:], vals, strict=True):
            col.append(v)
    return _result(
        stats.lines,
        stats.resume_offset,
        StateChanges(*cols[RequestStateChange]),
        Executing(*cols[InstanceExecuting]),
        Released(*cols[InstanceReleased]),
        Outputs(*cols[ResponseOutput]),
        Prepared(*cols[RequestPrepared]),
    )
