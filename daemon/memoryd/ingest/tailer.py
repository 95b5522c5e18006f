"""File identity, checkpoints and chunked reading: the tailer's whole contract.

A transcript is identified by ``(dev, ino)`` plus a fingerprint of its first
bytes (``head_len`` bytes, hashed). The checkpoint is the byte after the last
complete line whose effect is committed. :func:`judge` names every case:

``UNCHANGED``  same inode, path, size and mtime: nothing to read, file not opened.
``GROWN``      same identity, more bytes: read from the checkpoint.
``RENAMED``    same inode and fingerprint under a new path (``.reset.<ts>``,
               ``.deleted.<ts>``, moved into the import archive): keep the offset.
``TRUNCATED``  size below the checkpoint: the file was cut or rewritten; read from 0.
``REPLACED``   same inode, different first bytes (inode reused, rewritten in
               place), or different bytes just before the checkpoint (rewritten
               in place with the same first bytes and a longer tail, ``cat new >
               F``): read from 0.
``NEW``        never seen: read from 0.

Reading from 0 again is always safe: hits are unique per (agent, call, file), so
lines seen before are no-ops. Lines are split as bytes on ``\\n`` inside bounded
chunks, so a multi-byte character is never cut and a line of many megabytes is
just carried over; a trailing line without ``\\n`` is left for the next read.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator
from typing import NamedTuple

HEAD_MAX = 1024
# The bytes just before a checkpoint that are read to fingerprint it (one small read per
# grown file tells an append from a rewrite that kept the first bytes).
TAIL_LEN = 4096


class Verdict(enum.Enum):
    UNCHANGED = "unchanged"
    GROWN = "grown"
    RENAMED = "renamed"
    TRUNCATED = "truncated"
    REPLACED = "replaced"
    NEW = "new"


class Checkpoint(NamedTuple):
    """A committed read position and the identity it belongs to (a ``sources`` row)."""

    id: int
    agent: str
    path: str
    dev: int
    ino: int
    head_len: int
    head_hash: str
    offset: int
    size: int
    mtime_ns: int
    tail_hash: str | None = None  # of the TAIL_LEN bytes before offset (None: not recorded)


try:  # the builtin module: hashlib would load OpenSSL first, a few ms of every command's start
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b


def head_hash(head: bytes) -> str:
    return blake2b(head, digest_size=16).hexdigest()


def tail_hash(before: bytes) -> str:
    """Fingerprint of the last line before a checkpoint (of its last ``TAIL_LEN`` bytes at most).

    The whole line, not a fixed count of bytes: lines of one kind end alike (a tool
    result's last 64 bytes are the same in every transcript), while their start holds
    the entry's own ids.
    """
    cut = before.rfind(b"\n", 0, len(before) - 1) + 1
    return blake2b(before[cut:], digest_size=8).hexdigest()


def quick_verdict(cp: Checkpoint | None, path: str, st: os.stat_result) -> Verdict | None:
    """The verdict from ``stat`` alone, or None when the first bytes must be read."""
    if cp is None:
        return Verdict.NEW
    if st.st_size < cp.offset:
        return Verdict.TRUNCATED
    if cp.path == path and st.st_size == cp.size and st.st_mtime_ns == cp.mtime_ns:
        return Verdict.UNCHANGED
    return None


def judge(
    cp: Checkpoint, path: str, st: os.stat_result, head: bytes, before: bytes | None = None
) -> Verdict:
    """Decide what a changed file is, given its first bytes (up to HEAD_MAX).

    ``before`` is the ``TAIL_LEN`` bytes (fewer near the start) ending at the
    checkpoint's offset, as the file holds them now; compared with the checkpoint's
    ``tail_hash`` when both are known.
    """
    quick = quick_verdict(cp, path, st)
    if quick is not None:
        return quick
    if len(head) < cp.head_len or head_hash(head[: cp.head_len]) != cp.head_hash:
        return Verdict.REPLACED
    if before is not None and cp.tail_hash is not None and tail_hash(before) != cp.tail_hash:
        return Verdict.REPLACED
    return Verdict.RENAMED if cp.path != path else Verdict.GROWN


class Region(NamedTuple):
    """Complete lines read from a file, covering file bytes ``[start, end)``.

    The lines are ``data[: end - start]`` (ending with ``\\n``); ``data`` may hold a
    few bytes more (the start of a line not finished yet), which are not part of it.
    Keeping the read buffer as it is avoids copying every chunk once more.
    """

    data: bytes
    start: int
    end: int
    oversized: int = 0  # lines skipped because they exceeded max_line_bytes

    @property
    def size(self) -> int:
        return self.end - self.start


def read_regions(
    fd: int, offset: int, *, chunk_bytes: int, max_line_bytes: int
) -> Iterator[Region]:
    """Yield runs of complete lines from ``offset`` on, about one chunk at a time.

    Each read starts at the first byte not yet yielded, so a line cut by a chunk
    edge is simply read again whole with the next chunk. A line longer than a
    chunk doubles the read size until it fits; one longer than
    ``max_line_bytes`` is skipped up to its ``\\n`` (never held in memory) and
    reported in ``oversized``. A trailing line without ``\\n`` is not yielded.
    """
    pos = offset
    want = chunk_bytes
    while True:
        data = os.pread(fd, want, pos)
        if not data:
            return
        last = data.rfind(b"\n")
        if last >= 0:
            yield Region(data, pos, pos + last + 1)
            pos += last + 1
            want = chunk_bytes
        elif len(data) < want:
            return  # end of file inside a line still being written
        elif want > max_line_bytes:
            newline = _next_newline(fd, pos + len(data), chunk_bytes)
            if newline < 0:
                return  # the oversized line is not finished yet: skip it later
            pos = newline + 1
            yield Region(b"", pos, pos, oversized=1)
            want = chunk_bytes
        else:
            want = min(want * 2, max_line_bytes + 1)


def _next_newline(fd: int, pos: int, chunk_bytes: int) -> int:
    """File offset of the next ``\\n`` at or after ``pos``, or -1 at end of file."""
    while True:
        data = os.pread(fd, chunk_bytes, pos)
        if not data:
            return -1
        i = data.find(b"\n")
        if i >= 0:
            return pos + i
        pos += len(data)


def lines_containing(
    data: bytes, needle: bytes, stop: int | None = None, start: int = 0, within: int | None = None
) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` of each line of ``data[:stop]`` holding ``needle`` at or after ``start``
    (and, when ``within`` is given, starting before ``within``: a search over a window).

    ``end`` is the offset of the line's ``\n`` (or ``stop``).
    """
    stop = len(data) if stop is None else stop
    until = stop if within is None else within
    find, rfind = data.find, data.rfind
    i = find(needle, start, until)
    while i >= 0:
        begin = rfind(b"\n", 0, i) + 1
        end = find(b"\n", i, stop)
        if end < 0:
            end = stop
        yield begin, end
        i = find(needle, end, until)
