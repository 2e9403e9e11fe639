"""The verbose-log parser's hot path, compiled, where the C extension was built.

Why: a verbose log's lines are mostly a handful of shapes (request state steps, ``prepared``,
instance batches, response outputs, frontend requests), and the Python hot path of
:func:`collectors.logs.parser.parse_lines` spends about 4 µs on each: most of what ``analyze``,
``ingest`` and a watched pod's CPU go to. ``_hotpath.c`` reads those shapes and builds the same
records (a stub's plain prints too), and hands every other line (and any line it is not sure
of) back to the Python loop untouched, so the records are the Python parser's by
construction; the tests compare both paths on every recorded log.

:func:`scanner` is None where the extension is missing (no compiler at install time) or
``TRITON_OBS_PURE_PARSER=1`` is set: the parser then runs its Python path alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from collectors.compiled import extension

__all__ = [
    "ColumnSink",
    "LineView",
    "Scan",
    "SplitLines",
    "column_sink",
    "line_splitter",
    "line_viewer",
    "scanner",
]

Scan = Callable[..., tuple[int, int, int, int, int, int, int, int, int, int, int]]
"""``scan(lines, i, sink, offset, last_at, block, glog, iso, sources, iso_s, iso_k)`` ->
``(i, offset, last_at, block, lines, records, info, blank, continuation, iso_s, iso_k)``:
reads ``lines[i:]`` into ``sink`` up to the first line it hands back (the returned ``i``);
``info``, ``blank`` and ``continuation`` count skipped lines, and ``iso_s``/``iso_k`` carry
the ISO8601 second being spread and its records so far (parser._ISO_SPREAD_MAX)."""


SplitLines = Callable[[bytes, int, int], "list[bytes] | None"]
"""``split_lines(data, end, limit)`` -> ``data[:end]``'s ``\\n``-terminated lines, or None
if one is longer than ``limit``."""


def _compiled() -> Any | None:
    """The extension module, or None (not built, or ``TRITON_OBS_PURE_PARSER=1``)."""
    return extension("logs._hotpath")


def line_splitter() -> SplitLines | None:
    """The compiled line splitter, or None (no extension, or ``TRITON_OBS_PURE_PARSER=1``)."""
    compiled = _compiled()
    return None if compiled is None else cast(SplitLines, compiled.split_lines)


LineView = Callable[[bytes, int, int], "Sequence[bytes] | None"]


def line_viewer() -> LineView | None:
    """The compiled ``line_view(data, end, limit)``: ``split_lines``' lines as a sequence over
    ``data`` itself, which the scan reads where they lie (a bytes object is made of a line only
    when it is indexed), or None (no extension, or ``TRITON_OBS_PURE_PARSER=1``)."""
    compiled = _compiled()
    return None if compiled is None else cast(LineView, compiled.line_view)


def _members(cls: type) -> tuple[type, tuple[Any, ...]]:
    return cls, tuple(cls.__dict__[f.name] for f in dataclasses.fields(cls))


def scanner(tables: dict[str, Any]) -> Scan | None:
    """The compiled scan configured with the parser's ``tables``, or None."""
    _hotpath = _compiled()
    if _hotpath is None:
        return None
    from observability import events as ev

    kinds = (
        ev.LogRecord,
        ev.RequestStateChange,
        ev.RequestPrepared,
        ev.InstanceExecuting,
        ev.InstanceReleased,
        ev.ResponseOutput,
        ev.FrontendRequest,
        ev.FrontendCancellation,
        ev.StreamRequestRead,
        ev.StreamResponse,
        ev.StubOutput,
        ev.ErrorLine,
    )
    _hotpath.configure(
        tables["levels"],
        ev.LogLevel.INFO,
        tuple(_members(k) for k in kinds),
        tables["handlers"],
        tables["http_methods"],
        tables["strings"],
        tables["transitions"],
        tables["ids"],
    )
    return cast(Scan, _hotpath.scan)


class ColumnSink(Protocol):
    """``_hotpath.Sink``: a log's records as their kinds' columns, for a store's blocks. The
    scan writes a record into it without making the record; ``append`` takes one the Python
    loop made; ``take(n)`` cuts the first n off as ``(kinds, order, parts, span)``
    (``observability.store.blocks.ColumnBlock``)."""

    def append(self, record: object, /) -> None: ...

    def take(
        self, n: int, /
    ) -> tuple[list[type], bytes, list[Any], tuple[int, int, int, int] | None]: ...

    def __len__(self) -> int: ...


def column_sink() -> ColumnSink | None:
    """A new column sink, or None where the scan is not compiled (the parser configures it)."""
    compiled = _compiled()
    return None if compiled is None else cast(ColumnSink, compiled.Sink())
