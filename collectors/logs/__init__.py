"""Triton's verbose log as typed events: ``parse_lines``.

Its regex yardstick, used by tests and benchmarks only, is ``tests/collectors/logs/reference.py``.
"""

from collectors.logs.parser import MAX_TEXT, Event, ParseStats, parse_bytes, parse_lines

__all__ = ["MAX_TEXT", "Event", "ParseStats", "parse_bytes", "parse_lines"]
