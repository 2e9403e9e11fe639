"""Events to JSON and back, driven by the dataclasses' own type hints.

The store keeps each event's full record as JSON beside a few indexed columns, so adding a
field to an event needs no migration, and reading gives back the same frozen dataclass.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import json
import types
import typing
from typing import Any

from observability import events as ev

__all__ = ["KINDS", "decode", "encode", "kind_of"]

compiled: Any
"""``observability/store/_blockpack.c``, or None where it was not built (setup.py's
extensions are optional): each of its functions has a Python path the store takes instead.
The one import of it, for this module, ``blocks`` and ``sqlite``."""
try:
    from observability.store import _blockpack  # type: ignore[attr-defined]

    compiled = _blockpack
except ImportError:
    compiled = None

_c_records: typing.Callable[[type, tuple[str, ...], list[list[Any]]], list[Any] | None] | None
_c_records = compiled.records if compiled is not None else None  # else: constructors only

KINDS: dict[str, type] = {
    name: obj
    for name in ev.__all__
    if dataclasses.is_dataclass(obj := getattr(ev, name)) and isinstance(obj, type)
}


def kind_of(event: object) -> str:
    return type(event).__name__


_SCALARS = (str, int, float, bool, type(None))


@functools.cache
def _names(cls: Any) -> tuple[str, ...] | None:
    """A dataclass's field names (``None`` for any other type), looked up once per type:
    ``dataclasses.fields`` per value was most of the collector's time at line rate."""
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return None


_c_json: typing.Callable[[object], str | None] | None = None
if compiled is not None:
    # The records the compiled packer and JSON writer write as _plain's dicts of their fields
    compiled.named_records({cls: _names(cls) for cls in KINDS.values()})
    _c_json = compiled.record_json
_COMPACT = (",", ":")

_SCALAR_TYPES = frozenset(_SCALARS)
_SEQUENCES = frozenset((tuple, list))


def _plain(value: Any) -> Any:
    t = type(value)
    if t in _SCALAR_TYPES:  # the exact types first: most values, and a str enum is not one
        return value
    if t is tuple or t is list:
        # A shape: scalars only, copied at C speed; a call a scalar was most of storing a
        # trace file's spans.
        inner = set(map(type, value))
        if _SCALAR_TYPES.issuperset(inner):
            return list(value)
        # A span's (name, ns) stamps or (key, value) attributes: pairs of scalars, checked
        # and copied at C speed too (a call a pair was an eighth of a bundle's ingest).
        if _SEQUENCES.issuperset(inner) and _SCALAR_TYPES.issuperset(
            map(type, itertools.chain.from_iterable(value))
        ):
            return list(map(list, value))
        return [_plain(v) for v in value]
    if isinstance(value, _SCALARS) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    names = None if isinstance(value, type) else _names(value.__class__)
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    return value


def encode(event: object) -> str:
    """Compact JSON of an event (enums by value, tuples as arrays): written by
    ``_blockpack.record_json`` where it can (a record of the kinds :data:`KINDS` names, of
    plain values, tuples and such records), else by ``json.dumps``, the reference."""
    text = None if _c_json is None else _c_json(event)
    return (
        text
        if text is not None
        else json.dumps(_plain(event), separators=_COMPACT, ensure_ascii=False)
    )


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(ev))


def _identity(value: Any) -> Any:
    return value


@functools.cache
def _builder(tp: Any) -> typing.Callable[[Any], Any]:
    """A function that rebuilds values of one type hint, made once per hint: walking the
    hints per value (``get_origin`` and friends) was most of a decode's time."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        present = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = _builder(present[0]) if len(present) == 1 else _identity
        return lambda v: None if v is None else inner(v)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _builder(args[0])
            if item is _identity:
                return lambda v: None if v is None else tuple(v)
            if isinstance(args[0], type) and _direct(args[0]):
                return _many(args[0], item)
            return lambda v: None if v is None else tuple(map(item, v))
        items = [_builder(a) for a in args]
        if all(b is _identity for b in items):  # pairs of plain values: most span attributes
            n = len(items)
            return lambda v: None if v is None else tuple(v[:n])
        return lambda v: None if v is None else tuple(b(x) for b, x in zip(items, v, strict=False))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda v: None if v is None else tp(v)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        fields = {k: _builder(h) for k, h in _hints(tp).items()}
        plain = {k for k, b in fields.items() if b is _identity}

        def build(v: Any) -> Any:
            if v is None:
                return None
            return tp(**{k: x if k in plain else fields[k](x) for k, x in v.items() if k in fields})

        return build
    return _identity


def _direct(cls: type) -> bool:
    """Whether ``cls``'s records may be made by writing their slots (``_blockpack.records``):
    a slotted dataclass whose ``__init__`` is the one dataclasses wrote, storing each field
    and nothing more (no ``__post_init__``, no ``__new__`` of its own)."""
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    return (
        dataclasses.is_dataclass(cls)
        and "__slots__" in cls.__dict__
        and cls.__new__ is object.__new__
        and not hasattr(cls, "__post_init__")
        and code is not None
        and code.co_filename == "<string>"  # dataclasses' generated source
        and all(f.init for f in dataclasses.fields(cls))
    )


def _many(tp: type, item: typing.Callable[[Any], Any]) -> typing.Callable[[Any], Any]:
    """A builder of a tuple of ``tp`` records (a scrape's samples) from their stored dicts:
    a column per field, the records made by writing their slots. One ``item`` call a record
    (a dict comprehension and a frozen ``__init__``) was most of reading a store's metrics.
    A dict that lacks a field (written before the field was added) is built by ``item``."""
    names = tuple(f.name for f in dataclasses.fields(tp))
    hints = _hints(tp)
    converters = [(j, _builder(hints[n])) for j, n in enumerate(names)]
    converters = [(j, b) for j, b in converters if b is not _identity]

    def build(v: Any) -> Any:
        if v is None:
            return None
        made = None
        if _c_records is not None:
            try:
                cols = [[d[n] for d in v] for n in names]
            except (KeyError, TypeError):  # a field missing, or not a dict: one by one
                cols = None
            if cols is not None:
                for j, b in converters:
                    cols[j] = list(map(b, cols[j]))
                made = _c_records(tp, names, cols)
        return tuple(map(item, v)) if made is None else tuple(made)

    return build


def _build(tp: Any, value: Any) -> Any:
    return _builder(tp)(value)


def decode(kind: str, body: str) -> object:
    """The event of ``kind`` from :func:`encode`'s JSON; unknown kinds raise ``KeyError``."""
    return _build(KINDS[kind], json.loads(body))
