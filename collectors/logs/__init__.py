"""Triton's verbose log as typed events: ``parse_lines`` (fast) and its regex reference."""

from collectors.logs.parser import MAX_TEXT, Event, ParseStats, parse_bytes, parse_lines

__all__ = ["MAX_TEXT", "Event", "ParseStats", "parse_bytes", "parse_lines"]
