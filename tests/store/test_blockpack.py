"""The compiled column packer (``observability/store/_blockpack.c``) writes exactly what
``json.dumps(blocks._pack(column))`` writes, and a block is the same bytes either way.

Checked on the columns of real blocks (every stream of three recordings of the corpus,
tests/fixtures/foreign, recorded from Triton 2.51), then on hypothesis' columns of the values
the packer writes or hands back (big ints, overflowing deltas, floats, escapes, lone
surrogates, lists).
"""

from __future__ import annotations

import dataclasses
import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from observability import events as ev
from observability.store import blocks, codec
from observability.store.codec import KINDS
from observability.store.schema import ROUTES
from tests.foreign.parsed import parsed
from tests.hypothesis_profiles import examples


def _python(column: list[object]) -> bytes:
    return blocks._json(blocks._pack(column))


def _compiled(column: list[object]) -> bytes | None:
    assert blocks._c_pack is not None, "observability/store/_blockpack.c was not built"
    return blocks._c_pack(column)


def _by_stream(name: str) -> dict[str, list[object]]:
    """A real run's records, by the store stream each goes to, in order."""
    by_stream: dict[str, list[object]] = {}
    for e in parsed(name).events:
        stream = ROUTES.get(type(e))
        if stream is not None:
            by_stream.setdefault(stream.name, []).append(e)
    return by_stream


@pytest.mark.parametrize("name", ["gs_spam_hang", "tts_queue_full", "sum_lm_hang_iso"])
def test_real_columns_and_blocks_are_the_same_bytes(name: str) -> None:
    by_stream = _by_stream(name)
    written = 0
    for records in by_stream.values():
        for kind in {type(e).__name__ for e in records}:
            mine = [e for e in records if type(e).__name__ == kind]
            for column in blocks._layout(KINDS[kind]).columns(mine):
                packed = _compiled(column)
                assert packed is None or packed == _python(column), (kind, column[:5])
                written += packed is not None
        block = blocks.encode_block(records[:8192])
        saved = blocks._c_pack, blocks._c_columns, blocks._c_group
        blocks._c_pack = blocks._c_columns = blocks._c_group = None
        try:
            python = blocks.encode_block(records[:8192])
            assert blocks._inflate(block) == blocks._inflate(python)
        finally:
            blocks._c_pack, blocks._c_columns, blocks._c_group = saved
    assert written > 20  # the compiled path wrote most columns, not Python


@pytest.mark.parametrize("name", ["gs_spam_hang", "tts_queue_full", "sum_lm_hang_iso"])
def test_real_blocks_decode_to_what_the_constructors_make(name: str) -> None:
    """Records made by writing their slots (``_blockpack.records``) are the records their
    classes' ``__init__`` makes: the same type, fields and order, every kind of a real run."""
    by_stream = _by_stream(name)
    assert codec._c_records is not None, "observability/store/_blockpack.c was not built"
    kinds: set[str] = set()
    for records in by_stream.values():
        block = blocks.encode_block(records[:8192])
        direct = blocks.decode_block(block)
        saved, codec._c_records = codec._c_records, None
        try:
            constructed = blocks.decode_block(block)
        finally:
            codec._c_records = saved
        assert [(s, type(e), repr(e)) for s, e in direct] == [
            (s, type(e), repr(e)) for s, e in constructed
        ]
        assert direct == constructed
        kinds |= {type(e).__name__ for _, e in direct}
    assert len(kinds) >= 8, kinds


def test_only_a_class_whose_init_just_stores_its_fields_is_made_by_its_slots() -> None:
    assert all(codec._direct(cls) for cls in KINDS.values())

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        at_ns: int

        def __post_init__(self) -> None:
            if self.at_ns < 0:
                raise ValueError("negative")

    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        at_ns: int

    assert not codec._direct(Checked) and not codec._direct(Unslotted)


_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x40)),
    st.sampled_from(["\ud800", "a\udfffb", 'é\x7f\x00\x1f"\\', "\u2028"]),
)


@settings(max_examples=examples(1000), deadline=None)
@given(
    column=st.one_of(
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20),
        st.lists(st.integers(-(2**66), 2**66), max_size=6),
        st.lists(st.integers(0, 50).map(lambda v: v * 1000), max_size=20),
        st.lists(_SCALAR, max_size=12),
        st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=5),
        # a trace span's (stage, ns) pairs, lists of any values, lists of lists
        st.lists(
            st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 9)).map(list)), max_size=5
        ),
        st.lists(st.lists(_SCALAR, max_size=3), max_size=5),
        st.lists(
            st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3)).map(
                lambda v: v if type(v) is list else [v]
            ),
            max_size=5,
        ),
    )
)
def test_any_column_is_packed_as_python_packs_it_or_handed_back(column: list[object]) -> None:
    packed = _compiled(column)
    if packed is not None:  # else handed back: encode_block packs it in Python
        assert packed == _python(column)


def test_what_is_handed_back_to_python() -> None:
    assert _compiled([2**64, 1]) is None  # past 64 bits
    assert _compiled([-(2**63), 2**63 - 1]) is None  # a delta that overflows
    assert _compiled(["a\ud800"]) is None  # a lone surrogate: only surrogatepass encodes it
    assert _compiled([[1, 2], [3, {"a": 1}]]) is None  # a list holding what is handed back
    assert _compiled([{"a": 1}]) is None
    assert _compiled([1, 2, 4]) == b"[1,[1,1,2]]"
    assert _compiled([1000, 3000, 7000]) == b"[5,2000,1000,[1,2]]"
    assert _compiled([]) == b"[0,[]]"
    with pytest.raises(TypeError):
        blocks._c_pack((1, 2))  # type: ignore[misc, arg-type]


@pytest.mark.parametrize("name", ["tts_queue_full", "nz_callback_error"])
def test_a_log_batch_is_keyed_as_one_record_at_a_time(name: str) -> None:
    """``LOG.keyed`` (list passes) gives each record's ``LOG.key`` and ``LOG.at_ns``, on real
    records with and without a header (a stub's prints carry their own time and offset)."""
    from observability.store.schema import LOG

    records = [e for e in parsed(name).events if ROUTES.get(type(e)) is LOG]
    assert any(getattr(e, "header", None) is None for e in records)
    assert LOG.keyed is not None
    keys, times = LOG.keyed(records, "b1/triton.log")
    assert keys == [LOG.key(e, "b1/triton.log") for e in records]
    assert times == [LOG.at_ns(e) for e in records]


@pytest.mark.parametrize("name", ["gs_spam_hang", "nz_callback_error"])
def test_a_trace_files_spans_are_keyed_as_one_span_at_a_time(name: str) -> None:
    """``keyed`` of the trace stream finds each span's start once for its key and time."""
    from observability.store.schema import STREAMS

    traces = STREAMS["traces"]
    spans = [e for e in parsed(name).events if type(e) is ev.TraceSpan]
    assert spans and traces.keyed is not None
    for source in ("b1/trace.json.0", ""):
        keys, times = traces.keyed(spans, source)
        assert keys == [traces.key(e, source) for e in spans]
        assert times == [traces.at_ns(e) for e in spans]


@pytest.mark.parametrize("name", ["gs_spam_hang", "nz_callback_error"])
def test_a_kinds_columns_are_read_and_packed_as_python_reads_and_packs_them(name: str) -> None:
    """``_blockpack.columns`` (each column's values read off the records and packed in one
    call) gives what Python's attribute reads, ``plain`` and ``_pack`` give, kind by kind."""
    by_kind: dict[type, list[object]] = {}
    for e in parsed(name).events:
        by_kind.setdefault(type(e), []).append(e)
    for cls, records in by_kind.items():
        layout = blocks._layout(cls)
        assert layout.packed(records) == [_python(c) for c in layout.columns(records)], cls


def test_a_value_the_enum_table_lacks_is_handed_back_and_a_missing_field_raises() -> None:
    from observability import events as ev

    layout = blocks._layout(ev.LogRecord)
    at = [i for i, (names, spec) in enumerate(layout.specs) if isinstance(spec, dict)]
    assert at, "a log header has an enum column (its level)"
    good = ev.LogRecord(1, ev.LogLevel.INFO, "x.cc", 1, 0)
    odd = dataclasses.replace(good, level="NOT-A-LEVEL")  # type: ignore[arg-type]
    assert layout.packed([good, odd]) == [_python(c) for c in layout.columns([good, odd])]
    assert blocks._c_columns is not None
    with pytest.raises(AttributeError):
        blocks._c_columns([object()], layout.specs)


@pytest.mark.parametrize("name", ["gs_spam_hang", "nz_callback_error"])
def test_records_are_grouped_by_kind_as_python_groups_them(name: str) -> None:
    events = parsed(name).events
    assert blocks._c_group is not None
    for part in (events[:8192], events[-5000:], events[:1], []):
        assert blocks._c_group(list(part)) == blocks._py_group(list(part))
    one_kind = [e for e in events if type(e) is type(events[0])][:100]
    types, order, groups = blocks._c_group(one_kind)
    assert order == str(len(one_kind)).encode()
    assert groups == [one_kind] and types == [type(events[0])]


_SAMPLE = st.builds(
    ev.MetricSample,
    name=st.sampled_from(["nv_inference_count", "nv_gpu_\ud800"]),
    labels=st.lists(st.tuples(st.text(max_size=2), st.text(max_size=2)), max_size=2).map(tuple),
    value=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**64), 2**64),
    family=st.text(max_size=3),
    timestamp_ms=st.none() | st.integers(0, 2**40),
)
_SAMPLE_ONE = ev.MetricSample("nv_inference_count", (("model", "a"),), 3.0, "nv_inference_count")


@settings(max_examples=examples(500), deadline=None)
@given(
    column=st.lists(
        st.one_of(
            st.tuples(st.integers(-1, 4096), st.integers(-1, 4096)),
            st.lists(st.integers(-(2**64), 2**64), max_size=4).map(tuple),
            st.lists(st.integers(0, 9), max_size=3),
            st.just(()),
            st.just((True, 2)),
            st.none(),
            # a trace span's (stage, ns) pairs, an OTLP span's (key, value) attributes
            st.lists(
                st.tuples(st.sampled_from(["A", "B", "\ud800"]), st.integers(-(2**64), 2**64)),
                max_size=3,
            ).map(tuple),
            st.lists(st.tuples(st.text(max_size=2), st.text(max_size=2)), max_size=3).map(tuple),
            st.just((("a", ev.LogLevel.INFO),)),  # an enum inside: handed back
            # a /metrics page's samples: records, which Python makes dicts
            st.lists(_SAMPLE, max_size=3).map(tuple),
            st.just((_SAMPLE_ONE, ev.BatchStats(1, 1, 1, 1, 1, 1, 1))),  # two kinds: back
            st.just((dataclasses.replace(_SAMPLE_ONE, family=ev.LogLevel.INFO),)),  # enum: back
        ),
        max_size=12,
    )
)
def test_a_column_of_shapes_is_packed_as_python_packs_it_or_handed_back(
    column: list[object],
) -> None:
    """A column of tuples of ints (an output's shape), of pairs (a span's stamps or
    attributes) or of records of one kind (a scrape's samples), which Python makes lists and
    dicts at every depth, is packed in C as ``_pack`` packs those (forms 3, 2 and 4), or
    handed back as it was."""
    assert blocks._c_columns is not None

    @dataclasses.dataclass(frozen=True, slots=True)
    class Shaped:
        shape: object

    shapes = [Shaped((1, 3)), Shaped((2, 3))]
    assert blocks._c_columns(shapes, ((("shape",), False),)) == [b"[3,2,[[1,[1,1]],[1,[3,0]]]]"]
    stamps = [Shaped((("A", 10), ("B", 30))), Shaped((("A", 50),))]
    packed_stamps = b'[2,[1,[2,-1]],[3,2,[[0,["A","B","A"]],[5,20,10,[1,1]]]]]'
    assert blocks._c_columns(stamps, ((("shape",), False),)) == [packed_stamps]
    assert _python([[["A", 10], ["B", 30]], [["A", 50]]]) == packed_stamps
    samples = [Shaped((_SAMPLE_ONE,)), Shaped((_SAMPLE_ONE, _SAMPLE_ONE))]
    packed_samples = blocks._c_columns(samples, ((("shape",), False),))[0]
    assert type(packed_samples) is bytes  # not handed back
    assert packed_samples == _python([list(map(codec._plain, v.shape)) for v in samples])
    out = blocks._c_columns([Shaped(v) for v in column], ((("shape",), False),))[0]
    if type(out) is list:
        assert out == column
    else:
        assert out == _python(list(map(codec._plain, column)))


def _plain_one_by_one(value: object) -> object:
    """What ``codec._plain`` made of a value before its fast path for scalar sequences."""
    if type(value) in (str, int, float, bool, type(None)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_plain_one_by_one(v) for v in value]
    return value


class _Color(str, enum.Enum):
    RED = "red"


_NESTED = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
        st.just(_Color.RED), st.just(ev.LogLevel.INFO),
    ),
    lambda inner: st.one_of(st.tuples(inner, inner), st.lists(inner, max_size=4)),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=examples(500), deadline=None)
@given(value=_NESTED)
def test_plain_copies_scalar_sequences_as_it_made_them_one_by_one(value: object) -> None:
    """A sequence of exact scalars is copied at C speed (a trace span's pairs); one with an
    enum (a str enum is a str, but not exactly one) or a nested sequence goes value by value."""
    # repr, not ==: a str enum equals its value, and True equals 1
    assert repr(codec._plain(value)) == repr(_plain_one_by_one(value))


def _json_reference(event: object) -> str:
    return json.dumps(codec._plain(event), separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("name", ["gs_spam_hang", "nz_callback_error", "emb_healthy"])
def test_a_records_json_is_written_as_json_dumps_writes_it(name: str) -> None:
    """``codec.encode`` (a staged record's body) is written by ``_blockpack.record_json``
    where it can: the same text as ``json.dumps`` of ``_plain``'s dicts, on every record of
    a real run; a log record (its level is an enum) is handed back and written by Python."""
    assert codec._c_json is not None
    written = 0
    for e in parsed(name).events:
        assert codec.encode(e) == _json_reference(e), type(e)
        written += codec._c_json(e) is not None
    assert written > 100
    spans = [e for e in parsed(name).events if type(e) in (ev.TraceSpan, ev.OtlpSpan)]
    assert spans and all(codec._c_json(e) is not None for e in spans)


@settings(max_examples=examples(1000), deadline=None)
@given(values=st.lists(_NESTED, min_size=5, max_size=5), sample=_SAMPLE)
def test_any_records_json_is_json_dumps_or_handed_back(
    values: list[object], sample: object
) -> None:
    """Any values in a record's fields (a dataclass does not check them): the compiled text
    is ``json.dumps``', or None (an enum, a lone surrogate) and Python writes it."""
    assert codec._c_json is not None
    record = ev.ScrapeStatus(*values)  # type: ignore[arg-type]
    nested = ev.MetricsScrape(1, "metrics", (sample, sample))  # type: ignore[arg-type]
    for e in (record, nested, [record, (nested,)]):
        text = codec._c_json(e)
        assert text is None or text == _json_reference(e)
    assert codec.encode(record) == _json_reference(record)
