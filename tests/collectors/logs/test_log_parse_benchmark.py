"""The benchmark runs, agrees with the reference and prints its one JSON line."""

from __future__ import annotations

import json

import pytest

from benchmarks.log_parse import main, synthesise
from collectors.logs import parser


def test_synthetic_log_has_unique_request_ids() -> None:
    lines = synthesise(3000)
    assert len(lines) == 3000
    assert any(b"request id: r1-plain-1]" in ln for ln in lines)


def test_benchmark_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    result = main(["--lines", "4000", "--baseline-lines", "2000", "--repeat", "1"])
    out = json.loads(capsys.readouterr().out.splitlines()[0])
    assert out == result
    assert set(out) == {"bench", "value", "unit", "baseline", "ratio", "compiled", "python_path"}
    assert out["bench"] == "log_parse_lines" and out["unit"] == "lines/s"
    assert out["compiled"] is (parser._SCAN is not None)
    assert out["python_path"] > 0 or not out["compiled"]
