"""``python -m benchmarks``: run every benchmark, one JSON line each."""

from __future__ import annotations

import importlib
import sys

MODULES = (
    "metrics_parse",
    "log_parse",
    "ingest_log",
    "ingest_bundle",
    "collect_log",
    "collect_spans",
    "store_read",
    "store_size",
    "analyze_bundle",
    "watch_pass",
    "bls_overhead",
    "bls_throughput",
    "detection_delay",
)
_NO_ARGV = ("metrics_parse", "bls_overhead")


def main() -> int:
    failed = 0
    for name in MODULES:
        module = importlib.import_module(f"benchmarks.{name}")
        try:
            module.main() if name in _NO_ARGV else module.main([])
        except Exception as err:
            print(f'{{"bench": "{name}", "error": {str(err)!r}}}', file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
