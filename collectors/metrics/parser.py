"""Parse Triton's /metrics page (Prometheus text exposition format 0.0.4).

Why hand-written: ``prometheus_client.parser`` scans every line character by character
in Python and renames Triton's suffix-less counters to ``<name>_total``. A live view
scrapes a 100-model page every few seconds. Here the page is cut at its comment lines
into runs of sample lines (one family each on Triton's pages), and a run is split,
looked up and converted with C-level ``str``/``map`` calls, without a Python loop per
line. Anything unusual in a run (a timestamp, a tab, a bad value, another family) sends
that run to the line-by-line slow path, which is also what names the bad line.

Pure in what it returns; fast because of two shared caches that never change a result:
decoded label blocks, and ``name{labels}`` heads seen on earlier pages (a scraper sees
the same series every time, as Prometheus' scrape cache exploits). Both hold only
immutable values keyed by their exact text and are emptied past ``_CACHE_LIMIT``.

Malformed input: two modes over one implementation.

* strict (``parse_metrics``) raises :class:`MetricsParseError` at the first bad line,
  quoting the line and its 1-based number: right for tests and for recorded fixtures.
* lenient (``parse_metrics_lenient``) skips each bad line, records a
  :class:`ParseProblem` and keeps everything else: right for a live scrape, because
  Triton itself can emit a broken page (a python-backend ``MetricFamily`` whose
  description holds a newline is written unescaped, splitting its ``# HELP`` line).

Rules that are stricter than ``prometheus_client`` (it accepts all of these silently):
a second ``# HELP``/``# TYPE`` for one family, ``# TYPE`` after that family's samples, an
unknown type, a family that reappears after another began, an unknown escape in a
label value, a non-integer timestamp, text after the timestamp, whitespace other than
spaces and tabs between label pairs (a CR). In lenient mode a
reappearing family is reported and then kept as a separate family, so no sample is lost.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Sequence, Sized
from dataclasses import dataclass, fields
from functools import lru_cache
from itertools import repeat
from typing import cast

from observability.events import Labels, MetricFamily, MetricSample, MetricType

__all__ = [
    "MetricsParseError",
    "ParseProblem",
    "ParsedPage",
    "iter_metric_families",
    "parse_metrics",
    "parse_metrics_lenient",
]

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_HELP_ESCAPE = re.compile(r"\\[\\n]")
_TYPES: dict[str, MetricType] = {t.value: t for t in MetricType}
_SUFFIXES: dict[MetricType, tuple[str, ...]] = {
    MetricType.COUNTER: ("",),
    MetricType.GAUGE: ("",),
    MetricType.UNTYPED: ("",),
    MetricType.SUMMARY: ("", "_sum", "_count"),
    MetricType.HISTOGRAM: ("_bucket", "_sum", "_count"),
}
_SPACE = repeat(" ")
_BRACE = repeat("{")
_new = object.__new__
# Frozen dataclasses pay ~1 us per instance in ``__init__``; writing the slots through
# their descriptors is the same object at a third of the cost. Only fast_chunk does this.
if tuple(f.name for f in fields(MetricSample)) != (
    "name",
    "labels",
    "value",
    "family",
    "timestamp_ms",
):  # pragma: no cover - a guard for whoever changes observability/events.py
    raise RuntimeError("MetricSample changed: update the slot writes in _Parser.fast_chunk")
_slots = vars(MetricSample)  # the slot descriptors (typed Any: mypy sees only the fields)
_set_name = _slots["name"].__set__
_set_labels = _slots["labels"].__set__
_set_value = _slots["value"].__set__
_set_family = _slots["family"].__set__
_set_timestamp = _slots["timestamp_ms"].__set__
# Optional C extension doing the same float() calls and slot writes without the
# interpreter in between (identical results; see _fastmetrics.c). ACCELERATED says which.
try:
    from collectors.metrics import _fastmetrics  # type: ignore[attr-defined]

    _fastmetrics.setup(MetricSample)
    _build = _fastmetrics.build
except (ImportError, TypeError):  # not built (no compiler), or an unexpected class layout
    _build = None
ACCELERATED: bool = _build is not None
# Shared by every parse (see the module docstring): exact text -> immutable decoded value.
_CACHE_LIMIT = 200_000
_LABEL_CACHE: dict[str, Labels] = {"": ()}
_HEAD_CACHE: dict[str, Labels] = {"": ()}
"""The text after ``{`` up to and including ``}``, as split out by ``fast_chunk``."""
_LABEL_NAMES_OK: set[str] = set()
_SERIES_NAME: dict[str, str] = {}
"""A sample line's text before its value (``name{labels}``) to its name..."""
_SERIES_LABELS: dict[str, Labels] = {}
"""...and to its decoded labels (two dicts: two C lookups beat one lookup and an unzip)."""
_LABEL_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class MetricsParseError(ValueError):
    """A line of a metrics page that cannot be read; quotes the line and its number."""

    def __init__(self, line_number: int, line: str, reason: str) -> None:
        self.line_number = line_number
        self.line = line
        self.reason = reason
        super().__init__(f"line {line_number}: {reason}: {line[:200]!r}")


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """A line that lenient parsing skipped (or, for a reappearing family, kept)."""

    line_number: int
    line: str
    reason: str


@dataclass(frozen=True, slots=True)
class ParsedPage:
    families: tuple[MetricFamily, ...]
    problems: tuple[ParseProblem, ...]


class _BadLine(Exception):
    """Internal: carries a reason up to the line loop, which knows the line number."""


def parse_metrics(text: str) -> list[MetricFamily]:
    """Strict: every family on the page, or :class:`MetricsParseError`."""
    return list(iter_metric_families(text))


def parse_metrics_lenient(text: str) -> ParsedPage:
    """Skip bad lines instead of raising; each one is listed in ``problems``."""
    problems: list[ParseProblem] = []
    families = tuple(iter_metric_families(text, problems))
    return ParsedPage(families, tuple(problems))


def iter_metric_families(
    text: str, problems: list[ParseProblem] | None = None
) -> Iterator[MetricFamily]:
    """Yield families in page order, each as soon as the next one begins.

    ``problems`` selects the mode: ``None`` is strict (raise), a list is lenient (append).
    """
    parser = _Parser(problems)
    body = text[:-1] if text.endswith("\n") else text
    size = len(body)
    number = 1  # line number of body[pos]
    pos = 0
    while pos < size:
        if body.startswith("#", pos):  # Triton's HELP and TYPE lines; the rest of the page
            end = body.find("\n", pos)  # is runs of sample lines between them
            if end < 0:
                end = size
            parser.comment(number, body[pos:end])
            number += 1
        else:
            end = body.find("\n#", pos)
            if end < 0:
                end = size
            chunk = body[pos:end]
            if not parser.fast_chunk(chunk):
                parser.slow_chunk(number, chunk)
            number += chunk.count("\n") + 1
        pos = end + 1
        if parser.done:
            yield from parser.take_done()
    parser.finish()
    yield from parser.take_done()


class _Parser:
    """Family state machine; lines arrive one by one, or a run of samples at once."""

    def __init__(self, problems: list[ParseProblem] | None) -> None:
        self.problems = problems
        self.done: list[MetricFamily] = []
        caches: tuple[Sized, ...] = (_SERIES_NAME, _HEAD_CACHE, _LABEL_CACHE, _LABEL_NAMES_OK)
        if max(map(len, caches)) > _CACHE_LIMIT:
            _clear_caches()
        self.name_ok: set[str] = set()
        self.seen: set[str] = set()
        self.name: str | None = None
        self.type = MetricType.UNTYPED
        self.help = ""
        self.samples: list[MetricSample] | tuple[MetricSample, ...] = []
        self.allowed: frozenset[str] = frozenset()
        self.typed = False
        self.helped = False

    def bad(self, number: int, line: str, reason: str) -> None:
        if self.problems is None:
            raise MetricsParseError(number, line, reason)
        self.problems.append(ParseProblem(number, line, reason))

    def take_done(self) -> list[MetricFamily]:
        done, self.done = self.done, []
        return done

    def finish(self) -> None:
        if self.name is not None:
            self.done.append(MetricFamily(self.name, self.type, self.help, tuple(self.samples)))
        self.name = None

    def begin(self, number: int, line: str, name: str) -> None:
        self.finish()
        if name in self.seen:
            self.bad(number, line, f"family {name!r} appears twice on the page")
        self.seen.add(name)
        self.name, self.type, self.help, self.samples = name, MetricType.UNTYPED, "", []
        self.allowed, self.typed, self.helped = _allowed(name, MetricType.UNTYPED), False, False

    def comment(self, number: int, raw: str) -> None:
        parts = raw.strip().split(None, 3)
        if len(parts) < 3 or parts[0] != "#" or parts[1] not in ("HELP", "TYPE"):
            return  # a plain comment
        name = parts[2]
        if name not in self.name_ok:
            if not _METRIC_NAME.match(name):
                self.bad(number, raw, f"invalid metric name {name!r}")
                return
            self.name_ok.add(name)
        if parts[1] == "TYPE":
            mtype = _TYPES.get(parts[3]) if len(parts) == 4 else None
            if mtype is None:
                reason = (
                    f"unknown metric type {parts[3]!r}"
                    if len(parts) == 4
                    else "TYPE line without a type"
                )
                self.bad(number, raw, reason)
            elif name != self.name:
                self.begin(number, raw, name)
                self.type, self.typed, self.allowed = mtype, True, _allowed(name, mtype)
            elif self.typed:
                self.bad(number, raw, f"second TYPE line for {name!r}")
            elif self.samples:
                self.bad(number, raw, f"TYPE line for {name!r} after its samples")
            else:
                self.type, self.typed, self.allowed = mtype, True, _allowed(name, mtype)
            return
        doc = parts[3].rstrip() if len(parts) == 4 else ""
        if "\\" in doc:
            doc = _HELP_ESCAPE.sub(_help_unescape, doc)
        if name != self.name:
            self.begin(number, raw, name)
        elif self.helped:
            self.bad(number, raw, f"second HELP line for {name!r}")
            return
        self.help, self.helped = doc, True

    def fast_chunk(self, chunk: str) -> bool:
        """Take a run of plain ``name{labels} value`` lines of the current family at C speed.

        Returns False, having changed nothing, for anything else (tabs, CR, timestamps,
        blank lines, another family, a bad value or label set): the slow path then reads
        the run line by line and reports the exact line.
        """
        if self.name is None or "\t" in chunk or "\r" in chunk:
            return False
        lines = chunk.split("\n")
        count = len(lines)
        heads: Sequence[str]
        value_tokens: Sequence[str]
        if chunk.count(" ") == count and all(map(str.__contains__, lines, _SPACE)):
            # One space on every line, so one split of the whole run cannot be shifted by
            # a line with a missing or extra field: heads and values alternate.
            tokens = chunk.replace("\n", " ").split(" ")
            heads, value_tokens = tokens[0::2], tokens[1::2]
        else:
            # Spaces inside label values: the value is after the last space of each line.
            # A timestamp or a stray space leaves a head whose label text is rejected below.
            heads, spaces, value_tokens = zip(*map(str.rpartition, lines, _SPACE), strict=True)
            if spaces.count(" ") != count:
                return False
        # A series seen on an earlier page (the usual case for a scraper): two C lookups.
        try:
            names = list(map(_SERIES_NAME.__getitem__, heads))
            labels = list(map(_SERIES_LABELS.__getitem__, heads))
        except KeyError:
            split = self.split_heads(heads)
            if split is None:
                return False
            names, labels = split
        if not self.allowed.issuperset(names):
            return False
        joined = " ".join(value_tokens)
        if "_" in joined or not joined.isascii():
            return False
        if _build is not None:
            built = _build(names, labels, value_tokens, self.name)
            if built is None:
                return False
            self.samples = [*self.samples, *built] if self.samples else built
            return True
        made = tuple(map(_new, repeat(MetricSample, count)))
        try:
            deque(map(_set_value, made, map(float, value_tokens)), 0)
        except ValueError:
            return False  # nothing is kept: ``made`` is dropped
        deque(map(_set_name, made, names), 0)
        deque(map(_set_labels, made, labels), 0)
        deque(map(_set_family, made, repeat(self.name, count)), 0)
        deque(map(_set_timestamp, made, repeat(None, count)), 0)
        # A family is usually one run: keep its tuple, which finish() then takes as is.
        self.samples = [*self.samples, *made] if self.samples else made
        return True

    @staticmethod
    def split_heads(heads: Sequence[str]) -> tuple[list[str], list[Labels]] | None:
        """``name{labels}`` heads to names and decoded labels; None if one is not valid."""
        names, _, rests = zip(*map(str.partition, heads, _BRACE), strict=True)
        labels: list[Labels | None] = list(map(_HEAD_CACHE.get, rests))
        for i, rest in enumerate(rests):
            if labels[i] is None:
                if rest[-1:] != "}":
                    return None
                try:
                    labels[i] = _HEAD_CACHE[rest] = _labels_of(rest[:-1])
                except _BadLine:
                    return None
        for name in set(names):
            if not _METRIC_NAME.match(name):
                return None
        decoded = cast("list[Labels]", labels)  # every None was filled in above
        _SERIES_NAME.update(zip(heads, names, strict=True))
        _SERIES_LABELS.update(zip(heads, decoded, strict=True))
        return list(names), decoded

    def slow_chunk(self, number: int, chunk: str) -> None:
        for offset, raw in enumerate(chunk.split("\n")):
            line = raw.strip()
            if not line:
                continue
            if line[0] == "#":
                self.comment(number + offset, raw)
            else:
                self.sample_line(number + offset, raw)

    def sample_line(self, number: int, raw: str) -> None:
        # Parse the whole line before touching the family state, so a bad line never
        # ends or corrupts the family it sits in.
        line = raw.strip()
        try:
            brace = line.find("{")
            if brace < 0:
                parts = line.split()
                name = parts[0]
                labels: Labels = ()
                rest = parts[1:]
            else:
                name = line[:brace].rstrip()
                close = line.rfind("}")
                if close < brace:
                    raise _BadLine("label set is not closed with '}'")
                block = line[brace + 1 : close]
                labels = _labels_of(block)
                rest = line[close + 1 :].split()
            if name not in self.name_ok:
                if not name:
                    raise _BadLine("missing metric name")
                if not _METRIC_NAME.match(name):
                    raise _BadLine(f"invalid metric name {name!r}")
                self.name_ok.add(name)
            if not rest:
                raise _BadLine("missing value")
            value = _parse_value(rest[0])
            timestamp_ms = None
            if len(rest) > 1:
                if len(rest) > 2:
                    raise _BadLine("unexpected text after the timestamp")
                timestamp_ms = _parse_timestamp(rest[1])
        except _BadLine as exc:
            self.bad(number, raw, str(exc))
            return
        if name not in self.allowed:
            if name == self.name:
                self.bad(number, raw, f"sample {name!r} is not valid in a {self.type.value} family")
                return
            self.begin(number, raw, name)
        family = self.name or name
        sample = MetricSample(name, labels, value, family, timestamp_ms)
        if isinstance(self.samples, tuple):
            self.samples = [*self.samples, sample]
        else:
            self.samples.append(sample)


def _clear_caches() -> None:
    """Forget every cached series (also lets a benchmark measure a never-seen page)."""
    _SERIES_NAME.clear()
    _SERIES_LABELS.clear()
    _HEAD_CACHE.clear()
    _HEAD_CACHE[""] = ()
    _LABEL_CACHE.clear()
    _LABEL_CACHE[""] = ()
    _LABEL_NAMES_OK.clear()


def _labels_of(block: str) -> Labels:
    """Decode a label block (no braces), reusing the decoded block it extends.

    Triton's blocks grow by one label per family (``model,version`` then ``...,reason``,
    ``...,quantile`` or ``...,le``), so decoding only the last pair and looking the
    prefix up keeps a 100-model page cheap. Blocks with backslashes, spaces or a comma
    inside a value go to ``_parse_labels``, which also gives the error for a bad block.
    """
    cached = _LABEL_CACHE.get(block)
    if cached is not None:
        return cached
    result: Labels | None = None
    if "\\" not in block and " " not in block:
        prefix, _, last = block.rpartition(",")
        lname, eq, quoted = last.partition('="')
        if eq and quoted[-1:] == '"' and '"' not in quoted[:-1] and prefix[-1:] in ("", '"'):
            if lname not in _LABEL_NAMES_OK and _LABEL_NAME.match(lname):
                _LABEL_NAMES_OK.add(lname)
            if lname in _LABEL_NAMES_OK:
                head = _LABEL_CACHE.get(prefix)
                if head is None:
                    try:
                        head = _labels_of(prefix)
                    except _BadLine:
                        head = None  # e.g. a comma inside a value: the full parser judges
                if head is not None:
                    for key, _value in head:
                        if key == lname:
                            break
                    else:
                        result = (*head, (lname, quoted[:-1]))
    if result is None:
        result = _parse_labels(block)
    _LABEL_CACHE[block] = result
    return result


@lru_cache(maxsize=4096)
def _allowed(name: str, mtype: MetricType) -> frozenset[str]:
    return frozenset(name + suffix for suffix in _SUFFIXES[mtype])


def _help_unescape(match: re.Match[str]) -> str:
    return "\\" if match.group(0) == "\\\\" else "\n"


def _parse_value(token: str) -> float:
    # float() alone would also take "1_000" and non-ASCII digits, which no exporter writes.
    if "_" in token or not token.isascii():
        raise _BadLine(f"invalid value {token!r}")
    try:
        return float(token)
    except ValueError:
        raise _BadLine(f"invalid value {token!r}") from None


def _parse_timestamp(token: str) -> int:
    if not token.isascii() or "_" in token:
        raise _BadLine(f"invalid timestamp {token!r}")
    try:
        return int(token)
    except ValueError:
        raise _BadLine(f"invalid timestamp {token!r} (want integer milliseconds)") from None


def _parse_labels(block: str) -> Labels:
    """Decode ``a="x",b="y"`` (the text between the braces); cached by the caller."""
    pairs: list[tuple[str, str]] = []
    names: set[str] = set()
    slow = "\\" in block
    end = len(block)
    i = 0
    while True:
        while i < end and block[i] in " \t":
            i += 1
        if i == end:
            break
        eq = block.find("=", i)
        if eq < 0:
            raise _BadLine(f"label without '=' in {{{block}}}")
        lname = block[i:eq].strip()
        if not _LABEL_NAME.match(lname):
            raise _BadLine(f"invalid label name {lname!r}")
        if lname in names:
            raise _BadLine(f"duplicate label {lname!r}")
        names.add(lname)
        q = eq + 1
        while q < end and block[q] in " \t":
            q += 1
        if q == end or block[q] != '"':
            raise _BadLine(f"value of label {lname!r} is not quoted")
        if slow:
            value, close = _scan_escaped(block, q + 1, lname)
        else:
            close = block.find('"', q + 1)
            if close < 0:
                raise _BadLine(f"unterminated quote in value of label {lname!r}")
            value = block[q + 1 : close]
        pairs.append((lname, value))
        i = close + 1
        while i < end and block[i] in " \t":
            i += 1
        if i == end:
            break
        if block[i] != ",":
            raise _BadLine(f"expected ',' or '}}' after label {lname!r}")
        i += 1
    return tuple(pairs)


def _scan_escaped(block: str, start: int, lname: str) -> tuple[str, int]:
    """Slow path: decode a quoted value holding backslashes; return it and its close quote."""
    out: list[str] = []
    i = start
    end = len(block)
    while i < end:
        c = block[i]
        if c == '"':
            return "".join(out), i
        if c == "\\":
            if i + 1 == end:
                break
            decoded = _LABEL_ESCAPES.get(block[i + 1])
            if decoded is None:
                raise _BadLine(f"invalid escape '\\{block[i + 1]}' in value of label {lname!r}")
            out.append(decoded)
            i += 2
            continue
        out.append(c)
        i += 1
    raise _BadLine(f"unterminated quote in value of label {lname!r}")
