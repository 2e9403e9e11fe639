"""Parse one Triton trace-mode file (``--trace-config triton,file=F``) into ``TraceSpan`` s.

Why this shape: Triton writes a trace as several JSON records sharing an ``id`` — one
header (``model_name``, ``model_version``, ``request_id``, ``parent_id`` for a BLS or
ensemble child) and one record per timestamp (``{"id":1,"timestamps":[{"name":...,"ns":...}]}``),
the frontend's ``GRPC_*``/``HTTP_*`` stamps included. Children complete, and are written,
before their parent. Records are merged per id, in file order, into one span each.

A file cut short (the server was killed mid-write, or it is being written right now) is
not a reason to lose the records before the cut: the lenient parser decodes the array
element by element and reports ``truncated``. Garbage in the middle of a file is an error
in strict mode and ends the file (records before it kept, the problem recorded) in lenient
mode. ``TENSORS``-level records (``activity``/``tensor``) carry tensor contents, which our
events never hold: they are skipped and counted, never decoded into a span.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from collectors.compiled import extension
from observability.events import TraceSpan

__all__ = [
    "ParsedTraceFile",
    "TraceParseError",
    "parse_trace_file",
    "parse_trace_file_lenient",
    "spans_from_records",
]

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"
_EXCERPT = 60


class TraceParseError(ValueError):
    """A trace file that is not Triton's trace format; the message quotes the bad part."""

    def __init__(self, message: str, source: str = "", position: int | None = None) -> None:
        where = f"{source}: " if source else ""
        at = f" at char {position}" if position is not None else ""
        super().__init__(f"{where}{message}{at}")
        self.source = source
        self.position = position


@dataclass(frozen=True, slots=True)
class ParsedTraceFile:
    """What a lenient parse recovered from one file, and what it had to leave out."""

    source: str
    spans: tuple[TraceSpan, ...]
    truncated: bool = False
    """The array ended before its ``]``: the file was cut (or is still being written)."""
    skipped_records: int = 0
    """Records that were not turned into a span: tensor records and malformed records."""
    problems: tuple[str, ...] = field(default=())
    maybe_incomplete: int | None = None
    """When truncated: the id of the last record before the cut, whose span may lack
    records that came after it (a trace's records are written together)."""


def _excerpt(text: str, pos: int) -> str:
    return repr(text[pos : pos + _EXCERPT])


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def _iter_array(text: str, source: str) -> Iterator[tuple[Any, int]]:
    """Yield ``(element, position)`` of a JSON array one element at a time.

    Raises ``TraceParseError`` for garbage, and ``_Truncated`` when the text ends inside
    the array (after yielding every complete element before the cut).
    """
    pos = _skip_ws(text, 0)
    if pos >= len(text):
        raise _Truncated(pos)
    if text[pos] != "[":
        raise TraceParseError(f"expected a JSON array, found {_excerpt(text, pos)}", source, pos)
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        rest = _skip_ws(text, pos + 1)
        if rest < len(text):  # as after a non-empty array
            raise TraceParseError(f"text after the array: {_excerpt(text, rest)}", source, rest)
        return
    while True:
        if pos >= len(text):
            raise _Truncated(pos)
        try:
            element, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as err:  # also 4300+ digits, too deep to decode
            # A cut inside the last element looks like an error at (or near) the end.
            if _cut_at_end(text, pos):
                raise _Truncated(pos) from None
            at = err.pos if isinstance(err, json.JSONDecodeError) else pos
            why = err.msg if isinstance(err, json.JSONDecodeError) else str(err)[:80]
            raise TraceParseError(
                f"invalid JSON record ({why}) near {_excerpt(text, at)}", source, at
            ) from None
        yield element, pos
        pos = _skip_ws(text, end)
        if pos >= len(text):
            raise _Truncated(pos)
        if text[pos] == "]":
            rest = _skip_ws(text, pos + 1)
            if rest < len(text):
                raise TraceParseError(f"text after the array: {_excerpt(text, rest)}", source, rest)
            return
        if text[pos] != ",":
            raise TraceParseError(
                f"expected ',' or ']' between records, found {_excerpt(text, pos)}", source, pos
            )
        pos = _skip_ws(text, pos + 1)


def _cut_at_end(text: str, pos: int) -> bool:
    """True when ``text[pos:]`` is a prefix of a JSON value: decoding fails only at its end.

    Checked by closing the open brackets and strings: if the completed text decodes,
    nothing in the tail was wrong except that it stopped.
    """
    tail = text[pos:]
    stack: list[str] = []
    in_string = escape = False
    hex_left = escape_at = 0
    for i, ch in enumerate(tail):
        if in_string:
            if hex_left:
                hex_left -= 1
            elif escape:
                escape = False
                hex_left = 4 if ch == "u" else 0
            elif ch == "\\":
                escape, escape_at = True, i
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and (not stack or stack.pop() != ch):
            return False
    if not stack and not in_string:
        return False
    # a cut that split an escape ("\\" or "\\u00") drops the escape's start
    head = tail[:escape_at] if in_string and (escape or hex_left) else tail.rstrip()
    heads = [head]
    if not in_string:
        head = heads[0] = head.rstrip(",")
        # a cut inside a literal ("nu" of null): the completed literal is a candidate too
        heads += [head + w[k:] for w in ("true", "false", "null") for k in range(1, len(w))
                  if head.endswith(w[:k])]  # fmt: skip
    quote = '"' if in_string else ""
    closing = "".join(reversed(stack))
    for candidate in heads:
        for suffix in ("", ":0", "0", "null", '"":0'):
            try:
                json.loads(candidate + quote + suffix + closing)
            except (ValueError, RecursionError):
                continue
            return True
    return False


class _Truncated(Exception):
    def __init__(self, position: int) -> None:
        self.position = position


@dataclass
class _Builder:
    trace_id: int
    parent_id: int | None = None
    model: str = ""
    version: str = ""
    request_id: str = ""
    timestamps: list[tuple[str, int]] = field(default_factory=list)

    def span(self, source: str) -> TraceSpan:
        return TraceSpan(
            trace_id=self.trace_id,
            parent_id=self.parent_id,
            model=self.model,
            version=self.version,
            request_id=self.request_id,
            timestamps=tuple(self.timestamps),
            source=source,
        )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> str:
    """JSON's ``\\ud800`` escapes decode to lone surrogates, which the store cannot encode
    as UTF-8: each becomes U+FFFD, as an undecodable byte would."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


_OLD_STAGES = {
    "request handler start": "REQUEST_START",
    "request handler end": "REQUEST_END",
}
"""Releases before 20.x named the stages in lower case with spaces (``queue start``); all but
these two are today's names so spelled."""


def _stage(name: str) -> str:
    """A timestamp's stage under today's name: the timeline and the detectors know only it."""
    if not name.islower():
        return name
    return _OLD_STAGES.get(name) or name.upper().replace(" ", "_")


def _stage_named(name: str) -> str:
    return _stage(_text(name))


_Scan = Callable[[str, Callable[[str], str]], "list[tuple[Any, ...]] | None"]


_compiled = extension("traces._tracescan")
_SCAN = None if _compiled is None else cast(_Scan, _compiled.scan)
"""``_tracescan.scan``, or None (not built, or ``TRITON_OBS_PURE_PARSER=1``)."""


def _scanned(text: str, source: str) -> tuple[TraceSpan, ...] | None:
    """The spans of a file in the shape Triton writes, read and merged by the compiled scan
    (a dict a record and ``_apply`` a record were half of storing a trace file's spans);
    None for any other file, which the Python path reads: the reference."""
    rows = None if _SCAN is None else _SCAN(text, _stage_named)
    if rows is None:
        return None
    return tuple(
        TraceSpan(trace_id, parent, model, version, request_id, stamps, source)
        for trace_id, parent, model, version, request_id, stamps in rows
    )


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer, got {value!r:.80}")
    if not -(2**63) <= value < 2**63:  # what a store (SQLite's INTEGER) can hold
        raise ValueError(f"{what} must fit in 64 bits, got {len(str(abs(value)))} digits")
    return value


def _apply(builders: dict[int, _Builder], record: Any) -> bool:
    """Merge one record into its span; False for a record that holds no span data."""
    if not isinstance(record, dict):
        raise ValueError(f"a trace record must be an object, got {json.dumps(record)[:80]}")
    trace_id = _int(record.get("id"), "'id'")
    if "activity" in record or "tensor" in record:
        return False
    has_header = "model_name" in record
    has_stamps = "timestamps" in record
    if not has_header and not has_stamps:
        raise ValueError(f"record has neither model_name nor timestamps: {json.dumps(record)[:80]}")
    stamps: list[tuple[str, int]] = []
    if has_stamps:
        raw = record["timestamps"]
        if not isinstance(raw, list):
            raise ValueError(f"'timestamps' must be a list, got {raw!r:.80}")
        for item in raw:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ValueError(f"a timestamp needs a name and ns, got {item!r:.80}")
            ns = _int(item.get("ns"), "timestamp 'ns'")
            if ns:  # 0: a stage never reached (2.51's HTTP_SEND_START of a generate_stream)
                stamps.append((_stage(_text(item["name"])), ns))
    header: tuple[str, str, str, int | None] | None = None
    if has_header:
        model = record["model_name"]
        if not isinstance(model, str):
            raise ValueError(f"'model_name' must be a string, got {model!r:.80}")
        version = record.get("model_version", "")
        request_id = record.get("request_id", "")
        parent = record.get("parent_id")
        header = (
            _text(model),
            _text(str(version)),
            _text(str(request_id)),
            None if parent is None else _int(parent, "'parent_id'"),
        )
    builder = builders.get(trace_id)
    if builder is None:
        builder = builders[trace_id] = _Builder(trace_id)
    if header is not None:
        builder.model, builder.version, builder.request_id, builder.parent_id = header
    builder.timestamps.extend(stamps)
    return True


def spans_from_records(records: list[Any], source: str) -> list[TraceSpan]:
    """Merge already-decoded records (strict): the first bad record raises."""
    builders: dict[int, _Builder] = {}
    for index, record in enumerate(records):
        try:
            _apply(builders, record)
        except (ValueError, RecursionError) as err:  # too deep to print in the message
            raise TraceParseError(f"record {index}: {err}", source) from None
    return [b.span(source) for b in builders.values()]


def parse_trace_file(text: str, source: str = "") -> list[TraceSpan]:
    """Strict: every record must be well formed and the array complete, or it raises."""
    scanned = _scanned(text, source)
    if scanned is not None:
        return list(scanned)
    try:
        records = json.loads(text)
    except json.JSONDecodeError as err:
        raise TraceParseError(
            f"not valid JSON ({err.msg}) near {_excerpt(text, err.pos)}", source, err.pos
        ) from None
    except RecursionError:  # a level deeper than one record, which lenient parsing decodes
        raise TraceParseError("not valid JSON (nested too deeply)", source) from None
    except ValueError as err:  # an integer of 4300+ digits
        raise TraceParseError(f"not valid JSON ({str(err)[:80]})", source) from None
    if not isinstance(records, list):
        raise TraceParseError(f"expected a JSON array, found {_excerpt(text, 0)}", source)
    return spans_from_records(records, source)


def parse_trace_file_lenient(text: str, source: str = "") -> ParsedTraceFile:
    """Keep every complete, well-formed record; report truncation and bad records.

    An empty (or whitespace-only) file counts as truncated: Triton creates the file
    before it writes the array.

    A whole, well-formed file (nearly every one) is decoded in one ``json.loads``; anything
    else is read element by element (:func:`_lenient`), which words each problem with its
    position. Both give the same spans. A file in the shape Triton writes is read by the
    compiled scan (:func:`_scanned`), the same spans again.
    """
    scanned = _scanned(text, source)
    if scanned is not None:
        return ParsedTraceFile(source=source, spans=scanned)
    try:
        records = json.loads(text)
    except (ValueError, RecursionError):
        records = None
    if isinstance(records, list):
        builders: dict[int, _Builder] = {}
        skipped = 0
        try:
            for record in records:
                if not _apply(builders, record):
                    skipped += 1
        except (ValueError, RecursionError):
            pass  # a bad record: its problem is told by the reading below
        else:
            spans = tuple(b.span(source) for b in builders.values())
            return ParsedTraceFile(source=source, spans=spans, skipped_records=skipped)
    return _lenient(text, source)


def _lenient(text: str, source: str) -> ParsedTraceFile:
    """The element-by-element reading of :func:`parse_trace_file_lenient`."""
    builders: dict[int, _Builder] = {}
    problems: list[str] = []
    skipped = 0
    truncated = False
    last_id: int | None = None
    try:
        for index, (record, position) in enumerate(_iter_array(text, source)):
            if isinstance(record, dict) and isinstance(record.get("id"), int):
                last_id = record["id"]
            try:
                if not _apply(builders, record):
                    skipped += 1
            except (ValueError, RecursionError) as err:  # too deep to print in the message
                skipped += 1
                problems.append(f"record {index} at char {position}: {err}")
    except _Truncated as cut:
        truncated = True
        problems.append(f"file ends inside the array at char {cut.position} (truncated)")
    except TraceParseError as err:
        problems.append(str(err))
    return ParsedTraceFile(
        source=source,
        spans=tuple(b.span(source) for b in builders.values()),
        truncated=truncated,
        skipped_records=skipped,
        problems=tuple(problems),
        maybe_incomplete=last_id if truncated else None,
    )
