"""The catalogue against pages recorded from a real Triton: nothing missing, nothing wrong."""

from __future__ import annotations

import csv

import pytest
from promcompare import FIXTURES

from collectors.metrics.catalogue import CATALOGUE_PATH, catalogue, describe
from collectors.metrics.parser import parse_metrics_lenient
from observability.events import MetricType

PAGES = sorted(p.name for p in FIXTURES.glob("*.prom"))
CUSTOM_PREFIX = "demo_"
"""Families our test model publishes through pb_utils.MetricFamily: not Triton's."""


def _triton_families(name: str) -> dict[str, tuple[MetricType, str]]:
    page = parse_metrics_lenient((FIXTURES / name).read_text(encoding="utf-8"))
    return {f.name: (f.type, f.help) for f in page.families if not f.name.startswith(CUSTOM_PREFIX)}


def test_fixtures_exist() -> None:
    assert len(PAGES) >= 3


@pytest.mark.parametrize("name", PAGES)
def test_every_family_on_a_real_page_is_catalogued(name: str) -> None:
    families = _triton_families(name)
    assert families
    missing = sorted(set(families) - set(catalogue()))
    assert missing == []
    for family, (mtype, help_text) in families.items():
        entry = catalogue()[family]
        assert entry.type is mtype, family
        assert entry.help == help_text, family


def test_every_triton_family_is_triton_prefixed() -> None:
    assert all(name.startswith("nv_") for name in catalogue())


def test_catalogue_rows_are_complete_and_unique() -> None:
    with CATALOGUE_PATH.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len({r["name"] for r in rows})
    for row in rows:
        assert row["unit"] and row["help"] and row["meaning"] and row["since"], row["name"]
        MetricType(row["type"])


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("nv_inference_request_success", "nv_inference_request_success"),
        ("nv_inference_queue_summary_us_sum", "nv_inference_queue_summary_us"),
        ("nv_inference_queue_summary_us_count", "nv_inference_queue_summary_us"),
        (
            "nv_inference_first_response_histogram_ms_bucket",
            "nv_inference_first_response_histogram_ms",
        ),
        ("nv_inference_queue_summary_us_bucket", None),  # summaries have no buckets
        ("nv_inference_count_sum", None),  # counters have no series
        ("nv_inference_request_success_total", None),  # Triton never writes _total
        ("demo_custom_calls", None),
    ],
)
def test_describe(name: str, family: str | None) -> None:
    entry = describe(name)
    assert (entry.name if entry else None) == family


def test_describe_units_for_latency_ratios() -> None:
    entry = describe("nv_inference_queue_duration_us")
    assert entry is not None
    assert entry.type is MetricType.COUNTER
    assert entry.unit == "us"
