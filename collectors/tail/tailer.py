"""Follow one log path through rename rotation, copytruncate and restarts.

Usage (the consumer decides the poll interval; ``poll`` never blocks or sleeps)::

    tailer = Tailer("/var/log/triton.log", "/var/lib/obs/triton.log.ckpt")
    while running:
        lines = tailer.poll()
        store.write(lines)          # dedups on (line.file, line.offset)
        tailer.commit(lines)        # only now may the checkpoint move past them
        time.sleep(0.2)

Guarantees and why:

* **Commit after processing.** The checkpoint moves only in ``commit``/``commit_through``,
  and only over a contiguous run of processed lines (in the order ``poll`` returned them),
  so after a SIGKILL the restarted tailer re-emits exactly the lines that were emitted but
  not committed: at-least-once, and ``(file identity, offset)`` is stable across restarts,
  so a store that dedups on it gets every line exactly once.
* **Rename rotation.** When a different file appears at ``path`` the old one stays open
  and is read to its end first; it is let go after two consecutive polls found nothing
  new in it (one poll interval of grace for a writer still finishing on the old fd).
  Its checkpoint entry stays until its lines are committed, and a restart finds a
  checkpointed file by inode among ``path``'s siblings, so a rotation while the collector
  is down loses nothing either. Every newly opened file is written to the checkpoint (at
  offset 0, no offset moves) so that it, too, can be found after a crash. When ``path``
  was rotated more than once while the tailer looked away (down, or between two polls),
  the generations in between, rotated siblings (``NAME.*``, ``NAME-*``) written after the
  last file it knew and never opened, are read whole, oldest first, before the new file.
* **Copytruncate / truncation.** Size below the read position (or changed first bytes) →
  restart at 0 under a new identity, counted in ``truncations``. The lines not yet read
  are then looked for in the copy logrotate left beside it (``NAME*``, same first line,
  at least as long as the read position) and read from there first, under the original
  identity, so the store sees the same keys it would have (``copies_drained``). This works
  while the collector runs and, from the checkpoint, after a restart.

Documented limits:

* **The copytruncate race.** logrotate copies the file, then truncates it. Lines written
  between the copy and the truncate are lost for everyone. Without a copy beside the file
  (``olddir``, compressed at once, or a plain truncate), lines of the truncated file not
  yet *emitted* when the truncate happened are lost too. Rename rotation has no such
  race; prefer it when the writer can reopen its log.
* Rotated files must stay in ``path``'s folder, uncompressed, until drained (logrotate's
  ``olddir`` or ``compress`` without ``delaycompress`` lose their unread tail: ``FileLost``).
* One path is followed: a generation rotated away under another name than ``NAME.*`` or
  ``NAME-*``, or compressed, before the tailer ever opened it is never read.
* A rotated file whose inode was recycled while the collector was down may be read from 0
  as a new file (duplicates under another identity; never a loss).
* Bytes a writer appends to a rotated file after the tailer let it go are not read, and
  a rotated file ending in an unterminated line drops it (``UnterminatedDropped``).
* A checkpoint that is missing, corrupt or from a newer version starts fresh from offset
  0 of the current file (duplicates, never a crash): ``CheckpointProblem``.
* Each ``Tailer`` owns its checkpoint file: one process per checkpoint.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import operator
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import NamedTuple

from collectors.tail.checkpoint import (
    Checkpoint,
    CheckpointEntry,
    LoadStatus,
    load_checkpoint,
    save_checkpoint,
)
from collectors.tail.events import (
    CheckpointProblem,
    CheckpointWritten,
    FileLost,
    FileOpened,
    LineTooLong,
    Rotated,
    TailError,
    TailEvent,
    TailStats,
    Truncated,
    UnterminatedDropped,
)
from collectors.tail.fingerprint import FileIdentity, find_copy, locate, matches
from collectors.tail.reader import FileReader

__all__ = ["DEFAULT_MAX_BYTES_PER_POLL", "DEFAULT_MAX_LINE_BYTES", "Line", "Tailer"]

log = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 1_048_576
DEFAULT_MAX_BYTES_PER_POLL = 4 * 1_048_576
_DRAIN_IDLE_POLLS = 2
_COMPRESSED = (".gz", ".xz", ".bz2", ".zst", ".lz4")
"""Rotated names a tailer cannot read (logrotate's ``compress``, the kubelet's older files)."""


class Line(NamedTuple):
    """One ``\\n``-terminated line (terminator kept), ``offset`` its first byte in ``file``.

    A named tuple, so that a read's lines are made by ``tuple.__new__`` in one ``map``
    (:func:`_lines`): a frozen dataclass's ``__init__`` a line, which sets each field through
    ``object.__setattr__``, was a fifth of a busy log's collection."""

    file: FileIdentity
    offset: int
    data: bytes

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def _lines(identity: FileIdentity, offsets: list[int], datas: list[bytes]) -> list[Line]:
    """Lines of ``identity`` at ``offsets`` holding ``datas``, at C speed."""
    rows = zip(itertools.repeat(identity), offsets, datas, strict=False)
    return list(map(tuple.__new__, itertools.repeat(Line), rows))


_Key = tuple[int, int, int, str]


def _key(identity: FileIdentity, offset: int) -> _Key:
    """Pending-line key. Why not ``(identity, offset)``: a dataclass re-hashes all its
    fields on every lookup, which cost more than reading the line; a str caches its hash."""
    return (offset, identity.inode, identity.dev, identity.fingerprint)


class Tailer:
    """Tail ``path``; see the module docstring for the guarantees and the limits."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        checkpoint_path: str | os.PathLike[str],
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        *,
        max_bytes_per_poll: int = DEFAULT_MAX_BYTES_PER_POLL,
        fsync: bool = True,
        on_event: Callable[[TailEvent], None] | None = None,
    ) -> None:
        if max_line_bytes < 1 or max_bytes_per_poll < 1:
            raise ValueError("max_line_bytes and max_bytes_per_poll must be positive")
        self.path = os.path.abspath(os.fspath(path))
        self.checkpoint_path = os.fspath(checkpoint_path)
        self._dir = os.path.dirname(self.path)
        self._max_line = max_line_bytes
        self._max_poll = max_bytes_per_poll
        self._fsync = fsync
        self._on_event = on_event
        self._counts = dict.fromkeys((f.name for f in fields(TailStats)), 0)
        self._draining: list[FileReader] = []  # rotated files, oldest first
        self._current: FileReader | None = None
        self._tracked: list[FileReader] = []  # everything the checkpoint may need, in order
        # Emitted, uncommitted lines in emission order: [key or None (skip marker), reader,
        # end]. The checkpoint advances over the committed prefix only.
        self._pending: deque[tuple[_Key | None, FileReader, int]] = deque()
        self._pending_keys: dict[_Key, int] = {}
        self._done: set[_Key] = set()
        self._closed = False
        loaded = load_checkpoint(self.checkpoint_path)
        if loaded.status not in (LoadStatus.OK, LoadStatus.MISSING):
            log.warning(
                "tail checkpoint %s unusable, starting fresh: %s",
                self.checkpoint_path,
                loaded.detail,
            )
            self._emit(CheckpointProblem(self.checkpoint_path, loaded.status.value, loaded.detail))
            self._counts["errors"] += 1
        self._entries: tuple[CheckpointEntry, ...] | None = loaded.checkpoint.files

    # -- public surface ---------------------------------------------------------------

    def poll(self) -> list[Line]:
        """Return the complete lines available now (at most ``max_bytes_per_poll`` read)."""
        if self._closed:
            raise ValueError("poll() on a closed Tailer")
        if self._entries is not None:
            entries, self._entries = self._entries, None
            self._resume(entries)
        self._follow_path()
        out: list[Line] = []
        budget = self._max_poll
        for reader in [*self._draining, self._current]:
            if reader is None or budget <= 0:
                break
            got, eof = self._read(reader, budget, out)
            budget -= got
            if reader is self._current:
                break
            reader.idle_polls = reader.idle_polls + 1 if got == 0 and eof else 0
            if reader.idle_polls >= _DRAIN_IDLE_POLLS:
                self._retire(reader)
            elif not eof:
                break  # old lines first: the newer file waits for the next poll
        return out

    def commit(self, lines: Iterable[Line]) -> None:
        """Mark ``lines`` processed; the checkpoint covers every line up to the first gap."""
        done, pending = self._done, self._pending_keys
        for line in lines:
            key = _key(line.file, line.offset)
            if key in pending:
                done.add(key)
        self._advance(None)

    def commit_through(self, line: Line) -> None:
        """Mark ``line`` and every line ``poll`` returned before it as processed."""
        key = _key(line.file, line.offset)
        if key in self._pending_keys:
            self._advance(key)

    def lag_bytes(self) -> int:
        """Bytes written but not read yet, rotated files still draining included: a reader
        that waits for 0 here has every line the files hold."""
        lag = 0
        for reader in [*self._draining, self._current]:
            if reader is None or reader.fd is None:
                continue
            try:
                lag += max(0, reader.size() - reader.pos)
            except OSError:
                continue
        return lag

    def stats(self) -> TailStats:
        return TailStats(**self._counts)

    def close(self) -> None:
        """Close the files. Writes nothing: uncommitted lines are re-emitted next time."""
        self._closed = True
        for reader in {id(r): r for r in [*self._tracked, *self._draining]}.values():
            reader.close()
        if self._current is not None:
            self._current.close()

    def __enter__(self) -> Tailer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- following the path -------------------------------------------------------------

    def _emit(self, event: TailEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def _error(self, op: str, path: str, err: OSError) -> None:
        self._counts["errors"] += 1
        self._emit(TailError(op, path, f"{type(err).__name__}: {err}"))

    def _open_path(self) -> int | None:
        try:
            return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None  # not there yet, or mid-rotation: wait
        except OSError as e:
            self._error("open", self.path, e)
            return None

    def _resume(self, entries: tuple[CheckpointEntry, ...]) -> None:
        """Match checkpoint entries to the file at ``path`` and to its rotated siblings."""
        fd = self._open_path()
        path_id = None
        if fd is not None:
            st = os.fstat(fd)
            path_id = (st.st_dev, st.st_ino)
        resumed: CheckpointEntry | None = None
        same_inode_other_content = False
        for e in entries:
            if path_id == (e.identity.dev, e.identity.inode):
                assert fd is not None
                if matches(fd, e.identity):
                    resumed = e
                else:
                    same_inode_other_content = True
                    copy = self._copy_of(e.identity, e.offset)
                    if copy is not None:
                        self._draining.append(copy)
                continue
            found = locate(self._dir, e.identity, skip=self.path)
            if found is None:
                self._counts["files_lost"] += 1
                self._emit(FileLost(e.path, e.identity, e.offset))
                log.warning("tail: checkpointed file %s not found, its unread tail is lost", e.path)
                continue
            rfd, rpath, same = found
            if same:
                reader = self._start(rfd, rpath, e.offset, e.identity)
            else:  # rotated, and truncated or rewritten too: what is there now is new
                self._counts["truncations"] += 1
                self._emit(Truncated(rpath, e.identity, os.fstat(rfd).st_size, e.offset))
                reader = self._start(rfd, rpath, 0, None)
            self._draining.append(reader)
        if resumed is None and self._draining:  # the checkpointed file was rotated away
            skip = {(r.dev, r.inode) for r in self._draining}
            if fd is not None:
                skip.add(path_id)  # type: ignore[arg-type]
            self._draining += self._missed(self._draining, skip)
        if fd is not None:
            if resumed is not None:
                self._current = self._start(fd, self.path, resumed.offset, resumed.identity)
            else:
                if same_inode_other_content:
                    self._counts["truncations"] += 1
                    self._emit(Truncated(self.path, entries[0].identity, os.fstat(fd).st_size, 0))
                self._current = self._start(fd, self.path, 0, None)
        self._tracked = [*self._draining, *([self._current] if self._current else [])]
        if self._tracked:
            self._write_checkpoint()

    def _start(self, fd: int, path: str, offset: int, identity: FileIdentity | None) -> FileReader:
        reader = FileReader(fd, path, offset, self._max_line, identity)
        size = reader.size()
        if size < reader.pos:  # shrank while we were away: copytruncate
            self._counts["truncations"] += 1
            self._emit(Truncated(path, reader.identity, size, reader.pos))
            reader = FileReader(fd, path, 0, self._max_line, None)
        self._emit(FileOpened(path, reader.identity, reader.pos, identity is not None))
        return reader

    def _follow_path(self) -> None:
        """Notice a new file at ``path`` (first appearance or rotation)."""
        cur = self._current
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return  # keep reading the open file (deleted or mid-rotation)
        except OSError as e:
            self._error("stat", self.path, e)
            return
        if cur is not None and (st.st_dev, st.st_ino) == (cur.dev, cur.inode):
            return
        fd = self._open_path()
        if fd is None:
            return
        new = self._start(fd, self.path, 0, None)
        if cur is not None:
            self._counts["rotations"] += 1
            self._emit(Rotated(self.path, cur.identity, new.identity))
            cur.idle_polls = 0
            self._draining.append(cur)
            skip = {(r.dev, r.inode) for r in [*self._tracked, new]}
            missed = self._missed([cur], skip)
            self._draining += missed
            self._tracked += missed
        self._current = new
        self._tracked.append(new)
        self._write_checkpoint()

    def _missed(self, known: list[FileReader], skip: set[tuple[int, int]]) -> list[FileReader]:
        """Rotated files never opened that were written after the newest of ``known``, oldest
        first, to read whole: ``path`` was rotated twice between two looks at it (while the
        collector was down, or faster than it polls), and the generation in between would
        otherwise be lost. Only ``NAME.*``/``NAME-*`` siblings, not compressed ones."""
        since = 0
        for r in known:
            if r.fd is not None:
                with contextlib.suppress(OSError):
                    since = max(since, os.fstat(r.fd).st_mtime_ns)
        if not since:
            return []
        base = os.path.basename(self.path)
        found: list[tuple[int, str]] = []
        try:
            entries = list(os.scandir(self._dir))
        except OSError as e:
            self._error("scandir", self._dir, e)
            return []
        for entry in entries:
            name = entry.name
            if not name.startswith(base) or name[len(base) : len(base) + 1] not in (".", "-"):
                continue
            if name.endswith(_COMPRESSED):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            fresh = st.st_mtime_ns > since and (st.st_dev, st.st_ino) not in skip
            if fresh and stat.S_ISREG(st.st_mode):
                found.append((st.st_mtime_ns, entry.path))
        readers = []
        for _, path in sorted(found):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError as e:
                self._error("open", path, e)
                continue
            self._counts["rotations"] += 1
            readers.append(self._start(fd, path, 0, None))
        if readers:
            log.warning("tail: %d rotated file(s) of %s were never opened; reading them whole",
                        len(readers), self.path)  # fmt: skip
        return readers

    def _retire(self, reader: FileReader) -> None:
        tail = reader.unterminated()
        if tail is not None:
            self._counts["unterminated_dropped"] += 1
            self._emit(UnterminatedDropped(reader.path, reader.identity, *tail))
        reader.close()
        self._draining.remove(reader)

    # -- reading --------------------------------------------------------------------------

    def _read(self, reader: FileReader, budget: int, out: list[Line]) -> tuple[int, bool]:
        try:
            size = reader.truncated()
            if size is not None:
                reader = self._restart_truncated(reader, size)
            res = reader.read(budget)
        except OSError as e:
            self._error("read", reader.path, e)
            return 0, False
        identity = reader.identity
        offsets, datas = list(map(_first, res.lines)), list(map(_second, res.lines))
        lines = _lines(identity, offsets, datas)
        for off, length in res.skipped:
            self._counts["lines_skipped_too_long"] += 1
            self._emit(LineTooLong(reader.path, identity, off, length))
        pending, keys = self._pending, self._pending_keys
        if res.skipped:  # merge lines and skip markers in file order into the pending queue
            marks: list[tuple[int, Line | None, int]] = [
                (off, None, off + length) for off, length in res.skipped
            ]
            items = sorted([(ln.offset, ln, ln.end) for ln in lines] + marks, key=lambda t: t[0])
            for _, ln, end in items:
                if ln is None:
                    pending.append((None, reader, end))
                else:
                    key = _key(identity, ln.offset)
                    pending.append((key, reader, end))
                    keys[key] = keys.get(key, 0) + 1
            reader.pending += len(items)
        else:
            # The same entries as above, made a list pass at a time: a busy log's poll holds
            # tens of thousands of lines, and a call and a dict update a line were most of
            # the tailer's time.
            inode, dev, fp = identity.inode, identity.dev, identity.fingerprint
            rep = itertools.repeat
            new = list(zip(offsets, rep(inode), rep(dev), rep(fp), strict=False))
            ends = list(map(operator.add, offsets, map(len, datas)))
            pending.extend(zip(new, itertools.repeat(reader), ends))
            if keys.keys().isdisjoint(new) and len(set(new)) == len(new):
                keys.update(zip(new, itertools.repeat(1)))
            else:
                for key in new:
                    keys[key] = keys.get(key, 0) + 1
            reader.pending += len(new)
        out.extend(lines)
        self._counts["lines_read"] += len(lines)
        self._counts["bytes_read"] += res.nbytes
        return res.nbytes, res.eof

    def _restart_truncated(self, reader: FileReader, size: int) -> FileReader:
        """Same fd, new incarnation from 0; the old one keeps its pending lines' bookkeeping.

        What the old incarnation still had unread is taken from its copy, if there is one:
        the copy is drained first, the truncated file's new content after it."""
        self._counts["truncations"] += 1
        self._emit(Truncated(reader.path, reader.identity, size, reader.pos))
        assert reader.fd is not None
        new = FileReader(reader.fd, reader.path, 0, self._max_line, None)
        start = reader.line_start if reader.skip_from is None else reader.pos
        copy = None if reader.copy else self._copy_of(reader.identity, start)
        reader.fd = None
        reader.gone = True
        if reader is self._current:
            self._current = new
            if copy is not None:
                self._draining.append(copy)
        else:
            at = self._draining.index(reader)
            self._draining[at : at + 1] = [r for r in (copy, new) if r is not None]
        self._tracked = [new if r is reader else r for r in self._tracked]
        if copy is not None:
            self._tracked.append(copy)
        self._write_checkpoint()  # so that a restart still recognises a rotated one
        return new

    def _copy_of(self, identity: FileIdentity, offset: int) -> FileReader | None:
        found = find_copy(self._dir, identity, offset, os.path.basename(self.path))
        if found is None:
            return None
        fd, path = found
        self._counts["copies_drained"] += 1
        reader = FileReader(fd, path, offset, self._max_line, identity, copy=True)
        self._emit(FileOpened(path, identity, offset, True))
        return reader

    # -- committing ---------------------------------------------------------------------

    def _advance(self, through: _Key | None) -> None:
        """Pop the processed prefix of ``_pending`` (everything up to ``through``, if given)."""
        pending, done, keys = self._pending, self._done, self._pending_keys
        if through is not None and pending and pending[-1][0] == through and keys[through] == 1:
            self._advance_all()
            return
        moved = False
        while pending:
            key, reader, end = pending[0]
            if through is None and key is not None and key not in done:
                break
            pending.popleft()
            reader.pending -= 1
            reader.committed = max(reader.committed, end)
            moved = True
            if key is not None:
                done.discard(key)
                if keys[key] == 1:
                    del keys[key]
                else:
                    keys[key] -= 1
                if key == through:
                    through = None  # then go on over lines already committed
        if moved:
            self._write_checkpoint()

    def _advance_all(self) -> None:
        """``_advance`` through the last line pending (a collector committing its whole poll):
        the same counts and committed offsets, a run of one file's entries at a time instead
        of a pop and a dict update a line."""
        for _, run in itertools.groupby(self._pending, key=operator.itemgetter(1)):
            entries = list(run)
            reader = entries[0][1]
            reader.pending -= len(entries)
            reader.committed = max(reader.committed, max(map(operator.itemgetter(2), entries)))
        self._pending.clear()
        self._pending_keys.clear()
        self._done.clear()
        self._write_checkpoint()

    def _write_checkpoint(self) -> None:
        live = {id(r) for r in (*self._draining, self._current) if r is not None}
        self._tracked = [
            r for r in self._tracked if not r.gone and (id(r) in live or r.pending > 0)
        ]
        entries = []
        for r in self._tracked:
            identity = r.identity
            if not identity.complete:  # nothing committed yet: recognise it at offset 0
                entries.append(CheckpointEntry(r.path, identity, 0))
            else:
                entries.append(CheckpointEntry(r.path, identity, r.committed))
        try:
            save_checkpoint(self.checkpoint_path, Checkpoint(tuple(entries)), self._fsync)
        except OSError as e:
            self._error("checkpoint", self.checkpoint_path, e)
            return
        self._counts["checkpoint_writes"] += 1
        self._emit(CheckpointWritten(self.checkpoint_path, len(entries)))
