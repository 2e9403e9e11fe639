"""Coverage-guided fuzzing (atheris, i.e. libFuzzer) of the log line and /metrics parsers.

Optional and never run by CI or pytest (``tests/fuzz`` is the hypothesis suite that is):
atheris is not a dependency of the project. It complements hypothesis where coverage
feedback pays: byte-level inputs whose interesting shapes (a header, a label set) are
rare by chance but that libFuzzer reaches by following new branches of the parser.

Run from the repository root, with a binary wheel (there is one for CPython 3.11 on
x86-64 Linux, no compiler needed)::

    pip install atheris
    python benchmarks/fuzz_atheris.py logs CORPUS_DIR -max_total_time=600
    python benchmarks/fuzz_atheris.py metrics CORPUS_DIR -atheris_runs=200000

The first argument picks the target; the rest go to libFuzzer (a corpus folder, which is
seeded with the recorded fixtures and ``tests/fuzz/regressions/<target>/`` when empty,
then ``-max_total_time``, ``-atheris_runs``, ``-jobs``...). A failure stops the run with
the input written to ``crash-<sha1>``: add it to ``tests/fuzz/regressions/<target>/``,
where the hypothesis suite replays it, and fix the parser.

What fails a run, per target, beyond any exception the parser does not document:

* ``logs``: a line dropped by an exception (``skipped["internal"]``), a text past
  ``MAX_TEXT``, and (for inputs under 16 KiB) any difference between the parser and its
  regex reference, except where
  they differ by design (``tests/fuzz/test_fuzz_logs.py``: ``_NUMBER_QUIRK``,
  ``_cache_may_skip_a_year_step``);
* ``metrics``: strict parsing raising anything but ``MetricsParseError``, lenient parsing
  raising at all or disagreeing with strict parsing, and any difference between the
  ``_fastmetrics`` C path and the pure-Python path.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from unittest import mock

import atheris

with atheris.instrument_imports():
    from collectors.logs import MAX_TEXT, ParseStats, parse_lines
    from collectors.metrics import parser as metrics_parser
    from collectors.metrics.parser import (
        MetricsParseError,
        parse_metrics,
        parse_metrics_lenient,
    )

from tests.fuzz.test_fuzz_logs import assert_same_as_reference

ROOT = Path(__file__).resolve().parent.parent
SEEDS = {
    "logs": [ROOT / "tests/fixtures/logs", ROOT / "tests/fuzz/regressions/logs"],
    "metrics": [ROOT / "tests/fixtures/metrics", ROOT / "tests/fuzz/regressions/metrics"],
}


def fuzz_logs(data: bytes) -> None:
    """One input through the parser and its reference."""
    stats = ParseStats()
    lines = data.splitlines(keepends=True)
    records = list(parse_lines(lines, year=2026, stats=stats))
    if stats.skipped["internal"]:
        raise AssertionError("a line was dropped by an exception")
    if stats.resume_offset != len(data):
        raise AssertionError(f"resume_offset {stats.resume_offset} != {len(data)}")
    for rec in records:
        for text in (getattr(rec, "text", ""), getattr(rec, "detail", "")):
            if len(text) > MAX_TEXT:
                raise AssertionError("text past MAX_TEXT")
    if len(data) <= 16_384:  # the reference backtracks on long lines
        assert_same_as_reference(records, lines, year=2026)


def _metrics_outcome(text: str) -> tuple[object, object]:
    try:
        strict: object = parse_metrics(text)
    except MetricsParseError as err:
        strict = (err.line_number, err.line, err.reason)
    page = parse_metrics_lenient(text)
    return strict, page


def fuzz_metrics(data: bytes) -> None:
    """One page, as the collector decodes a body, through both paths of the parser."""
    text = data.decode("utf-8", "replace")
    strict, page = _metrics_outcome(text)
    if isinstance(strict, tuple):
        first = page.problems[0]  # type: ignore[attr-defined]
        if (first.line_number, first.line, first.reason) != strict:
            raise AssertionError("lenient's first problem is not strict's error")
    elif page.problems or repr(list(page.families)) != repr(strict):  # type: ignore[attr-defined]
        raise AssertionError("lenient disagrees with strict on a valid page")  # repr: NaN
    with mock.patch.object(metrics_parser, "_build", None):
        metrics_parser._clear_caches()
        python = _metrics_outcome(text)
    if repr(python) != repr((strict, page)):  # repr: NaN == NaN, -0.0 != 0.0
        raise AssertionError("the _fastmetrics C path and the Python path disagree")


TARGETS = {"logs": fuzz_logs, "metrics": fuzz_metrics}


def _seed(target: str, corpus: Path) -> None:
    """Fill an empty corpus folder with the recorded fixtures and the kept regressions."""
    if corpus.exists() and any(corpus.iterdir()):
        return
    corpus.mkdir(parents=True, exist_ok=True)
    for folder in SEEDS[target]:
        for path in sorted(folder.glob("*")):
            if path.is_file() and path.suffix in (".log", ".prom"):
                shutil.copy(path, corpus / path.name)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(f"usage: {argv[0]} {{{','.join(TARGETS)}}} [CORPUS_DIR] [libFuzzer flags]")
    target = argv[1]
    rest = argv[2:]
    corpora = [a for a in rest if not a.startswith("-")]
    if corpora:
        _seed(target, Path(corpora[0]))
    atheris.Setup([argv[0], *rest], TARGETS[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
