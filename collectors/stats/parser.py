"""Parse Triton's ``/v2/models/stats`` answer into ``ModelStats``.

Accepted shapes, all the same JSON: the raw HTTP body, ``tritonclient.http``'s
``get_inference_statistics()`` dict, and ``tritonclient.grpc``'s ``as_json=True`` dict. The
gRPC form is protobuf JSON: 64-bit integers arrive as strings and zero fields are left
out, so numbers may be strings and a missing counter is 0. A model entry without a name,
or with a value that is not a non-negative integer, is an error that names the model and
the field; the lenient parser skips that entry and keeps the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from observability.events import BatchStats, ModelStats

__all__ = [
    "ParsedStats",
    "StatsParseError",
    "parse_model_stats",
    "parse_model_stats_lenient",
]

_DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")


class StatsParseError(ValueError):
    """A stats answer that is not Triton's format; the message quotes the bad part."""


@dataclass(frozen=True, slots=True)
class ParsedStats:
    stats: tuple[ModelStats, ...]
    problems: tuple[str, ...] = ()


def _count(value: Any, where: str, field: str = "") -> int:
    """``value`` as a count; ``where`` + ``field`` name it in the error (joined only then: a
    scrape holds a few hundred counts, and formatting each one's name was most of a parse)."""
    if type(value) is int and value >= 0:
        return value
    if value is None:
        return 0
    if isinstance(value, bool):
        raise StatsParseError(f"{where}{field}: expected a count, got {value!r}")
    if isinstance(value, str) and value.isascii() and value.isdigit():
        try:
            return int(value)
        except ValueError:  # more digits than int() converts: no counter is that big
            raise StatsParseError(f"{where}{field}: a count of {len(value)} digits") from None
    if isinstance(value, int) and value >= 0:
        return value
    raise StatsParseError(f"{where}{field}: expected a non-negative integer, got {value!r:.60}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> str:
    """JSON's ``\\ud800`` escapes decode to lone surrogates, which the store cannot encode
    as UTF-8: each becomes U+FFFD, as an undecodable byte would."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


def _obj(value: Any, where: str, field: str = "") -> Mapping[str, Any]:
    if type(value) is dict:
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise StatsParseError(f"{where}{field}: expected an object, got {value!r:.60}")
    return value


def _duration(parent: Mapping[str, Any], key: str, where: str) -> tuple[int, int]:
    d = _obj(parent.get(key), where, f".{key}")
    count, ns = d.get("count"), d.get("ns")
    if type(count) is int and type(ns) is int and count >= 0 and ns >= 0:
        return count, ns
    return _count(count, where, f".{key}.count"), _count(ns, where, f".{key}.ns")


def _batch(entry: Any, where: str) -> BatchStats:
    e = _obj(entry, where)
    size = _count(e.get("batch_size"), where, ".batch_size")
    ci = _duration(e, "compute_input", where)
    cf = _duration(e, "compute_infer", where)
    co = _duration(e, "compute_output", where)
    return BatchStats(size, ci[0], ci[1], cf[0], cf[1], co[0], co[1])


def _model(entry: Any, at_ns: int, index: int) -> ModelStats:
    e = _obj(entry, f"model_stats[{index}]")
    name = e.get("name")
    if not isinstance(name, str) or not name:
        raise StatsParseError(f"model_stats[{index}]: no model name in {json.dumps(e)[:80]}")
    version = e.get("version", "")
    where = f"model {name!r} version {version!r}"
    inf_where = f"{where} inference_stats"
    inf = _obj(e.get("inference_stats"), inf_where)
    d = {key: _duration(inf, key, inf_where) for key in _DURATIONS}
    hit = _duration(inf, "cache_hit", inf_where)
    miss = _duration(inf, "cache_miss", inf_where)
    raw_batches = e.get("batch_stats")
    if raw_batches is None:
        raw_batches = []
    if not isinstance(raw_batches, list):
        raise StatsParseError(f"{where} batch_stats: expected a list, got {raw_batches!r:.60}")
    batches = tuple(_batch(b, f"{where} batch_stats[{i}]") for i, b in enumerate(raw_batches))
    return ModelStats(
        at_ns=at_ns,
        model=_text(name),
        version=_text(str(version)),
        last_inference_ms=_count(e.get("last_inference"), where, " last_inference"),
        inference_count=_count(e.get("inference_count"), where, " inference_count"),
        execution_count=_count(e.get("execution_count"), where, " execution_count"),
        success_count=d["success"][0],
        success_ns=d["success"][1],
        fail_count=d["fail"][0],
        fail_ns=d["fail"][1],
        queue_count=d["queue"][0],
        queue_ns=d["queue"][1],
        compute_input_ns=d["compute_input"][1],
        compute_infer_ns=d["compute_infer"][1],
        compute_output_ns=d["compute_output"][1],
        cache_hit_count=hit[0],
        cache_miss_count=miss[0],
        batch_stats=batches,
    )


def _entries(answer: str | bytes | Mapping[str, Any]) -> list[Any]:
    if isinstance(answer, (str, bytes)):
        raw = answer
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError) as err:  # JSONDecodeError, bad UTF-8, 4300+ digits
            text = raw[:60] if isinstance(raw, str) else raw[:60].decode(errors="replace")
            raise StatsParseError(f"not JSON ({err}): {text!r}") from None
    if not isinstance(answer, Mapping):
        raise StatsParseError(f"expected an object with model_stats, got {answer!r:.60}")
    entries = answer.get("model_stats", [])
    if not isinstance(entries, list):
        raise StatsParseError(f"model_stats must be a list, got {entries!r:.60}")
    return entries


def parse_model_stats(answer: str | bytes | Mapping[str, Any], at_ns: int) -> list[ModelStats]:
    """Strict: the first bad entry raises ``StatsParseError``."""
    return [_model(e, at_ns, i) for i, e in enumerate(_entries(answer))]


def parse_model_stats_lenient(answer: str | bytes | Mapping[str, Any], at_ns: int) -> ParsedStats:
    """Skip each bad model entry with a problem; a body that is not stats at all raises."""
    stats: list[ModelStats] = []
    problems: list[str] = []
    for i, entry in enumerate(_entries(answer)):
        try:
            stats.append(_model(entry, at_ns, i))
        except StatsParseError as err:
            problems.append(str(err))
    return ParsedStats(tuple(stats), tuple(problems))
