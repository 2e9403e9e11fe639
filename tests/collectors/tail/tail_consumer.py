"""A collector process for the SIGKILL test: record each line, then commit its batch.

``python tail_consumer.py LOG CHECKPOINT RECORDS`` appends ``<fingerprint> <offset> <data>``
per line to RECORDS and runs until killed. Each record is one ``write(2)`` on an O_APPEND
descriptor, done before the commit: a SIGKILL can fall between two records (the batch is
re-emitted with the same keys) but never inside one. A buffered file object may split a
large batch over several syscalls, and a kill between them tore a record in a CI run.
"""

from __future__ import annotations

import os
import sys
import time

from collectors.tail import Tailer

BATCH_BYTES = 4096


def main(log: str, checkpoint: str, records: str) -> None:
    tailer = Tailer(log, checkpoint, max_bytes_per_poll=BATCH_BYTES)
    out = os.open(records, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    while True:
        lines = tailer.poll()
        if not lines:
            time.sleep(0.002)
            continue
        for ln in lines:
            os.write(out, b"%s %d %s" % (ln.file.fingerprint.encode(), ln.offset, ln.data))
        tailer.commit(lines)


if __name__ == "__main__":
    main(*sys.argv[1:4])
