"""Bad input: every case is a counted skip or a StubOutput, never an exception or lost lines."""

from __future__ import annotations

import pytest

from collectors.logs import MAX_TEXT, ParseStats, parse_lines
from observability.events import ErrorLine, RequestStateChange, StubOutput
from tests.collectors.logs.reference import parse_lines_regex

GOOD = (
    b'I1122 03:25:00.828602 4403 infer_request.cc:132] "[request id: r1] '
    b'Setting state from INITIALIZED to PENDING"\n'
)

# (name, bad line, reason counted, or None when it becomes one StubOutput)
INVALID: list[tuple[str, bytes, str | None]] = [
    ("month 13", GOOD.replace(b"I1122", b"I1322"), "malformed_header"),
    ("day 31 of November", GOOD.replace(b"I1122", b"I1131"), "malformed_header"),
    ("hour 25", GOOD.replace(b"03:25:00", b"25:25:00"), "malformed_header"),
    ("letters in micros", GOOD.replace(b".828602", b".82x602"), "malformed_header"),
    ("no pid", GOOD.replace(b" 4403 ", b" "), "malformed_header"),
    (
        "no source line",
        GOOD.replace(b"infer_request.cc:132]", b"infer_request.cc]"),
        "malformed_header",
    ),
    ("header cut short", b"I1122 03:25:00.8286\n", "malformed_header"),
    (
        "iso bad month",
        b'2026-13-22T03:26:19Z I 7400 server.cc:351] "m v1: UNLOADING"\n',
        "malformed_header",
    ),
    (
        "iso bad level",
        b'2026-11-22T03:26:19Z X 7400 server.cc:351] "m v1: UNLOADING"\n',
        "malformed_header",
    ),
    ("NUL bytes", b"\x00\x01\x02binary\xff\x00\n", "binary"),
    ("blank", b"   \n", "blank"),
    ("CR only", b"\r\n", "blank"),
    ("not utf-8", b"\xff\xfe printed by a stub \xc3\x28\n", None),
    ("level letter but text", b"Ignored warning from numpy\n", None),
]


@pytest.mark.parametrize(("name", "bad", "reason"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_line_is_counted_and_neighbours_survive(
    name: str, bad: bytes, reason: str | None
) -> None:
    for parse in (parse_lines, parse_lines_regex):
        stats = ParseStats()
        got = list(parse([GOOD, bad, GOOD], year=2026, stats=stats))
        states = [r for r in got if isinstance(r, RequestStateChange)]
        assert len(states) == 2, name
        assert states[1].header.offset == len(GOOD) + len(bad)
        if reason is None:
            outs = [r for r in got if isinstance(r, StubOutput)]
            assert len(outs) == 1 and outs[0].offset == len(GOOD)
        else:
            assert stats.skipped[reason] == 1, (name, stats.skipped)
            assert len(got) == 2


def test_one_megabyte_lines_are_cut_not_copied() -> None:
    big_err = b'E1122 03:25:00.000001 1 foo.cc:1] "' + b"x" * 1_000_000 + b'"\n'
    big_text = b"y" * 1_000_000 + b"\n"
    stats = ParseStats()
    got = list(parse_lines([big_err, big_text, GOOD], year=2026, stats=stats))
    assert isinstance(got[0], ErrorLine) and len(got[0].text) == MAX_TEXT
    assert isinstance(got[1], StubOutput) and len(got[1].text) == MAX_TEXT
    assert isinstance(got[2], RequestStateChange)
    assert stats.skipped["truncated_text"] == 2


def test_truncated_last_line_is_held_back_for_a_tailer() -> None:
    cut = GOOD[:40]
    stats = ParseStats()
    got = list(parse_lines([GOOD, cut], year=2026, final=False, stats=stats))
    assert len(got) == 1
    assert stats.resume_offset == len(GOOD)
    assert stats.skipped["unterminated"] == 1
    # the tailer re-reads from resume_offset once the line is complete
    again = list(parse_lines([GOOD], year=2026, offset=stats.resume_offset))
    assert again[0].header.offset == len(GOOD)  # type: ignore[union-attr]


def test_unterminated_last_line_of_a_finished_file_is_parsed() -> None:
    stats = ParseStats()
    got = list(parse_lines([GOOD, GOOD.rstrip(b"\n")], year=2026, stats=stats))
    assert len(got) == 2 and stats.skipped["unterminated"] == 1


def test_continuation_after_a_table_then_stub_text_after_the_blank_line() -> None:
    lines = [
        b"I1122 03:25:00.362873 4403 server.cc:674] \n",
        b"+---------+---------+\n",
        b"| Model   | Version |\n",
        b"\n",
        b"Error: Failed to initialize NVML\n",
    ]
    stats = ParseStats()
    got = list(parse_lines(lines, year=2026, stats=stats))
    assert [type(r) for r in got] == [StubOutput]
    assert stats.skipped["continuation"] == 2 and stats.skipped["blank"] == 1
    assert list(parse_lines_regex(lines, year=2026)) == got


def test_traceback_inside_a_continuation_block_is_still_stub_output() -> None:
    lines = [
        b"I1122 03:24:56.599164 4403 model_config_utils.cc:716] "
        b'"Server side auto-completed config: "\n',
        b'name: "bls"\n',
        b"Traceback (most recent call last):\n",
        b'  File "model.py", line 3, in execute\n',
    ]
    got = list(parse_lines(lines, year=2026))
    assert [r.text for r in got] == [  # type: ignore[union-attr]
        "Traceback (most recent call last):",
        '  File "model.py", line 3, in execute',
    ]
    assert list(parse_lines_regex(lines, year=2026)) == got


def test_str_lines_are_a_caller_error_not_a_silent_skip() -> None:
    with pytest.raises(TypeError, match="wants bytes lines, got str"):
        list(parse_lines([GOOD.decode(), "stub text\n"], year=2026))  # type: ignore[list-item]


def test_a_record_whose_message_ends_in_a_colon_opens_a_body_in_both_parsers() -> None:
    lines = [
        b'I1122 03:25:00.828458 4403 http_server.cc:4599] "HTTP request: 2 /v2/odd:"\n',
        b"body line\n",
    ]
    got = list(parse_lines(lines, year=2026))
    assert len(got) == 1
    assert list(parse_lines_regex(lines, year=2026)) == got


def test_non_numeric_pid_is_malformed_on_the_hot_path_too() -> None:
    bad = GOOD.replace(b" 4403 ", b" 44x3 ")
    stats = ParseStats()
    assert list(parse_lines([bad], year=2026, stats=stats)) == []
    assert stats.skipped["malformed_header"] == 1
    assert list(parse_lines_regex([bad], year=2026)) == []
