"""The pure half of a scan: find the lines that can matter and parse them, here or in a helper.

Reading a transcript's new bytes, finding the lines that hold ``memory_`` and
parsing them (:func:`prescan`) depends on nothing but those bytes: no database,
no other file. It is also most of a scan's cost. So a large backlog — a first
scan, a scan after weeks off — is split between two processes:
:class:`Helper` forks once, and the child prescans the *last* transcripts of the
scan while the parent prescans and commits the first ones; the parent then
commits the child's share in order. What the scanner does with the parsed lines
(matching answers to calls, the database) stays in one process and in one
order, so the counts are the same whether or not a helper ran.

The helper is an optimisation that may fail harmlessly: if it cannot be forked,
dies or answers garbage, the parent prescans its share itself. It never touches
the state database, and its answer travels as ``marshal`` bytes over a pipe
(plain tuples; a tenth of what pickling the event objects costs).

Failure cases, named:

- *Helper killed or crashed*: its pipe ends early or its exit status is not 0;
  the parent reads its share itself.
- *Parent killed*: the helper's write to the pipe fails (nobody reads it) and it
  exits; it never writes anything else, so nothing is left half done.
- *File changed while the helper reads it*: the helper reads through the file
  descriptor the parent opened and judged (same inode); bytes appended meanwhile
  are read or not, exactly as in a single-process scan.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from .parser import ParsedLine, ResultPath, ToolCall, ToolResult, parse_line
from .tailer import Region, lines_containing, read_regions

NEEDLE = b"memory_"
# The helper's share of the backlog's bytes: the parent also commits everything, so it
# takes less than half of the reading.
HELPER_SHARE = 0.65
# The helper reads through descriptors the parent holds open: no more than this many.
HELPER_MAX_FILES = 256


class Candidate(NamedTuple):
    """One line holding the needle: its file offsets (``\\n`` excluded) and what it says."""

    begin: int
    end: int
    parsed: ParsedLine


class Prescanned(NamedTuple):
    """What one region of complete lines (file bytes ``[start, end)``) holds."""

    start: int
    end: int
    oversized: int
    lines: tuple[Candidate, ...]


def prescan_region(region: Region) -> Prescanned:
    """Find and parse the needle lines of one region."""
    data, start = region.data, region.start
    lines = tuple(
        Candidate(start + b, start + e, parse_line(data[b:e]))
        for b, e in lines_containing(data, NEEDLE, region.size)
    )
    return Prescanned(region.start, region.end, region.oversized, lines)


def prescan(
    fd: int, offset: int, *, chunk_bytes: int, max_line_bytes: int
) -> Iterator[tuple[Prescanned, bytes]]:
    """Prescan a file from ``offset`` to its end, region by region, with each region's bytes."""
    for region in read_regions(fd, offset, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes):
        yield prescan_region(region), region.data


class Job(NamedTuple):
    """A file for the helper: an open descriptor and where to start reading."""

    fd: int
    offset: int


def helper_share(pending: Sequence[int], min_bytes: int) -> int:
    """Index from which the helper takes the files, given each file's unread bytes.

    The helper takes a suffix of the files in scan order (so the parent can commit
    its own prefix while the helper works) holding about ``HELPER_SHARE`` of the
    bytes. ``len(pending)`` means no helper: less than ``min_bytes`` to read in all
    (below that a second process costs more than it saves; 0 = never), or no split
    that gives the helper a fair share.
    """
    total = sum(pending)
    none = len(pending)
    if min_bytes <= 0 or total < min_bytes:
        return none
    want, taken, files, k = total * HELPER_SHARE, 0, 0, none
    while k > 1 and files < HELPER_MAX_FILES:
        nxt = pending[k - 1]
        if abs(taken + nxt - want) > abs(taken - want):
            break  # taking the next file would move the split further from the aim
        k -= 1
        taken += nxt
        files += nxt > 0
    # Far from the aim either way (one file holds most of the bytes), a helper only adds a fork.
    fair = total * HELPER_SHARE / 2 <= taken <= total * (1 + HELPER_SHARE) / 2
    return k if fair else none


def can_fork() -> bool:
    """Forking is safe here: a POSIX system and no other thread (a lock could be held)."""
    import threading  # here, not at the top: a no-op scan never gets this far

    return (
        hasattr(os, "fork")
        and sys.platform.startswith(("linux", "darwin"))
        and threading.active_count() == 1
    )


class Helper:
    """A forked child prescanning ``jobs``; :meth:`results` collects its answer.

    Create it, do other work, then call :meth:`results` exactly once (or
    :meth:`close` to give up on it). A result is None for any job the child did
    not answer: the caller prescans those itself.
    """

    def __init__(self, jobs: Sequence[Job], *, chunk_bytes: int, max_line_bytes: int) -> None:
        self._count = len(jobs)
        self._pid = 0
        self._read_fd = -1
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:  # the child: prescan, answer, exit without running any cleanup
            code = 1
            try:
                _default_signals()  # the parent's handlers (a daemon's SIGTERM) are not ours
                os.close(read_fd)
                answer = marshal.dumps([_flatten(job, chunk_bytes, max_line_bytes) for job in jobs])
                view = memoryview(answer)
                while view:
                    view = view[os.write(write_fd, view) :]
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid, self._read_fd = pid, read_fd

    def results(self) -> list[list[Prescanned] | None]:
        """The child's prescans, one per job (None where it gave none)."""
        if not self._pid:
            return [None] * self._count
        chunks: list[bytes] = []
        try:
            while chunk := os.read(self._read_fd, 1 << 20):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            status = self._reap()
        if status != 0 or not chunks:
            return [None] * self._count
        try:
            answer = marshal.loads(b"".join(chunks))
            restored = [_restore(regions) for regions in answer]
        except (ValueError, EOFError, TypeError, IndexError):
            return [None] * self._count
        if len(restored) != self._count:
            return [None] * self._count
        return restored

    def close(self) -> None:
        """Stop the child if it is still running (the scan failed or was interrupted)."""
        if self._pid:
            import signal

            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            self._reap()

    def _reap(self) -> int:
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
        pid, self._pid = self._pid, 0
        if not pid:
            return -1
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return -1
        return os.waitstatus_to_exitcode(status)


def _default_signals() -> None:
    """SIGTERM, SIGINT and SIGHUP end the helper: it has nothing to drain or reload."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


# ------------------------------------------------------------------ transport as plain tuples


def _flatten(job: Job, chunk_bytes: int, max_line_bytes: int) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for pre, _ in prescan(
        job.fd, job.offset, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes
    ):
        lines = tuple(
            (c.begin, c.end, c.parsed.malformed, tuple(_flat_event(e) for e in c.parsed.events))
            for c in pre.lines
        )
        out.append((pre.start, pre.end, pre.oversized, lines))
    return out


def _flat_event(ev: ToolCall | ToolResult) -> tuple[object, ...]:
    if type(ev) is ToolCall:
        return (0, *ev)
    assert isinstance(ev, ToolResult)
    return (1, ev.call_id, ev.tool, tuple(map(tuple, ev.paths)), ev.ts, ev.recovered, ev.shape)


def _restore(regions: list[tuple]) -> list[Prescanned]:  # type: ignore[type-arg]
    new = tuple.__new__
    out: list[Prescanned] = []
    for start, end, oversized, lines in regions:
        cands = tuple(
            Candidate(begin, stop, ParsedLine(tuple(_event(e) for e in events), malformed))
            for begin, stop, malformed, events in lines
        )
        out.append(new(Prescanned, (start, end, oversized, cands)))
    return out


def _event(flat: tuple) -> ToolCall | ToolResult:  # type: ignore[type-arg]
    new = tuple.__new__
    if flat[0] == 0:
        return new(ToolCall, flat[1:])
    _, call_id, tool, paths, ts, recovered, shape = flat
    return ToolResult(call_id, tool, tuple(new(ResultPath, p) for p in paths), ts, recovered, shape)
