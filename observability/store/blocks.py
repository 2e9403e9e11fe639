"""Events to compressed columnar blocks and back.

A block is one stream's records (a log file's lines, a target's scrapes, a batch of spans) in
arrival order. Records are grouped by kind; each kind's fields, nested headers flattened, are
stored as columns; integer columns as deltas. A column of one log field repeats the same few
values, and the deltas of timestamps and byte offsets are small, so zstd leaves about a
tenth of what the same records take as JSON rows (``python -m benchmarks.store_size``). Decoding
rebuilds the same frozen dataclasses as :func:`observability.store.codec.decode`, and only the
kinds a reader asks for.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import json
import lzma
import math
import operator
import sys
import threading
import types
import typing
import zlib
from collections.abc import Callable, Collection, Sequence
from typing import Any

import zstandard

from observability.store import codec
from observability.store.codec import KINDS, _builder, _direct, _hints, _identity, _plain

__all__ = ["BlockError", "ColumnBlock", "decode_block", "encode_block", "encode_columns"]

_c_pack: Callable[[list[Any]], bytes | None] | None
_c_columns: Callable[[list[Any], tuple[Any, ...]], list[bytes | list[Any]]] | None
_c_group: Callable[[list[Any]], tuple[list[type], bytes, list[list[Any]]]] | None
_c_pack_columns: (
    Callable[[Sequence[list[Any] | bytes], tuple[Any, ...]], list[bytes | list[Any]]] | None
)
if codec.compiled is not None:
    _c_pack, _c_columns, _c_group, _c_pack_columns = (
        codec.compiled.pack,
        codec.compiled.columns,
        codec.compiled.group,
        codec.compiled.pack_columns,
    )
else:  # every column in Python
    _c_pack = _c_columns = _c_group = _c_pack_columns = None

_ZSTD_LEVEL = 6
"""zstd's level for new blocks. On the demo's healthy recording it leaves 368 bytes a client
request where xz at its fastest preset (schema 7's blocks) left 353, and compresses a block
of log records 4-5 times and decompresses it 9-11 times as fast; levels 1-5 leave 6-11% more,
8-9 1-2% less at 1.5-2 times level 6's time (``docs/formats/store.md``)."""

_XZ_MAGIC = b"\xfd7zXZ\x00"
_MAX_BODY = 1 << 30
"""A damaged block's header may claim any size: it is refused, not allocated."""
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _Codecs(threading.local):
    """A zstd context per thread: a context is not safe to share between threads, and making
    one per block cost more than compressing a small block."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_codecs = _Codecs()


def _compress(body: bytes) -> bytes:
    return _codecs.compressor.compress(body)


class BlockError(ValueError):
    """A block's bytes are not a block this code wrote (a damaged page, a foreign file)."""


_PLAIN_TYPES = (str, int, float, bool)


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _stays_plain(hint: Any) -> bool:
    """Whether values of ``hint`` are stored as they are (``_plain`` would return them)."""
    if hint in _PLAIN_TYPES:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return all(a is type(None) or a in _PLAIN_TYPES for a in typing.get_args(hint))
    return False


def _enum_of(hint: Any) -> type[enum.Enum] | None:
    """The enum ``hint`` names, alone or optional; None for any other hint."""
    present = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    tp = present[0] if len(present) == 1 else None
    return tp if isinstance(tp, type) and issubclass(tp, enum.Enum) else None


def _column_plainer(hint: Any) -> Callable[[list[Any]], list[Any]]:
    """A function from a column of ``hint``'s values to what ``_plain`` makes of each: an
    enum's by a table (most log columns that are not plain are a line's level)."""
    table = _column_spec(hint)
    if table is None:
        return lambda col: col
    if isinstance(table, dict):

        def plain_enum(col: list[Any]) -> list[Any]:
            try:
                return [table[v] if v in table else _plain(v) for v in col]
            except TypeError:  # an unhashable value where an enum belongs
                return list(map(_plain, col))

        return plain_enum
    return lambda col: list(map(_plain, col))


def _column_spec(hint: Any) -> dict[Any, Any] | bool | None:
    """What a column of ``hint`` needs to become plain, for :func:`_column_plainer` and
    ``_blockpack.columns``: nothing (None), an enum's table of members to values, or any
    value made plain one by one (False: the compiled reader hands it back)."""
    if _stays_plain(hint):
        return None
    tp = _enum_of(hint)
    if tp is not None:
        return {None: None, **{m: m.value for m in tp}}
    return False


def _column_builder(hint: Any) -> Callable[[list[Any]], list[Any]]:
    """A function from a stored column to the values of ``hint``, made once per hint. A
    whole column at a time: a call per value was most of a block's decoding."""
    one = _builder(hint)
    if one is _identity:
        return lambda col: col
    tp = _enum_of(hint)
    if tp is not None:
        table = {m.value: m for m in tp}
        return lambda col: [None if v is None else (table[v] if v in table else tp(v)) for v in col]
    return lambda col: list(map(one, col))


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How one record type is flattened into columns and rebuilt from them."""

    paths: tuple[str, ...]
    """Each flat column's dotted attribute path (``header.at_ns``), in the stored order."""
    plain: tuple[Callable[[list[Any]], list[Any]], ...]
    """Per column: what makes its values plain (JSON's)."""
    build: Callable[[list[list[Any]]], list[Any]]
    """Decoded columns (stored order) -> the records."""
    specs: tuple[tuple[tuple[str, ...], dict[Any, Any] | bool | None], ...]
    """Per column: its path as attribute names, and :func:`_column_spec`."""

    def columns(self, records: Sequence[Any]) -> list[list[Any]]:
        out = []
        for path, plain in zip(self.paths, self.plain, strict=True):
            out.append(plain(list(map(operator.attrgetter(path), records))))
        return out

    def packed(self, records: list[Any]) -> list[bytes]:
        """``_packed`` of each of :meth:`columns`: read and packed in one compiled call (a
        Python pass per column was a fifth of a log ingest), Python's for what it hands back."""
        if _c_columns is None:
            return list(map(_packed, self.columns(records)))
        out = _c_columns(records, self.specs)
        for i, col in enumerate(out):
            if type(col) is list:
                out[i] = _packed(self.plain[i](col))
        return out  # type: ignore[return-value]

    def packed_columns(self, columns: Sequence[list[Any] | bytes]) -> list[bytes]:
        """:meth:`packed` of records already in columns (a log's column sink took them so)."""
        if len(columns) != len(self.paths):
            raise ValueError(f"{len(columns)} columns, not {len(self.paths)}")
        out: list[bytes | list[Any]] = (
            _c_pack_columns(columns, self.specs)
            if _c_pack_columns is not None
            else list(map(_listed, columns))
        )
        for i, col in enumerate(out):
            if type(col) is list:
                out[i] = _packed(self.plain[i](col))
        return out  # type: ignore[return-value]


def _plan(
    cls: type, prefix: str = ""
) -> tuple[list[str], list[Callable[[list[Any]], list[Any]]], list[Any], Any, int]:
    """The flat columns of ``cls`` (a field that is itself a record, such as a log line's
    header, is spread into its own fields) and a builder from a run of decoded columns."""
    paths: list[str] = []
    plain: list[Callable[[list[Any]], list[Any]]] = []
    specs: list[Any] = []
    parts: list[tuple[str, Any, int]] = []
    for name, hint in _hints(cls).items():
        if _is_record(hint):
            inner_paths, inner_plain, inner_specs, inner_build, width = _plan(
                hint, f"{prefix}{name}."
            )
            paths += inner_paths
            plain += inner_plain
            specs += inner_specs
            parts.append((name, inner_build, width))
        else:
            paths.append(prefix + name)
            plain.append(_column_plainer(hint))
            specs.append(_column_spec(hint))
            parts.append((name, (lambda c: lambda cols, i: c(cols[i]))(_column_builder(hint)), 1))
    width = sum(w for _, _, w in parts)
    order = [f.name for f in dataclasses.fields(cls)]
    positional = all(f.init for f in dataclasses.fields(cls)) and sorted(order) == sorted(
        name for name, _, _ in parts
    )

    direct = positional and _direct(cls)
    field_names = tuple(order)

    def build(cols: list[list[Any]], start: int) -> list[Any]:
        values: dict[str, list[Any]] = {}
        at = start
        for name, make, w in parts:
            values[name] = make(cols, at)
            at += w
        if positional:
            ordered = [values[name] for name in order]
            fast = codec._c_records  # read at each call: tests turn it off
            made = fast(cls, field_names, ordered) if direct and fast is not None else None
            return list(map(cls, *ordered)) if made is None else made
        names = list(values)
        rows = zip(*values.values(), strict=True)
        return [cls(**dict(zip(names, row, strict=True))) for row in rows]

    return paths, plain, specs, build, width


@functools.cache
def _layout(cls: type) -> _Layout:
    paths, plain, specs, build, _ = _plan(cls)
    added = _added_fields(cls)

    def build_all(cols: list[list[Any]]) -> list[Any]:
        missing = len(paths) - len(cols)
        if 0 < missing <= len(added):
            # A block written before the record gained its last fields: they take their
            # defaults (a field is only ever added last, with one: events.py).
            n = len(cols[0]) if cols else 0
            cols = cols + [[default] * n for default in added[len(added) - missing :]]
        elif missing:
            raise ValueError(f"{cls.__name__}: {len(cols)} columns, not {len(paths)}")
        return build(cols, 0)

    names = (tuple(sys.intern(n) for n in p.split(".")) for p in paths)
    return _Layout(tuple(paths), tuple(plain), build_all, tuple(zip(names, specs, strict=True)))


def _added_fields(cls: type) -> list[Any]:
    """The defaults of ``cls``'s trailing plain fields that have one: what a block written
    before they were added lacks."""
    out: list[Any] = []
    for f in reversed(dataclasses.fields(cls)):
        if f.default is dataclasses.MISSING or _is_record(_hints(cls)[f.name]):
            break
        out.append(f.default)
    return out[::-1]


_INT = {int}


def _pack(column: list[Any]) -> list[Any]:
    """A column in the form that compresses best, by what all its values are: integers as
    deltas (``[1, [first, d...]]``, or ``[5, step, first, [d / step...]]`` when all deltas
    share a factor); lists as their lengths and their items as one column
    (``[2, lengths, items]``), text (str or None) of at most half as many distinct values
    as values as those values and each one's index (``[6, uniques, indices]``: xz then has a
    third less to read, and leaves a third less), lists of one length (pairs) as one column
    per position
    (``[3, k, columns]``), records of the same keys as one column per key
    (``[4, keys, columns]``); anything else as it is (``[0, values]``)."""
    if not column:
        return [0, column]
    if set(map(type, column)) == _INT:
        deltas = [b - a for a, b in itertools.pairwise(column)]
        step = math.gcd(*deltas) if deltas else 1
        if step > 1:  # a log's times are microseconds in nanoseconds: the zeros compress badly
            return [5, step, column[0], [d // step for d in deltas]]
        return [1, [column[0], *deltas]]
    if len(column) > 1 and all(v is None or type(v) is str for v in column):
        uniques = list(dict.fromkeys(column))
        if 2 * len(uniques) <= len(column):  # a model's name, a state: a handful of values
            index = {v: i for i, v in enumerate(uniques)}
            return [6, uniques, [index[v] for v in column]]
    if all(type(v) is list for v in column):
        k = len(column[0])
        if k and all(len(v) == k for v in column):
            return [3, k, [_pack([v[i] for v in column]) for i in range(k)]]
        items = [x for v in column for x in v]
        return [2, _pack([len(v) for v in column]), _pack(items)]
    if all(type(v) is dict for v in column):
        keys = list(column[0])
        if all(list(v) == keys for v in column):
            return [4, keys, [_pack([v[key] for v in column]) for key in keys]]
    return [0, column]


def _unpack(packed: list[Any]) -> list[Any]:
    flag = packed[0]
    if flag == 0:
        return list(packed[1])
    if flag == 1:
        return list(itertools.accumulate(packed[1]))
    if flag == 6:
        return list(map(packed[1].__getitem__, packed[2]))
    if flag == 5:
        step = packed[1]
        return list(itertools.accumulate(map(step.__mul__, packed[3]), initial=packed[2]))
    if flag == 2:
        lengths, items = _unpack(packed[1]), _unpack(packed[2])
        out, at = [], 0
        for n in lengths:
            out.append(items[at : at + n])
            at += n
        return out
    if flag == 3:
        return [list(row) for row in zip(*(_unpack(c) for c in packed[2]), strict=True)]
    if flag == 4:
        keys = packed[1]
        rows = zip(*(_unpack(c) for c in packed[2]), strict=True)
        return [dict(zip(keys, row, strict=True)) for row in rows]
    raise ValueError(f"unknown column form {flag!r}")


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


def _packed(column: list[Any]) -> bytes:
    """``_json(_pack(column))``: compiled (``_blockpack.c``) for the columns it writes, which
    are nearly all of a log's, in Python for the rest and where it was not built."""
    if _c_pack is not None:
        packed = _c_pack(column)
        if packed is not None:
            return packed
    return _json(_pack(column))


def _py_group(events: list[Any]) -> tuple[list[type], bytes, list[list[Any]]]:
    """Each type once in order of first appearance, the JSON of each event's index into
    them (their count when there is one), and each type's events: ``_blockpack.group``'s
    reference."""
    seq = list(map(type, events))
    present = list(dict.fromkeys(seq))
    order = list(map({t: i for i, t in enumerate(present)}.__getitem__, seq))
    groups = [
        events
        if len(present) == 1
        else list(itertools.compress(events, map(operator.is_, seq, itertools.repeat(t))))
        for t in present
    ]
    return present, _json(order if len(present) > 1 else len(order)), groups


def encode_block(events: Sequence[object], sources: Sequence[str] = ()) -> bytes:
    """The compressed block of ``events`` (any mix of the kinds :data:`KINDS` knows), with
    each one's source if they are not all the block's own (Triton's trace files).

    The body is ``{"k": kinds, "o": order, "c": {kind: [packed column, ...]}, "s": sources}``
    as ``json.dumps`` writes it, put together from each column's JSON."""
    group = _c_group if _c_group is not None else _py_group
    present, order, groups = group(events if type(events) is list else list(events))
    kinds = [t.__name__ for t in present]  # codec.kind_of
    body = [b'{"k":', _json(kinds), b',"o":', order]
    for n, (kind, records) in enumerate(zip(kinds, groups, strict=True)):
        columns = b",".join(_layout(KINDS[kind]).packed(records))
        body += [b',"c":{' if n == 0 else b",", _json(kind), b":[", columns, b"]"]
    body.append(b"}" if kinds else b',"c":{}')
    if sources:
        body += [b',"s":', _packed(list(sources))]
    body.append(b"}")
    return _compress(b"".join(body))


def _listed(column: list[Any] | bytes) -> list[Any]:
    """A column as a list: the sink's times and offsets come as native 64-bit ints (bytes)."""
    return memoryview(column).cast("q").tolist() if type(column) is bytes else column  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class ColumnBlock:
    """A log's block of records as a column sink (``collectors/logs/_hotpath.c``'s ``Sink``)
    cut it: what :func:`encode_block` would be given as records, already grouped by kind and
    in columns, so a bundle's ingest never makes the records (:meth:`Store.write_block`)."""

    kinds: list[type]
    """The records' types in order of first appearance."""
    order: bytes
    """The JSON of each record's index into ``kinds`` (their count when there is one kind)."""
    parts: list[tuple[list[Any] | bytes, ...] | list[Any]]
    """Per kind: a tuple of its columns (in :func:`_layout`'s order; times and offsets as
    native 64-bit ints, bytes, where every one of them is such an int) or a list of records."""
    span: tuple[int, int, int, int] | None
    """``(min at_ns, max at_ns, first offset, last offset)``, None where a time or offset is
    not a 64-bit int, the offsets go back, or one offset holds two records of a kind: such a
    block is stored record by record (:meth:`records`)."""
    count: int

    @classmethod
    def cut(cls, sink: Any, n: int) -> ColumnBlock:
        """The first ``n`` records (or all it holds, if fewer) off a column sink (its
        ``take``: ``collectors.logs.hotpath.ColumnSink``)."""
        n = min(n, len(sink))
        kinds, order, parts, span = sink.take(n)
        return cls(kinds, order, parts, span, n)

    def __len__(self) -> int:
        return self.count

    def of(self, types: Collection[type]) -> list[Any]:
        """The records of ``types`` among those kept as records."""
        return [
            e
            for t, part in zip(self.kinds, self.parts, strict=True)
            if t in types and type(part) is list
            for e in part
        ]

    def records(self) -> list[Any]:
        """The records themselves, in order (for the keyed path; an ingest's rare case)."""
        made = [
            iter(_layout(t).build(list(map(_listed, part))) if type(part) is tuple else part)
            for t, part in zip(self.kinds, self.parts, strict=True)
        ]
        order = json.loads(self.order)
        if isinstance(order, int):
            return list(made[0]) if made else []
        return [next(made[i]) for i in order]


def encode_columns(block: ColumnBlock) -> bytes:
    """:func:`encode_block` of ``block``'s records, byte for byte, from its columns."""
    body = [b'{"k":', _json([t.__name__ for t in block.kinds]), b',"o":', block.order]
    for n, (cls, part) in enumerate(zip(block.kinds, block.parts, strict=True)):
        layout = _layout(KINDS[cls.__name__])
        packed = layout.packed_columns(part) if isinstance(part, tuple) else layout.packed(part)
        body += [b',"c":{' if n == 0 else b",", _json(cls.__name__), b":[", b",".join(packed), b"]"]
    body.append(b"}" if block.kinds else b',"c":{}')
    body.append(b"}")
    return _compress(b"".join(body))


def _inflate(data: bytes) -> bytes:
    """zstd blocks (schema 8); xz ones (schema 6 and 7) and zlib ones (the first blocks
    written by schema 5) as well: a migrated store keeps its blocks as they were."""
    if data.startswith(_ZSTD_MAGIC):
        size = zstandard.frame_content_size(data)
        if not 0 <= size <= _MAX_BODY:  # -1: no size written, as our blocks always write
            raise ValueError(f"a zstd block of {size} bytes")
        return _codecs.decompressor.decompress(data)
    if data.startswith(_XZ_MAGIC):
        return lzma.decompress(data)
    return zlib.decompress(data)


def decode_block(
    data: bytes, kinds: Collection[str] | None = None, source: str = ""
) -> list[tuple[str, object]]:
    """``(source, event)`` of the block's events in the order they were written, only those
    of ``kinds`` if given; ``source`` for events the block holds no source of."""
    try:
        body = json.loads(_inflate(data).decode("utf-8", "surrogatepass"))
        names: list[str] = body["k"]
        order = body["o"]
        if isinstance(order, int):
            order = [0] * order
        built: list[list[object]] = []
        for kind in names:
            if kinds is not None and kind not in kinds:
                built.append([])
                continue
            cols = [_unpack(c) for c in body["c"][kind]]
            if len({len(c) for c in cols}) > 1:
                raise ValueError(f"{kind}: columns of different lengths")
            built.append(_layout(KINDS[kind]).build(cols))
        sources = _unpack(body["s"]) if "s" in body else None
    except (
        zlib.error,
        lzma.LZMAError,
        zstandard.ZstdError,
        ValueError,
        KeyError,
        TypeError,
        UnicodeDecodeError,
    ) as err:
        raise BlockError(f"not a store block: {err}") from None
    taken = [iter(b) for b in built]
    wanted = [kinds is None or k in kinds for k in names]
    if sources is None:
        if len(names) == 1:
            return [(source, e) for e in built[0]]
        return [(source, next(taken[i])) for i in order if wanted[i]]
    return [(src, next(taken[i])) for i, src in zip(order, sources, strict=True) if wanted[i]]


def _check() -> None:
    """Every kind flattens (fail at import, not on the first write of a new kind)."""
    for cls in KINDS.values():
        _layout(cls)


_check()
