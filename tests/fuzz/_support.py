"""What every fuzz module shares: the example budget, regression files, storability checks.

Why a helper instead of a global hypothesis profile: loading a profile is process-wide and
would change every other property test in the suite. ``fuzz_settings`` derives each fuzz
test's settings from the registered ``triton-obs-fuzz`` profile instead, so only tests that
ask for it are affected.

Budget: each test names the examples it runs in CI (``HYPOTHESIS_PROFILE=ci``; the whole
folder stays well under a minute on two cores), the default ``dev`` profile a tenth of them
(``tests/hypothesis_profiles.py``). ``TRITON_OBS_FUZZ_EXAMPLES=N`` raises every test to at
least ``N`` examples for a long run, e.g.::

    TRITON_OBS_FUZZ_EXAMPLES=20000 TRITON_OBS_FUZZ_KEEP=1 pytest -q tests/fuzz -x --timeout=0

Regressions: ``regressions/<parser>/`` holds one file per input that ever failed, replayed
by a test in that parser's module. With ``TRITON_OBS_FUZZ_KEEP=1`` a failing property
writes its input to ``regressions/<parser>/last-failure-<test>.<ext>``; hypothesis replays
the shrunk example last, so that file ends up holding the minimal input. Rename it after
what it shows and commit it with the fix.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples as profile_examples

__all__ = [
    "EXAMPLES_ENV",
    "FIXTURES",
    "INT64_MAX",
    "INT64_MIN",
    "JSON",
    "KEEP_ENV",
    "REGRESSIONS",
    "assert_storable",
    "deep_json",
    "fuzz_settings",
    "keep_on_failure",
    "mutated_json",
    "regression_files",
]

EXAMPLES_ENV = "TRITON_OBS_FUZZ_EXAMPLES"
KEEP_ENV = "TRITON_OBS_FUZZ_KEEP"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

settings.register_profile(
    "triton-obs-fuzz",
    deadline=None,
    # Inputs are big on purpose (1 MB lines, whole pages) and some tests hold a server or
    # a store across examples: those checks would only get in the way of the fuzzing.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
    print_blob=True,
)


def fuzz_settings(examples: int, *, long_run_cap: int | None = None) -> settings:
    """The fuzz profile with ``examples`` in CI (scaled down by the ``dev`` profile, see
    ``tests/hypothesis_profiles.py``), or ``$TRITON_OBS_FUZZ_EXAMPLES`` if larger.

    ``long_run_cap`` bounds a long run for a test whose examples are slow (1 MB inputs), so
    that it stays inside pytest-timeout's 600 s per test (or pass ``--timeout=0``).
    """
    wanted = os.environ.get(EXAMPLES_ENV, "").strip()
    long_run = int(wanted) if wanted.isdigit() else 0
    if long_run_cap is not None:
        long_run = min(long_run, long_run_cap)
    return settings(
        settings.get_profile("triton-obs-fuzz"),
        max_examples=max(profile_examples(examples), long_run),
    )


def regression_files(parser: str) -> list[Path]:
    """Every kept input of one parser, sorted so that test ids are stable."""
    folder = REGRESSIONS / parser
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name != ".gitkeep")


@contextmanager
def keep_on_failure(parser: str, test: str, data: bytes, ext: str) -> Iterator[None]:
    """Write ``data`` as the last failing input of ``test`` when the body fails (opt-in)."""
    try:
        yield
    except BaseException:
        if os.environ.get(KEEP_ENV) == "1":
            target = REGRESSIONS / parser / f"last-failure-{test}.{ext}"
            target.write_bytes(data)
        raise


def _walk(value: object, path: str) -> Iterator[tuple[str, object]]:
    if isinstance(value, enum.Enum):
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _walk(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")
    else:
        yield path, value


def assert_storable(event: object, *, ints: bool = True) -> None:
    """Every text encodes as UTF-8 and (``ints``) every integer fits SQLite's INTEGER.

    Why: the store binds these values to SQLite, which refuses a lone surrogate
    (``UnicodeEncodeError``) and an integer past int64 (``OverflowError``) and then loses
    the whole batch the event came in. A parser must not hand such a value on.
    """
    for path, value in _walk(event, type(event).__name__):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                raise AssertionError(f"{path} is not UTF-8 encodable: {value!r:.80}") from err
        elif ints and isinstance(value, int) and not isinstance(value, bool):
            assert INT64_MIN <= value <= INT64_MAX, f"{path} out of int64: {value}"


# ------------------------------------------------------------------------- JSON inputs

_NASTY_STRINGS = st.sampled_from(
    ["", "0", "-1", "1" * 30, "9" * 5000, "\ud800", "a\udfffb", "é", "\x00", "NaN", " 7"]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1, 10**4000]),
    st.floats(),
    st.text(max_size=12),
    _NASTY_STRINGS,
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), _NASTY_STRINGS), inner, max_size=4),
    ),
    max_leaves=12,
)
"""Any value ``json.dumps`` writes: NaN, 4000-digit integers and lone surrogates included."""


def _containers(node: Any) -> Iterator[Any]:
    if isinstance(node, (dict, list)):
        yield node
        for child in node.values() if isinstance(node, dict) else node:
            yield from _containers(child)


@st.composite
def mutated_json(draw: st.DrawFn, base: Any, keys: list[str]) -> Any:
    """``base`` with one to four edits in random places: a value replaced by any JSON
    value, a key or item removed, or a known ``keys`` entry added with any value.

    Why from real documents: random JSON almost never gets past a decoder's first check,
    a real document with one bad field reaches every branch behind it.
    """
    obj = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        nodes = list(_containers(obj))
        if not nodes:
            return draw(JSON)
        node = draw(st.sampled_from(nodes))
        edit = draw(st.integers(0, 2))
        if isinstance(node, dict):
            if edit == 2 or not node:
                node[draw(st.sampled_from(keys))] = draw(JSON)
                continue
            key = draw(st.sampled_from(sorted(node)))
            if edit == 0:
                node[key] = draw(JSON)
            else:
                del node[key]
        elif node:
            at = draw(st.integers(0, len(node) - 1))
            if edit == 0:
                node[at] = draw(JSON)
            elif edit == 1:
                del node[at]
            else:
                node.insert(at, copy.deepcopy(node[at]))
        else:
            node.append(draw(JSON))
    return obj


def deep_json(depth: int, inner: str = "1") -> str:
    """Arrays and objects nested ``depth`` deep: the decoders' recursion limit."""
    return '[{"a":' * depth + inner + "}]" * depth
