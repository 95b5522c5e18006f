"""The pure half of a scan: find the lines that can matter and parse them, here or in a helper.

Finding the lines that hold ``memory_`` and parsing them (:func:`prescan`) depends on nothing
but a transcript's bytes, and is most of a scan's cost. So a large backlog is shared by two
processes: :class:`Helper` forks once, and the child prescans the last transcripts of the scan,
answering file by file, while the parent prescans and commits the first ones and then commits
the child's answers in order. What the scanner does with the parsed lines stays in one process
and one order, so the rows written are the same whether or not a helper ran.

The helper may fail harmlessly: if it cannot be forked, dies or answers garbage, the parent
prescans the rest of its share itself. It never touches the state database; its answers travel
over a pipe as ``marshal`` bytes of plain tuples, read by the lengths and indexes
:mod:`.events` names.

Failure cases, named:

- *Helper killed or crashed*: its pipe ends before the next answer is whole; the
  answers already taken were whole, and the parent reads the rest itself.
- *Parent killed*: the helper's next write to the pipe fails (nobody reads it)
  and it exits; it never writes anything else, so nothing is left half done.
- *File changed while the helper reads it*: the parent judged the file (its
  inode, its first bytes, where to start) before forking; the helper opens it by
  path and reads it only if it is still that file (same device, inode and first
  bytes), else it answers "not done" and the parent reads it. Bytes appended
  meanwhile are read or not, exactly as in a single-process scan.

Neither process holds a descriptor per file of the helper's share (each opens
one file at a time), so the helper takes its share of a backlog of any size.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import NamedTuple

from ..fsutil import write_all
from .calls import answers
from .events import CALL_FIELDS, ParsedLine, ToolCall, ToolResult
from .parser import parse
from .tailer import Region, head_hash, lines_containing, read_regions

NEEDLE = b"memory_"
# A failed code-mode cell's result names no memory tool, yet it ends the cell (its inner calls'
# hits are taken back). Found by id after the needle lines, it would be applied after a later
# cell's lines in the same region; so where the needle lines tell of a cell (_tells_of_cells),
# the lines holding this are needle lines too, applied in file order.
CELL_NEEDLE = b"tool_search_code"
# A user message (``"role":"user"``, with any spacing), read besides the needle's lines: whose
# turn it starts (the user's, a heartbeat's, a cron job's) decides whether the lookups count.
USER_NEEDLE = b'"user"'
# The helper's share of the backlog's bytes: the parent also commits every file, so the helper
# reads most (docs/benchmarks.md, "The scanner's constants").
HELPER_SHARE = 0.68
# The helper is worth forking only when another core can run it: at most this much load on
# the others (the 1-minute average, and what is runnable right now besides this process).
FREE_CORE_LOAD = 0.5

_new = tuple.__new__  # builds a named tuple in one C call (its own __new__ is Python)


class Candidate(NamedTuple):
    """One line holding the needle: its file offsets (``\\n`` excluded) and what it says."""

    begin: int
    end: int
    parsed: ParsedLine


class IdSearch(NamedTuple):
    """Lines of a region holding the id of a call made earlier in the same file, unanswered.

    An answer that does not name its tool is found by its call's id; the helper searches so
    that the parent need not read the region again: from ``start`` (the region's start, or the
    end of the call's line) to ``stop`` (the end of the answering line, or the region's end).
    ``lines`` are the lines found, in order, needle lines left out.
    """

    call_id: str
    start: int
    stop: int
    lines: tuple[Candidate, ...]


class Prescanned(NamedTuple):
    """What one region of complete lines (file bytes ``[start, end)``) holds."""

    start: int
    end: int
    oversized: int
    lines: tuple[Candidate, ...]
    by_id: tuple[IdSearch, ...] = ()  # filled by the helper only (see IdSearch)


def prescan_region(region: Region) -> Prescanned:
    """Find and parse the needle lines of one region."""
    data, start = region.data, region.start
    view = memoryview(data)  # the line handed to the parser without a copy of its bytes
    spans: Iterable[tuple[int, int]] = lines_containing(data, NEEDLE, region.size)
    find = data.find
    users = [  # (Claude Code's tool results come as user messages: answers, no turn)
        (b, e)
        for b, e in lines_containing(data, USER_NEEDLE, region.size)
        if find(b'"tool_result"', b, e) < 0
    ]
    if users:  # (a user message starts a turn: see .turn_kinds; some hold the needle too)
        spans = sorted({*spans, *users})
    lines = tuple(_new(Candidate, (start + b, start + e, parse(view[b:e]))) for b, e in spans)
    if _tells_of_cells(lines):  # (a search more, in the few regions that need it)
        have = {line.begin for line in lines}
        more = [
            _new(Candidate, (start + b, start + e, parse(view[b:e])))
            for b, e in lines_containing(data, CELL_NEEDLE, region.size)
            if start + b not in have
        ]
        if more:
            lines = tuple(sorted((*lines, *more), key=_begin))
    return Prescanned(region.start, region.end, region.oversized, lines)


def _begin(line: Candidate) -> int:
    return line.begin


def _tells_of_cells(lines: Sequence[Candidate]) -> bool:
    """Whether a needle line holds a nested-tool record or a cell's value (an event with a
    parent): then a cell's result in the region must be applied in its place (CELL_NEEDLE).

    Such a line's first event is the call with the parent, a call's last field. This runs for
    every needle line of a scan, so the lines are sifted in C (first events whose last field
    is truthy) and only those few are looked at here.
    """
    firsts = map(_FIRST, filter(None, map(_EVENTS, map(_PARSED, lines))))
    # (a call, not one of the shorter events)
    return any(len(ev) >= CALL_FIELDS for ev in filter(_LAST, firsts))


# (Candidate.parsed, ParsedLine.events, an event's first, an event's last field: by index)
_PARSED, _EVENTS, _FIRST, _LAST = itemgetter(2), itemgetter(0), itemgetter(0), itemgetter(-1)


def prescan(
    fd: int, offset: int, *, chunk_bytes: int, max_line_bytes: int
) -> Iterator[tuple[Prescanned, bytes]]:
    """Prescan a file from ``offset`` to its end, region by region, with each region's bytes."""
    for region in read_regions(fd, offset, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes):
        yield prescan_region(region), region.data


class Job(NamedTuple):
    """A file for the helper, as the parent judged it: where it is, what it is, where to start.

    The helper reads ``path`` only if it is still that file (same ``dev``, ``ino`` and first
    ``head_len`` bytes by ``head_hash``); otherwise it answers "not done".
    """

    path: str
    dev: int
    ino: int
    head_len: int
    head_hash: str
    offset: int


def open_judged(job: Job) -> int:
    """A descriptor on ``job.path`` if it is still the judged file, else -1 (never raises)."""
    try:
        fd = os.open(job.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return -1
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (job.dev, job.ino):
            head = os.pread(fd, job.head_len, 0)
            if len(head) == job.head_len and head_hash(head) == job.head_hash:
                return fd
    except OSError:
        pass
    os.close(fd)
    return -1


def helper_share(pending: Sequence[int], min_bytes: int, max_files: int | None = None) -> int:
    """Index from which the helper takes the files, given each file's unread bytes.

    The helper takes a suffix of the files in scan order (at most ``max_files``), holding about
    ``HELPER_SHARE`` of the bytes. ``len(pending)`` means no helper: less than ``min_bytes`` in
    all (0 = never), or no split that gives the helper a fair part of the work.
    """
    total = sum(pending)
    none = len(pending)
    if min_bytes <= 0 or total < min_bytes:
        return none
    limit = none if max_files is None else max_files
    want, taken, k = total * HELPER_SHARE, 0, none
    while k > 0 and none - k < limit:
        nxt = pending[k - 1]
        if abs(taken + nxt - want) > abs(taken - want):
            break  # taking the next file would move the split further from the aim
        k -= 1
        taken += nxt
    # A sliver of the work (the first file holds most of the bytes): only a fork's cost.
    return k if taken >= total * HELPER_SHARE / 2 else none


def free_core(cpus: int, load_1min: float, runnable_now: int) -> bool:
    """Whether a core is idle for the helper, from what the system reports (pure).

    ``runnable_now`` counts this process. A second core must be left over once this process
    and the others' load have one each: else the helper only takes turns with the scan on one
    core, and its transport is pure cost.
    """
    if cpus < 2:
        return False
    others_now = max(runnable_now - 1, 0)
    return max(load_1min, others_now) <= cpus - 1 - 1 + FREE_CORE_LOAD


def core_is_free() -> bool:
    """:func:`free_core` for this machine now (Linux: /proc/loadavg; elsewhere the average)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return cpus >= 2  # no load figure at all: assume the cores are there
    runnable = 1
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/loadavg") as fh:
        runnable = int(fh.read().split()[3].split("/")[0])
    return free_core(cpus, load, runnable)


def can_fork() -> bool:
    """Forking is safe here: a POSIX system and no other thread (a lock could be held)."""
    if not hasattr(os, "fork") or not sys.platform.startswith(("linux", "darwin")):
        return False
    # A process that never imported threading runs no other Python thread (and a one-shot
    # command need not pay for importing it to learn that).
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


class Helper:
    """A forked child prescanning ``jobs`` in order, answering each as soon as it is done.

    The caller takes the answers in order with :meth:`next` and calls :meth:`close` at the
    end (or to give up). :meth:`next` returns None for a job the child did not answer (not
    forked, died, or another file at the job's path): the caller prescans it itself.
    """

    def __init__(self, jobs: Sequence[Job], *, chunk_bytes: int, max_line_bytes: int) -> None:
        self._left = len(jobs)
        self._pid = 0
        self._read_fd = -1
        try:
            read_fd, write_fd = os.pipe()
        except OSError:  # out of descriptors: no helper, the caller reads everything
            return
        _widen_pipe(write_fd)
        import signal

        # SIGINT, SIGTERM and SIGHUP end the helper at once (it has nothing to drain or
        # reload), and wait while the process forks: a Ctrl-C landing in the child before it
        # has its own handlers would unwind the parent's code there, open transaction and all.
        ending = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, ending)
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:  # the child: prescan, answer, exit without running any cleanup
            code = 1
            try:
                for sig in ending:  # the parent's handlers (a daemon's SIGTERM) are not ours
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                os.close(read_fd)
                for job in jobs:
                    answer = marshal.dumps(_flatten(job, chunk_bytes, max_line_bytes))
                    write_all(write_fd, len(answer).to_bytes(8, "little") + answer)
                code = 0
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(write_fd)
        self._pid, self._read_fd = pid, read_fd

    def next(self) -> list[Prescanned] | None:
        """The next job's prescan as plain tuples of :class:`Prescanned`'s fields, waiting for
        the child if need be (None if it gave none)."""
        if self._left <= 0:
            raise IndexError("every job's answer was taken")
        self._left -= 1
        if self._read_fd < 0:
            return None
        try:
            size = int.from_bytes(self._read_exactly(8), "little")
            return marshal.loads(self._read_exactly(size))
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            self.close()  # a dead or confused child: the rest is read by the caller
            return None

    def close(self) -> None:
        """Stop the child if it is still running, and reap it."""
        if self._pid and self._left > 0:
            import signal

            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
        pid, self._pid = self._pid, 0
        if pid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def _read_exactly(self, n: int) -> bytes:
        chunks: list[bytes] = []
        while n > 0:
            chunk = os.read(self._read_fd, min(n, 1 << 20))
            if not chunk:
                raise EOFError("the helper ended early")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


class HelperShare:
    """The files a forked helper prescans, taken in scan order as it answers.

    ``plans`` are the caller's records of the helper's files, one per job, in the jobs'
    order: each answer is taken for the plan it was asked for, and for no other.
    """

    def __init__(self, helper: Helper, plans: Sequence[object]) -> None:
        self._helper = helper
        self._next = iter(plans)

    def result(self, plan: object) -> list[Prescanned] | None:
        expected = next(self._next, None)
        assert expected is plan, "the helper's files are committed in the order they were given"
        return self._helper.next()

    def close(self) -> None:
        self._helper.close()


def _widen_pipe(fd: int) -> None:
    """Let the child run ahead of the parent by a few hundred files (Linux; elsewhere as is)."""
    with contextlib.suppress(ImportError, AttributeError, OSError):
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)


# ------------------------------------------------------------------ transport as plain tuples


def _flatten(job: Job, chunk_bytes: int, max_line_bytes: int) -> list[tuple[object, ...]] | None:
    """A file's prescan, with its id searches, as plain tuples (``marshal`` takes no
    subclasses); None when the file at ``job.path`` is no longer the one judged."""
    fd = open_judged(job)
    if fd < 0:
        return None
    try:
        out: list[tuple[object, ...]] = []
        open_calls = OpenCalls()
        regions = prescan(fd, job.offset, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes)
        for pre, data in regions:
            for line in pre.lines:
                open_calls.note(line.parsed, line.end)
            found = pre._replace(by_id=search_open_calls(pre, data, open_calls))
            out.append(tuple(map(_plain, found)))
        return out
    finally:
        os.close(fd)


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        return tuple(map(_plain, value))
    return value


class OpenCalls:
    """Memory calls made in one file that no line of it has answered yet (the helper's view),
    answered exactly when the scanner would mark them so (:func:`.calls.answers`)."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[str, int]] = {}  # call id → (tool, look from this offset)
        self._seen: set[str] = set()

    def note(self, parsed: ParsedLine, line_end: int) -> None:
        for ev in parsed.events:
            if isinstance(ev, ToolCall):
                if ev.call_id not in self._seen:
                    self._seen.add(ev.call_id)
                    self.open[ev.call_id] = (ev.tool, line_end)
            elif (
                isinstance(ev, ToolResult)
                and ev.call_id in self.open
                and answers(ev, self.open[ev.call_id][0])
            ):
                del self.open[ev.call_id]


def search_open_calls(pre: Prescanned, data: bytes, open_calls: OpenCalls) -> tuple[IdSearch, ...]:
    """Look for the open calls' ids in a region (after each call's own line), in order; each
    search stops at the line that answers its call (which may answer several)."""
    needle = {line.begin for line in pre.lines}
    parsed_here: dict[int, Candidate] = {}
    size = pre.end - pre.start
    out: list[IdSearch] = []
    for call_id, (_, at) in list(open_calls.open.items()):
        if call_id not in open_calls.open:
            continue  # answered by a line found for another call
        start = max(at, pre.start)
        stop = pre.end
        found: list[Candidate] = []
        for b, e in lines_containing(data, call_id.encode(), size, start - pre.start):
            begin = pre.start + b
            if begin in needle:
                continue
            line = parsed_here.get(begin)
            if line is None:
                line = parsed_here[begin] = Candidate(begin, pre.start + e, parse(data[b:e]))
                # (a call made in such a line is looked for from the next region on)
                open_calls.note(line.parsed, pre.end)
            found.append(line)
            if call_id not in open_calls.open:
                stop = line.end
                break
        out.append(IdSearch(call_id, start, stop, tuple(found)))
    return tuple(out)
