"""A collector process for the SIGKILL test: record each line, then commit its batch.

``python tail_consumer.py LOG CHECKPOINT RECORDS`` appends ``<fingerprint> <offset> <data>``
per line to RECORDS (flushed to the OS before the commit, so a SIGKILL cannot lose a
record that was committed) and runs until killed.
"""

from __future__ import annotations

import sys
import time

from collectors.tail import Tailer

BATCH_BYTES = 4096


def main(log: str, checkpoint: str, records: str) -> None:
    tailer = Tailer(log, checkpoint, max_bytes_per_poll=BATCH_BYTES)
    with open(records, "ab") as out:
        while True:
            lines = tailer.poll()
            if not lines:
                time.sleep(0.002)
                continue
            out.write(
                b"".join(
                    b"%s %d %s" % (ln.file.fingerprint.encode(), ln.offset, ln.data) for ln in lines
                )
            )
            out.flush()
            tailer.commit(lines)


if __name__ == "__main__":
    main(*sys.argv[1:4])
