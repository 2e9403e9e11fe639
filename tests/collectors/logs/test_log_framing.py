"""Log frames (``collectors/logs/framing.py`` through ``reader.parse_log``): each frame of a
real line gives the records the bare line gives, with offsets of the physical lines.

The framed lines are the shapes quoted in issue 15 from logs users pasted into public Triton
issues (Docker ``--timestamps``, a log UI's glued timestamp, compose, a log UI's uuid, CRI with
partial lines, Docker json-file, headers without level and date); the bare Triton lines inside
them are 2.51's, recorded in ``tests/fixtures/recordings``.
"""

# ruff: noqa: E501  (real log lines are kept whole)
from __future__ import annotations

import dataclasses
import json
from datetime import date

import pytest

from collectors.logs.framing import Framing
from collectors.logs.parser import parse_bytes
from collectors.logs.reader import parse_log
from observability import events as ev

STATE = (
    b'I0214 09:50:58.533976 1 infer_request.cc:132] "[request id: <id_unknown>] '
    b'Setting state from INITIALIZED to PENDING"'
)
EXEC = b'I0214 09:50:58.534076 1 python_be.cc:1395] "model m, instance m_0_0, executing 1 requests"'
STUB = b"Traceback (most recent call last):"
BARE = [STATE, EXEC, STUB]


def _frame(name: str, line: bytes, i: int) -> bytes:
    if name == "glog":
        return line
    if name == "timestamps":
        return b"2025-02-14T09:50:58.5345%02dZ " % i + line
    if name == "timestamps-ui":  # a log UI: space, milliseconds, glued to the header
        return b"2025-02-14 09:50:58.534" + line
    if name == "compose":
        return b"triton-server  | " + line
    if name == "compose-timestamps":
        return b"triton-1  | 2025-02-14T09:50:58.534567Z " + line
    if name == "log-ui":
        return b"0b4f5f3e-1111-2222-3333-444455556666 - " + line
    if name == "cri":
        return b"2025-02-14T09:50:58.534567890Z stderr F " + line
    if name == "docker-json":
        obj = {"log": line.decode() + "\n", "stream": "stderr", "time": "2025-02-14T09:50:58.5Z"}
        return json.dumps(obj).encode()
    raise AssertionError(name)


def _parse(data: bytes, framing: Framing | None = None, year: int = 2025) -> list[object]:
    return list(
        parse_log(
            data.splitlines(keepends=True),
            framing=framing or Framing(),
            year=year,
            today=date(2025, 2, 14),
        )
    )


def _strip_offsets(records: list[object]) -> list[object]:
    out = []
    for r in records:
        if isinstance(r, ev.StubOutput):
            out.append(("stub", r.text))
        else:
            fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}  # type: ignore[arg-type]
            out.append((type(r).__name__, r.header.at_ns, fields | {"header": None}))
    return out


FRAMES = {
    "timestamps": "timestamps",
    "timestamps-ui": "timestamps",
    "compose": "compose",
    "compose-timestamps": "compose",
    "log-ui": "log-ui",
    "cri": "cri",
    "docker-json": "docker-json",
}
"""A frame -> the format it is detected as."""


@pytest.mark.parametrize("name", FRAMES)
def test_a_framed_log_gives_the_bare_logs_records(name: str) -> None:
    bare = parse_bytes(b"\n".join(BARE) + b"\n", year=2025)
    lines = [_frame(name, line, i) + b"\n" for i, line in enumerate(BARE)]
    framing = Framing()
    records = _parse(b"".join(lines), framing)
    assert framing.detected == FRAMES[name]
    assert _strip_offsets(records) == _strip_offsets(bare)
    starts = [sum(len(x) for x in lines[:i]) for i in range(len(lines))]
    offsets = [r.offset if isinstance(r, ev.StubOutput) else r.header.offset for r in records]
    assert offsets == starts  # each record points at its physical line


def test_a_prefix_date_gives_the_year() -> None:
    framing = Framing()
    records = _parse(_frame("cri", STATE, 0) + b"\n", framing, year=2031)
    assert framing.year == 2025
    assert records[0].header.at_ns == parse_bytes(STATE + b"\n", year=2025)[0].header.at_ns


def test_cri_partial_lines_are_joined() -> None:
    head, tail = STATE[:60], STATE[60:]
    data = (
        b"2025-02-14T09:50:58.534567890Z stderr P " + head + b"\n"
        b"2025-02-14T09:50:58.534567891Z stderr F " + tail + b"\n"
    )
    (record,) = _parse(data)
    assert isinstance(record, ev.RequestStateChange) and record.to_state == "PENDING"
    assert record.header.offset == 0


def test_docker_json_split_lines_are_joined() -> None:
    head, tail = EXEC[:50].decode(), EXEC[50:].decode() + "\n"
    data = b"".join(
        json.dumps({"log": part, "stream": "stderr", "time": "2025-02-14T09:50:58Z"}).encode()
        + b"\n"
        for part in (head, tail)
    )
    (record,) = _parse(data)
    assert isinstance(record, ev.InstanceExecuting) and record.instance == "m_0_0"


def test_a_split_line_waits_for_its_last_piece_across_calls() -> None:
    """A live tailer may hand out the ``P`` piece in one poll and the ``F`` in the next."""
    framing = Framing()
    first = b"2025-02-14T09:50:58.534567890Z stderr P " + STATE[:60] + b"\n"
    second = b"2025-02-14T09:50:58.534567891Z stderr F " + STATE[60:] + b"\n"
    assert list(parse_log([first], framing=framing, year=2025, final=False)) == []
    (record,) = parse_log([second], framing=framing, year=2025, offset=len(first))
    assert isinstance(record, ev.RequestStateChange) and record.header.offset == 0


def test_headers_without_level_and_date_are_dated_and_read() -> None:
    data = (
        b'08:28:03.536363 149485 infer_request.cc:132] "[request id: 7] Setting state from '
        b'PENDING to EXECUTING"\n'
        b'08:28:03.636363 149485 python_be.cc:1395] "model m, instance m_0, executing 1 '
        b'requests"\n'
    )
    framing = Framing()
    records = _parse(data, framing)
    assert framing.detected == "no-date"
    assert [type(r).__name__ for r in records] == ["RequestStateChange", "InstanceExecuting"]
    assert records[0].header.offset == 0 and records[1].header.offset == data.index(b"08:28:03.63")
    assert (
        records[0].header.at_ns
        == parse_bytes(
            b"I0214 08:28:03.536363 1 infer_request.cc:132] [request id: 7] Setting state from "
            b"PENDING to EXECUTING\n",
            year=2025,
        )[0].header.at_ns
    )


def test_dateless_headers_step_a_day_at_midnight() -> None:
    data = (
        b"23:59:59.900000 1 python_be.cc:1395] model m, instance m_0, executing 1 requests\n"
        b"00:00:00.100000 1 python_be.cc:1395] model m, instance m_0, executing 1 requests\n"
    )
    a, b = _parse(data)
    assert 0 < b.header.at_ns - a.header.at_ns < 10**9


def test_a_forced_format_wins_and_unexpected_lines_pass_through() -> None:
    data = _frame("compose", STATE, 0) + b"\n" + STATE + b"\n"  # a line without the prefix
    records = _parse(data, Framing("compose"))
    assert [type(r).__name__ for r in records] == ["RequestStateChange", "RequestStateChange"]
    with pytest.raises(ValueError, match="unknown log format"):
        Framing("syslog")


def test_a_plain_log_is_untouched() -> None:
    data = b"\n".join(BARE) + b"\n"
    framing = Framing()
    assert _parse(data, framing) == parse_bytes(data, year=2025)
    assert framing.plain


# -- dialects of older releases ------------------------------------------------------------
# (the third line is two glued lines, as 21.03 wrote them: tests/fixtures/wild/29-*)
OLD = b"""I0315 10:00:00.000001 1 model_repository_manager.cc:1045] loading: m:1
I0315 10:00:01.000001 1 model_repository_manager.cc:1215] successfully loaded 'm' version 1
I0315 10:00:02.000001 1 infer_request.cc:566] [request id: 1] Setting state from EXECUTING to RELEASEDI0315 10:00:02.000101 1 infer_handler.cc:638] New request handler for ModelInferHandler, 0
I0315 10:00:03.000001 1 model_repository_manager.cc:1078] unloading: m:1
E0315 10:00:04.000001 1 python.cc:2000] Stub process is unhealthy and it will be restarted.
I0315 10:00:05.000001 1 sagemaker_server.cc:195] SageMaker request: 2 /invocations
I0315 10:00:06.000001 1 model_repository_manager.cc:1166] successfully unloaded 'm' version 1
"""


def test_older_releases_lines() -> None:
    records = parse_bytes(OLD, year=2022)
    kinds = [(type(r).__name__, getattr(r, "state", getattr(r, "protocol", ""))) for r in records]
    assert kinds == [
        ("ModelStateChange", "loading"),
        ("ModelStateChange", "loaded"),
        ("RequestStateChange", ""),  # unquoted and glued: split
        ("FrontendRequest", "grpc"),
        ("ModelStateChange", "unloading"),
        ("StubHealth", ""),
        ("FrontendRequest", "sagemaker"),
        ("ModelStateChange", "unloaded"),
    ]
    glued = OLD.index(b"I0315 10:00:02.000101")
    assert records[3].header.offset == glued


def test_compose_with_timestamps_gives_the_year() -> None:
    framing = Framing()
    _parse(_frame("compose-timestamps", STATE, 0) + b"\n", framing, year=2031)
    assert framing.year == 2025


def test_log_viewer_date_lines_and_rancher_prefixes_give_the_date() -> None:
    """As tests/fixtures/wild/05-* (a date line ending in a tab before each ``<uuid> - ``
    record) and 43-* (Rancher's ``Sun, May 29 2022 2:12:16 am | ``) have them."""
    framing = Framing()
    data = b"2023-08-29 15:03:52\t\n0b4f5f3e-1111-2222-3333-444455556666 - " + STATE[1:].replace(
        b"0214", b"I0829", 1
    )
    records = _parse(data + b"\n", framing, year=2031)
    assert framing.year == 2023 and len(records) == 1
    assert records[0].header.offset == data.index(b"0b4f")
    framing = Framing()
    _parse(b"Sun, May 29 2022 2:12:16 am | " + STATE + b"\n", framing, year=2031)
    assert framing.detected == "log-ui" and framing.date == (2022, 5, 29)
