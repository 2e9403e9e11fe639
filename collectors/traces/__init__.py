"""Triton trace-mode files (``triton,file=F``): parse, find rollovers, build BLS trees."""

from collectors.traces.collector import TraceCollectorCounters, TraceFileCollector
from collectors.traces.files import rollover_index, trace_files
from collectors.traces.parser import (
    ParsedTraceFile,
    TraceParseError,
    parse_trace_file,
    parse_trace_file_lenient,
    spans_from_records,
)
from collectors.traces.tree import TraceTree, build_trace_tree

__all__ = [
    "ParsedTraceFile",
    "TraceCollectorCounters",
    "TraceFileCollector",
    "TraceParseError",
    "TraceTree",
    "build_trace_tree",
    "parse_trace_file",
    "parse_trace_file_lenient",
    "rollover_index",
    "spans_from_records",
    "trace_files",
]
