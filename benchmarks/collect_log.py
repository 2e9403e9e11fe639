"""A busy log as ``collect`` and ``watch`` store it: lines/s through the live path.

What it runs is the collector's own loop over a file a Triton wrote faster than it was read:
the tailer's polls (``LogCollector.collect``: read, parse), each poll's batch written with
``Store.write`` as the runner writes it (outside a bulk write: blocks for a block's worth or
more, ``staged`` rows below), the tailer's commit, then the store's compaction. The baseline
is parsing the same lines alone in the same process. Times are CPU seconds: this shared
machine's wall clock wanders by half.
Run: ``python -m benchmarks.collect_log [--lines N]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

from benchmarks.log_parse import against_parsing, parse_alone, synthesise
from collectors.logs.collector import LogCollector
from observability.store import Store

__all__ = ["main"]


def _collect(log: Path, work: Path) -> tuple[float, int]:
    """CPU seconds to collect and store all of ``log``, and the records stored."""
    collector = LogCollector(log, work / "checkpoint.json")
    stored = 0
    with Store(work / "store.db") as store:
        gc.collect()
        t0 = time.process_time()
        while batches := collector.collect():
            for batch in batches:
                stored += store.write(batch.events, source=batch.source).inserted
            collector.commit()
        store.compact()
        cpu = time.process_time() - t0
    collector.close()
    return cpu, stored


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=300_000)
    args = parser.parse_args(argv)
    lines = synthesise(args.lines)
    n_records, parse_s = parse_alone(lines, time.process_time)
    n_lines = len(lines)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log = work / "triton.log"
        log.write_bytes(b"".join(lines))
        del lines  # a collector holds no list of the file's lines: neither may the timing
        cpu, stored = _collect(log, work)
    if stored != n_records:
        raise SystemExit(f"the collector stored {stored} records, the parser gave {n_records}")
    return against_parsing(
        "collect_log_lines", "lines/s (CPU)", n_lines, cpu, parse_s, records=n_records
    )


if __name__ == "__main__":
    main()
