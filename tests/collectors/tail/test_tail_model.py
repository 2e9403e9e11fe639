"""Model-based test of the tailer: random writes, rotations, truncations, polls, commits and
crashes against a model of what was written, asserting nothing is lost or duplicated.

The consumer in the model records lines and commits them in one step (a prefix of what it
has received, as a real consumer does per batch); "crash" drops what it received but had
not committed and starts a new ``Tailer`` from the checkpoint.

What may be lost — the documented copytruncate race, and nothing else:

* at a copytruncate (or plain truncate), the lines of the truncated file that the tailer
  had not yet emitted (their bytes now exist only in the copy, which is not tailed);
* lines of a truncated file that were emitted but not committed when a crash happens
  (the restarted tailer cannot re-read bytes that no longer exist).

Lines longer than ``MAX_LINE`` must be skipped (never emitted); partial lines abandoned by
a rotation or truncation are not lines. One precondition mirrors a documented limit: a
file is rotated away only after the tailer has opened it once (a file created and rotated
away between two polls is invisible to a single-path tailer).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from collectors.tail import FileIdentity, Line, Tailer
from tests.hypothesis_profiles import examples

MAX_LINE = 64
POLL_BUDGET = 97  # small and odd: lines straddle reads, polls are cut mid-file

fillers = st.binary(max_size=100).map(lambda b: b.replace(b"\n", b"\xff"))


class TailMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="tail-model-"))
        self.log = self.dir / "triton.log"
        self.ckpt = self.dir / "ckpt.json"
        self.tailer = self._new_tailer()
        self.n = 0
        self.inc: int | None = None  # incarnation of the file at the path (None: no file)
        self.incs = 0
        self.size = 0
        self.seen = False  # the tailer has opened the current incarnation
        self.partial: tuple[bytes, int] | None = None  # (whole line, bytes written so far)
        self.written: dict[bytes, tuple[int, int]] = {}  # line -> (incarnation, offset)
        self.inc_lines: dict[int, list[bytes]] = {}
        self.too_long: set[bytes] = set()
        self.gone: set[int] = set()
        self.received: list[Line] = []
        self.collected: dict[bytes, Line] = {}
        self.lossable: set[bytes] = set()
        self.identity_inc: dict[FileIdentity, int] = {}
        self.inc_identity: dict[int, FileIdentity] = {}

    def _new_tailer(self) -> Tailer:
        return Tailer(
            self.log,
            self.ckpt,
            max_line_bytes=MAX_LINE,
            max_bytes_per_poll=POLL_BUDGET,
            fsync=False,
        )

    # -- the writer ------------------------------------------------------------------

    def _line(self, filler: bytes) -> bytes:
        self.n += 1
        return b"L%06d " % self.n + filler + b"\n"

    def _append(self, data: bytes) -> int:
        if self.inc is None:
            self.incs += 1
            self.inc, self.size, self.seen = self.incs, 0, False
            self.inc_lines[self.inc] = []
        with open(self.log, "ab") as f:
            f.write(data)
        at = self.size
        self.size += len(data)
        return at

    def _record(self, line: bytes, offset: int) -> None:
        if len(line) > MAX_LINE:
            self.too_long.add(line)
        else:
            assert self.inc is not None
            self.written[line] = (self.inc, offset)
            self.inc_lines[self.inc].append(line)

    @precondition(lambda self: self.partial is None)
    @rule(filler=st.lists(fillers, min_size=1, max_size=4))
    def write_lines(self, filler: list[bytes]) -> None:
        lines = [self._line(f) for f in filler]
        at = self._append(b"".join(lines))
        for line in lines:
            self._record(line, at)
            at += len(line)

    @precondition(lambda self: self.partial is None)
    @rule(filler=fillers, cut=st.integers(min_value=1, max_value=200))
    def write_partial(self, filler: bytes, cut: int) -> None:
        line = self._line(filler)
        k = min(cut, len(line) - 1)
        self._append(line[:k])
        self.partial = (line, k)

    @precondition(lambda self: self.partial is not None)
    @rule()
    def complete_partial(self) -> None:
        assert self.partial is not None
        line, k = self.partial
        self.partial = None
        at = self._append(line[k:]) - k
        self._record(line, at)

    @precondition(lambda self: self.inc is not None and self.seen)
    @rule(create_new=st.booleans())
    def rotate_by_rename(self, create_new: bool) -> None:
        os.rename(self.log, self.dir / f"triton.log.r{self.n}.{self.incs}")
        self.inc, self.partial = None, None
        if create_new:
            self._append(b"")

    def _truncated(self) -> None:
        assert self.inc is not None
        pending = {ln.data for ln in self.received}
        for line in self.inc_lines[self.inc]:
            if line not in self.collected and line not in pending:
                self.lossable.add(line)  # not emitted before the truncate: the race
        self.gone.add(self.inc)
        os.truncate(self.log, 0)
        self.incs += 1
        self.inc, self.size, self.partial = self.incs, 0, None
        self.inc_lines[self.inc] = []

    @precondition(lambda self: self.inc is not None)
    @rule()
    def copytruncate(self) -> None:
        shutil.copyfile(self.log, self.dir / f"copy.{self.n}.{self.incs}")
        self._truncated()

    @precondition(lambda self: self.inc is not None)
    @rule()
    def truncate(self) -> None:
        self._truncated()

    # -- the consumer ------------------------------------------------------------------

    def _check(self, line: Line) -> None:
        assert line.data not in self.too_long, f"over-long line emitted: {line}"
        assert line.data in self.written, f"phantom line: {line}"
        inc, offset = self.written[line.data]
        assert line.offset == offset, (line, offset)
        assert self.identity_inc.setdefault(line.file, inc) == inc, "identity shared"
        assert self.inc_identity.setdefault(inc, line.file) == line.file, "identity changed"
        assert line.data not in self.collected, f"duplicate of a committed line: {line}"

    @rule()
    def poll(self) -> None:
        lines = self.tailer.poll()
        if self.inc is not None:
            self.seen = True
        pending = {ln.data for ln in self.received}
        for line in lines:
            self._check(line)
            assert line.data not in pending, f"emitted twice: {line}"
            pending.add(line.data)
        self.received += lines

    @precondition(lambda self: self.received)
    @rule(data=st.data(), through=st.booleans())
    def commit(self, data: st.DataObject, through: bool) -> None:
        k = data.draw(st.integers(min_value=1, max_value=len(self.received)), label="k")
        batch, self.received = self.received[:k], self.received[k:]
        for line in batch:
            self.collected[line.data] = line
        if through:
            self.tailer.commit_through(batch[-1])
        else:
            self.tailer.commit(batch)

    @rule()
    def crash_and_restart(self) -> None:
        for line in self.received:
            if self.written[line.data][0] in self.gone:
                self.lossable.add(line.data)
        self.received = []
        self.tailer.close()  # fds only; close() writes nothing, like a SIGKILL
        self.tailer = self._new_tailer()

    @invariant()
    def stats_are_sane(self) -> None:
        s = self.tailer.stats()
        assert s.errors == 0 and s.files_lost == 0, s

    def teardown(self) -> None:
        try:
            self._drain_and_check()
        finally:
            self.tailer.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _drain_and_check(self) -> None:
        empty = 0
        while empty < 3:
            self.poll()
            if self.received:
                empty = 0
                self.collected.update((ln.data, ln) for ln in self.received)
                self.tailer.commit(self.received)
                self.received = []
            else:
                empty += 1
        missing = set(self.written) - set(self.collected)
        assert missing <= self.lossable, f"lost outside the copytruncate race: {missing}"


TailMachine.TestCase.settings = settings(
    max_examples=examples(150),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tail_model = TailMachine.TestCase
