"""Triton's ``/v2/models/stats``: a pure parser and a polling collector."""

from collectors.stats.collector import StatsCollector, StatsScrape, stats_url
from collectors.stats.parser import (
    ParsedStats,
    StatsParseError,
    parse_model_stats,
    parse_model_stats_lenient,
)

__all__ = [
    "ParsedStats",
    "StatsCollector",
    "StatsParseError",
    "StatsScrape",
    "parse_model_stats",
    "parse_model_stats_lenient",
    "stats_url",
]
