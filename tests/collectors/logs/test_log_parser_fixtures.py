"""Whole real recordings: fast parser == regex reference, offsets exact, key events present."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from collectors.logs import ParseStats, parse_bytes
from observability.events import (
    FrontendCancellation,
    ModelStateChange,
    RequestStateChange,
    StubHealth,
    StubOutput,
)
from tests.collectors.logs.reference import parse_lines_regex

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
LOGS = sorted(FIXTURES.glob("*.log"))


def _load(name: str) -> tuple[bytes, list[object]]:
    data = (FIXTURES / name).read_bytes()
    return data, list(parse_bytes(data, year=2026))


def test_fixtures_exist() -> None:
    assert len(LOGS) >= 5


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_fast_and_reference_agree_on_every_line(path: Path) -> None:
    data = path.read_bytes()
    fast_stats, ref_stats = ParseStats(), ParseStats()
    fast = parse_bytes(data, year=2026, stats=fast_stats)
    ref = list(parse_lines_regex(data.splitlines(keepends=True), year=2026, stats=ref_stats))
    assert fast == ref
    assert fast_stats.lines == ref_stats.lines == len(data.splitlines())
    assert fast_stats.resume_offset == len(data)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_offsets_are_byte_exact(path: Path) -> None:
    data = path.read_bytes()
    for rec in parse_bytes(data, year=2026):
        if isinstance(rec, StubOutput):
            assert data[rec.offset :].startswith(rec.text.encode()[:20])
        else:
            h = rec.header
            assert (
                data[h.offset : h.offset + 200]
                .split(b"]")[0]
                .endswith(f"{h.source_file}:{h.source_line}".encode())
            )


def test_session_request_lifecycle_and_bls_children() -> None:
    _, recs = _load("glog_2.51_session.log")
    states = [r for r in recs if isinstance(r, RequestStateChange)]
    released = {r.request_id for r in states if r.to_state == "RELEASED"}
    assert {"req-plain-1", "req-bls-1", "req-bls-1-child", "grpc-slow-1", "req-ens-1"} <= released
    assert any(r.request_id == "" for r in states)  # <id_unknown>, BLS child without id


def test_session_model_states() -> None:
    _, recs = _load("glog_2.51_session.log")
    ms = Counter((r.model, r.state) for r in recs if isinstance(r, ModelStateChange))
    assert ms[("ens_bad", "failed")] == 2
    assert ms[("broken", "failed")] == 4  # detailed + summary line, twice (startup, API load)
    assert ms[("plain", "unloaded")] == 2 and ms[("plain", "loading")] == 2
    bad = next(r for r in recs if isinstance(r, ModelStateChange) and r.model == "ens_bad")
    assert "is not written" in bad.detail


def test_session_grpc_cancellation_and_stub_tracebacks() -> None:
    _, recs = _load("glog_2.51_session.log")
    assert [r.handler for r in recs if isinstance(r, FrontendCancellation)] == ["ModelInferHandler"]
    texts = [r.text for r in recs if isinstance(r, StubOutput)]
    assert texts.count("Task exception was never retrieved") == 2
    assert sum(t.startswith("Exception in callback _boom") for t in texts) == 2
    assert "Error: Failed to initialize NVML" in texts
    assert not any(t.startswith(("name:", "+---", "|", "original inputs")) for t in texts)


def test_glued_stub_print_is_split_from_the_triton_line() -> None:
    _, recs = _load("glog_2.51_glued.log")
    glued = [r for r in recs if isinstance(r, StubOutput) and r.text == "gluer progress 50%"]
    assert len(glued) == 2
    after = recs[recs.index(glued[0]) + 1]
    assert after.header.source_file == "infer_response.cc"  # type: ignore[union-attr]
    assert after.header.offset == glued[0].offset + len(b"gluer progress 50%")  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["glog_2.51_stub_death.log", "iso8601_2.51_stub_death.log"])
def test_stub_death_is_seen_through_the_bls_parent(name: str) -> None:
    _, recs = _load(name)
    assert [r.instance for r in recs if isinstance(r, StubHealth)] == ["plain_0_0"]


def test_iso_and_glog_recordings_give_the_same_story() -> None:
    _, glog = _load("glog_2.51_stub_death.log")
    _, iso = _load("iso8601_2.51_stub_death.log")
    # two runs of the same script: thread interleaving differs, the tally does not
    assert Counter(type(r) for r in glog) == Counter(type(r) for r in iso)


def test_legacy_unquoted_multiline_prepared() -> None:
    _, legacy = _load("legacy_unquoted_derived.log")
    data = (FIXTURES / "glog_2.51_session.log").read_bytes()
    quoted = parse_bytes(data, year=2026)

    def key(r: object) -> object:
        return (type(r), getattr(r, "request_id", None), getattr(r, "model", None))

    legacy_keys = [key(r) for r in legacy if not isinstance(r, StubOutput)]
    assert not any(isinstance(r, StubOutput) for r in legacy)
    quoted_keys = [key(r) for r in quoted if not isinstance(r, StubOutput)]
    assert all(k in quoted_keys for k in legacy_keys)
