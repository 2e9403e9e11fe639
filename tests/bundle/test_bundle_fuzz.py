"""Fuzz the bundle reader: what a stranger's bundle may hold, opened and ingested.

Inputs: random meta.json contents (any JSON, out-of-range numbers, impossible dates, not
JSON at all); random file names and contents in metrics/, stats/ and otlp/; every part of a
real bundle cut short, byte-flipped or replaced; and random tar archives (any names, member
types, sizes, compressions, cut or corrupted). Each must give, and nothing else:

* a :class:`BundleError` with a one-line message, or a bundle with notes;
* an ingest that does not raise, into a store that already held another bundle, whose rows
  are all still there afterwards (the store's own writes are all-or-nothing per batch);
* for an archive, nothing written outside its temporary folder, and that folder gone.

An input that ever failed is kept under ``regressions/`` and replayed by
:func:`test_regressions` (a folder bundle as ``*.json``: relative path to base64 bytes; an
archive as its own bytes). ``TRITON_OBS_FUZZ_KEEP=1`` writes a failing input there as
``last-failure-<test>.*``: rename it after what it shows. ``TRITON_OBS_FUZZ_EXAMPLES=N``
runs every property with at least N examples.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from observability.analyze import analyze_bundle
from observability.bundle import BundleError
from observability.bundle.ingest import ingest
from observability.store import Store
from tests.bundle._support import (
    FIXTURES,
    Member,
    fixture_bundle,
    make_tar,
    prefilled_store,
    store_rows,
)
from tests.hypothesis_profiles import examples as profile_examples

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
_LONG = os.environ.get("TRITON_OBS_FUZZ_EXAMPLES", "").strip()


def _settings(examples: int) -> settings:
    """Modest budgets keep tests/bundle well under a minute on two cores (``examples`` in
    CI, a tenth in the default ``dev`` profile: ``tests/hypothesis_profiles.py``); a long
    run raises them all with ``TRITON_OBS_FUZZ_EXAMPLES``."""
    return settings(
        max_examples=max(profile_examples(examples), int(_LONG) if _LONG.isdigit() else 0),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
            HealthCheck.large_base_example,
        ],
        print_blob=True,
    )


# ------------------------------------------------------------------ what is checked


@pytest.fixture(scope="module")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, set[object]]]:
    """A store that already holds a bundle, and its rows: built once, copied per example."""
    path = prefilled_store(tmp_path_factory.mktemp("base"))
    return path, store_rows(path)  # type: ignore[return-value]


def _keep(test: str, files: dict[str, bytes] | None, archive: bytes | None) -> None:
    if os.environ.get("TRITON_OBS_FUZZ_KEEP") != "1":
        return
    if files is not None:
        body = {k: base64.b64encode(v).decode() for k, v in sorted(files.items())}
        (REGRESSIONS / f"last-failure-{test}.json").write_text(json.dumps(body, indent=1))
    if archive is not None:
        (REGRESSIONS / f"last-failure-{test}.tar.gz").write_bytes(archive)


@contextmanager
def _kept_on_failure(
    test: str, files: dict[str, bytes] | None = None, archive: bytes | None = None
) -> Iterator[None]:
    try:
        yield
    except BaseException:
        _keep(test, files, archive)
        raise


def _materialize(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True)
    for rel, data in files.items():
        path = root.joinpath(*rel.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


_REFUSALS = (
    "refused: member",
    "refused: the header",
    "refused: more than",
    "not a readable tar archive",
    "has no meta.json",
    "is not valid JSON",
    "must hold a JSON object",
    "is not supported",
    "cannot be read",
    "is a symbolic link",
)


def _event(text: str) -> None:
    with contextlib.suppress(InvalidArgument):  # a regression replayed outside hypothesis
        event(text)


def _check(
    bundle: Path,
    base: tuple[Path, dict[str, set[object]]],
    work: Path,
    analyze: bool = False,
) -> list[str] | None:
    """Open, ingest (into a copy of the base store) and optionally analyze ``bundle``; every
    failure must be a BundleError with a message, and the base store's rows must survive."""
    store_path = work / "store.db"
    shutil.copyfile(base[0], store_path)
    notes: list[str] | None = None
    try:
        with Store(store_path) as store:
            notes = ingest(bundle, store).notes
    except BundleError as err:
        message = str(err)
        assert message.strip() and "Traceback" not in message
        # --hypothesis-show-statistics: which refusals the inputs reach, and how often
        _event(next((k for k in _REFUSALS if k in message), f"other: {message[-40:]}"))
    else:
        _event(f"ingested, {'with' if notes else 'without'} notes")
    after = store_rows(store_path)
    for table, rows in base[1].items():
        assert rows <= after[table], f"rows of {table} lost"
    assert all(isinstance(n, str) and n for n in notes or [])
    if analyze and notes is not None:
        analyze_bundle(bundle)
    return notes


def _analyze_loose(archive: Path) -> None:
    """``analyze`` on an archive with no meta.json reads it as gathered files
    (``open_loose_archive``): findings, or a BundleError that says why."""
    try:
        analyze_bundle(archive)
    except BundleError as err:
        assert str(err).strip() and "Traceback" not in str(err)
        _event("loose: " + next((k for k in (*_REFUSALS, "holds no") if k in str(err)), "other"))
    else:
        _event("loose: analysed")


# ------------------------------------------------------------------ strategies

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_TIMES = st.datetimes(timezones=st.none() | st.just(timezone.utc)).map(
    lambda d: d.isoformat()
) | st.sampled_from(
    ["2026-11-22T03:26:30+00:00", "0001-01-01T00:00:00", "9999-12-31T23:59:59+14:00", "", "x"]
)
_NUMBERS = _SCALARS | st.sampled_from([2**63, -(2**63) - 1, 1e308, -1, 1795317512589060890])
_META = st.fixed_dictionaries(
    {"format": st.just(1) | st.sampled_from([True, 1.0, "1", 2, None])},
    optional={
        "bundle_id": _JSON,
        "triton_version": _JSON,
        "started_at": _TIMES | _JSON,
        "ended_at": _TIMES | _JSON,
        "sources": st.fixed_dictionaries({}, optional={"log_start_offset": _NUMBERS}) | _JSON,
        "clock": st.fixed_dictionaries(
            {},
            optional={"epoch_ns_minus_monotonic_ns": _NUMBERS, "log_utc_offset_s": _NUMBERS},
        )
        | _JSON,
    },
)


def _meta_bytes() -> st.SearchStrategy[bytes]:
    as_json = _META.map(lambda m: json.dumps(m).encode())
    return (
        as_json
        | _JSON.map(lambda v: json.dumps(v).encode())
        | st.tuples(as_json, st.integers(0, 200)).map(lambda t: t[0][: t[1]])  # cut short
        | st.binary(max_size=64)
        | st.integers(1, 50_000).map(lambda n: b"[" * n)  # nested past the recursion limit
    )


_LOG_HEAD = (FIXTURES / "logs" / "glog_2.51_stub_death.log").read_bytes()[:6000]
_SMALL_META = json.dumps(
    {"format": 1, "bundle_id": "fuzz", "started_at": "2026-11-22T03:26:30+00:00"}
).encode()
_FILE_NAMES = st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=30,
).filter(lambda n: n not in (".", "..") and len(n.encode()) < 200)
_SNAPSHOT_NAMES = st.builds(
    lambda ms, suffix: f"{ms}.{suffix}",
    st.integers(0, 10**17) | st.sampled_from([1795317990000, 9223372036854, 9223372036855]),
    st.sampled_from(["prom", "json", "txt", "prom.json"]),
)
_SAMPLES = {
    "metrics": (FIXTURES / "metrics" / "triton_2.51_summary_latencies.prom").read_bytes(),
    "stats": (FIXTURES / "stats" / "triton_2.51_stats_router_v1.json").read_bytes(),
    "otlp": (FIXTURES / "otlp" / "triton_2.51_otel" / "post_00.json").read_bytes(),
}


def _mutated(data: st.DataObject, original: bytes) -> bytes:
    """``original`` cut, byte-flipped, spliced with garbage, or replaced outright."""
    how = data.draw(st.sampled_from(["keep", "cut", "flip", "splice", "replace", "empty"]))
    if how == "keep" or not original:
        return original
    if how == "cut":
        return original[: data.draw(st.integers(0, len(original)))]
    if how == "flip":
        out = bytearray(original)
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(out) - 1))
            out[i] = data.draw(st.integers(0, 255))
        return bytes(out)
    if how == "splice":
        i = data.draw(st.integers(0, len(original)))
        junk = data.draw(
            st.binary(max_size=40)
            | st.sampled_from([b"\x00", b"\xff\xfe", b"\n" * 3, b'"\\ud800"', b"1e999", b"NaN"])
        )
        return original[:i] + junk + original[i:]
    if how == "replace":
        return data.draw(st.binary(max_size=300))
    return b""


# ------------------------------------------------------------------ properties


@_settings(60)
@given(meta=_meta_bytes())
@example(meta=b'{"format": 1, "sources": {"log_start_offset": "x"}}')
@example(meta=b'{"format": 1, "clock": {"epoch_ns_minus_monotonic_ns": Infinity}}')
@example(meta=b'{"format": 1, "started_at": "0001-01-01T00:00:00"}')
def test_any_meta_json(meta: bytes, base_store: tuple[Path, dict[str, set[object]]]) -> None:
    files = {
        "meta.json": meta,
        "triton.log": _LOG_HEAD,
        "metrics/1795317990000.prom": _SAMPLES["metrics"],
    }
    with tempfile.TemporaryDirectory() as tmp, _kept_on_failure("any_meta_json", files):
        _check(_materialize(Path(tmp) / "b", files), base_store, Path(tmp), analyze=True)


@_settings(60)
@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(["metrics", "stats", "otlp"]),
            _SNAPSHOT_NAMES | _FILE_NAMES,
            st.sampled_from(list(_SAMPLES.values())) | st.binary(max_size=200),
        ),
        max_size=6,
    )
)
@example(entries=[("metrics", "9999999999999999.prom", b"up 1\n")])
@example(entries=[("otlp", "1795317990000.json", b"[" * 5000)])
def test_any_snapshot_names_and_contents(
    entries: list[tuple[str, str, bytes]], base_store: tuple[Path, dict[str, set[object]]]
) -> None:
    files = {"meta.json": _SMALL_META}
    files.update({f"{folder}/{name}": body for folder, name, body in entries})
    with tempfile.TemporaryDirectory() as tmp, _kept_on_failure("snapshots", files):
        notes = _check(_materialize(Path(tmp) / "b", files), base_store, Path(tmp))
    assert notes is not None  # only meta.json can make a folder no bundle


_PARTS = fixture_bundle(Path(tempfile.mkdtemp(prefix="bundle-fuzz-parts-")) / "b")
_PART_FILES = {
    "/".join(p.relative_to(_PARTS).parts): p.read_bytes()
    for p in sorted(_PARTS.rglob("*"))
    if p.is_file()
}
shutil.rmtree(_PARTS.parent)


@_settings(40)
@given(data=st.data())
def test_every_part_cut_flipped_or_replaced(
    data: st.DataObject, base_store: tuple[Path, dict[str, set[object]]]
) -> None:
    files = {
        rel: _mutated(data, body) if rel != "meta.json" else body
        for rel, body in _PART_FILES.items()
    }
    with tempfile.TemporaryDirectory() as tmp, _kept_on_failure("parts", files):
        notes = _check(_materialize(Path(tmp) / "b", files), base_store, Path(tmp), analyze=True)
    assert notes is not None


_TYPES = [
    tarfile.REGTYPE,
    tarfile.AREGTYPE,
    tarfile.CONTTYPE,
    tarfile.DIRTYPE,
    tarfile.SYMTYPE,
    tarfile.LNKTYPE,
    tarfile.CHRTYPE,
    tarfile.BLKTYPE,
    tarfile.FIFOTYPE,
    b"Z",
]
_ESCAPE = "fuzz-escaped"
"""A member that lands outside the extraction folder shows up as this name."""
_MEMBER_NAMES = (
    st.sampled_from(
        [
            "meta.json",
            "triton.log",
            "trace.json",
            "trace.json.3",
            "metrics/1795317990000.prom",
            "stats/1795317990000.json",
            "otlp/1795317990000.json",
            "metrics/",
            "metrics",
            ".",
            "./",
            "",
            f"../{_ESCAPE}",
            f"../../{_ESCAPE}",
            f"metrics/../../{_ESCAPE}",
            f"/tmp/{_ESCAPE}",
            f"b/..\\..\\{_ESCAPE}",
        ]
    )
    | st.tuples(st.sampled_from(["", "./", "b/", "b/c/"]), _FILE_NAMES).map("".join)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
)
_LAYOUT_MEMBERS = st.builds(
    Member,
    name=st.tuples(
        st.sampled_from(["", "./", "b/"]),
        st.sampled_from(["meta.json", "triton.log", "trace.json", "trace.json.1"])
        | _SNAPSHOT_NAMES.map(lambda n: f"metrics/{n}")
        | _SNAPSHOT_NAMES.map(lambda n: f"stats/{n}"),
    ).map("".join),
    data=st.sampled_from([_SMALL_META, _LOG_HEAD, *_SAMPLES.values()]) | st.binary(max_size=100),
)
_ANY_MEMBERS = st.builds(
    Member,
    name=_MEMBER_NAMES,
    data=st.sampled_from([_SMALL_META, _LOG_HEAD, *_SAMPLES.values()]) | st.binary(max_size=100),
    type=st.sampled_from(_TYPES),
    linkname=st.sampled_from(["", "meta.json", "/etc/passwd", f"../{_ESCAPE}", "/"]),
)
_MEMBERS = st.one_of(_LAYOUT_MEMBERS, _LAYOUT_MEMBERS, _LAYOUT_MEMBERS, _ANY_MEMBERS)
"""Mostly what a bundle holds, so that archives get past the first refusal often."""


@_settings(80)
@given(
    members=st.lists(_MEMBERS, max_size=8),
    meta_first=st.booleans(),
    mode=st.sampled_from(["w:gz", "w:bz2", "w:xz", "w"]),
    damage=st.sampled_from(["none", "none", "none", "cut", "flip"]),
    where=st.floats(0, 1),
)
def test_any_tar_archive(
    members: list[Member],
    meta_first: bool,
    mode: str,
    damage: str,
    where: float,
    base_store: tuple[Path, dict[str, set[object]]],
) -> None:
    if meta_first:
        members = [Member("meta.json", _SMALL_META), *members]
    with tempfile.TemporaryDirectory() as tmp:
        outer = Path(tmp)
        (outer / "inside" / "deeper").mkdir(parents=True)
        archive = outer / "inside" / "deeper" / "b.tar.gz"
        try:
            make_tar(archive, members, mode)
        except (ValueError, UnicodeError, tarfile.TarError):
            return  # tarfile cannot write such a name: no one can send it either
        data = archive.read_bytes()
        if damage == "cut":
            data = data[: int(len(data) * where)]
        elif damage == "flip" and data:
            i = min(int(len(data) * where), len(data) - 1)
            data = data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1 :]
        archive.write_bytes(data)
        work = outer / "inside" / "work"
        work.mkdir()
        with _kept_on_failure("tar", archive=data):
            tempfile.tempdir, saved = str(work), tempfile.tempdir
            try:
                _check(archive, base_store, outer)
                if not meta_first:  # what analyze does with files gathered by hand
                    _analyze_loose(archive)
            finally:
                tempfile.tempdir = saved
            assert list(work.iterdir()) == [], "the temporary folder was left behind"
            escaped = [p for p in outer.rglob(f"*{_ESCAPE}*")] + list(
                Path("/tmp").glob(f"{_ESCAPE}*")
            )
            assert escaped == [], escaped


# ------------------------------------------------------------------ kept inputs


def _regressions() -> list[Path]:
    return sorted(p for p in REGRESSIONS.iterdir() if p.is_file() and p.name != "README.md")


def test_regressions_are_kept() -> None:
    assert len(_regressions()) >= 4


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.name)
def test_regressions(path: Path, base_store: tuple[Path, dict[str, set[object]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if path.suffix == ".json":
            body = json.loads(path.read_text())
            files = {k: base64.b64decode(v) for k, v in body.items()}
            bundle = _materialize(Path(tmp) / "b", files)
            _check(bundle, base_store, Path(tmp), analyze=True)
        else:
            _check(path, base_store, Path(tmp), analyze=True)
