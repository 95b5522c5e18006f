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
               place): read from 0.
``NEW``        never seen: read from 0.

Reading from 0 again is always safe: hits are unique per (agent, call, file), so
lines seen before are no-ops. Lines are split as bytes on ``\\n`` inside bounded
chunks, so a multi-byte character is never cut and a line of many megabytes is
just carried over; a trailing line without ``\\n`` is left for the next read.
"""

from __future__ import annotations

import enum
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

HEAD_MAX = 1024


class Verdict(enum.Enum):
    UNCHANGED = "unchanged"
    GROWN = "grown"
    RENAMED = "renamed"
    TRUNCATED = "truncated"
    REPLACED = "replaced"
    NEW = "new"


@dataclass(frozen=True, slots=True)
class Checkpoint:
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


def head_hash(head: bytes) -> str:
    return hashlib.blake2b(head, digest_size=16).hexdigest()


def quick_verdict(cp: Checkpoint | None, path: str, st: os.stat_result) -> Verdict | None:
    """The verdict from ``stat`` alone, or None when the first bytes must be read."""
    if cp is None:
        return Verdict.NEW
    if st.st_size < cp.offset:
        return Verdict.TRUNCATED
    if cp.path == path and st.st_size == cp.size and st.st_mtime_ns == cp.mtime_ns:
        return Verdict.UNCHANGED
    return None


def judge(cp: Checkpoint, path: str, st: os.stat_result, head: bytes) -> Verdict:
    """Decide what a changed file is, given its first bytes (up to HEAD_MAX)."""
    quick = quick_verdict(cp, path, st)
    if quick is not None:
        return quick
    if len(head) < cp.head_len or head_hash(head[: cp.head_len]) != cp.head_hash:
        return Verdict.REPLACED
    return Verdict.RENAMED if cp.path != path else Verdict.GROWN


@dataclass(frozen=True, slots=True)
class Region:
    """Complete lines read from a file: ``data`` spans ``[start, end)`` and ends with ``\\n``."""

    data: bytes
    start: int
    end: int
    oversized: int = 0  # lines skipped because they exceeded max_line_bytes


def read_regions(
    fd: int, offset: int, *, chunk_bytes: int, max_line_bytes: int
) -> Iterator[Region]:
    """Yield runs of complete lines from ``offset`` on, one chunk (or long line) at a time.

    A line longer than ``max_line_bytes`` is skipped up to its ``\\n`` and reported
    in ``oversized`` (its bytes are never held in memory at once); the next region
    starts after it. Bytes after the last ``\\n`` are not yielded.
    """
    pos = offset  # file offset of carry[0]
    carry = b""
    skipping = False
    while True:
        chunk = os.pread(fd, chunk_bytes, pos + len(carry))
        if not chunk:
            return
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                pos += len(chunk)
                continue
            skipping = False
            pos += nl + 1
            yield Region(b"", pos, pos, oversized=1)
            carry = b""
            chunk = chunk[nl + 1 :]
            if not chunk:
                continue
        data = carry + chunk if carry else chunk
        last = data.rfind(b"\n")
        if last < 0:
            if len(data) > max_line_bytes:
                skipping = True
                pos += len(data)
                carry = b""
            else:
                carry = data
            continue
        end = last + 1
        yield Region(data[:end], pos, pos + end)
        pos += end
        carry = data[end:]


def lines_containing(data: bytes, needle: bytes, start: int = 0) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` of every line of ``data`` holding ``needle`` (end excludes ``\\n``)."""
    find, rfind = data.find, data.rfind
    i = find(needle, start)
    while i >= 0:
        begin = rfind(b"\n", 0, i) + 1
        end = find(b"\n", i)
        if end < 0:
            end = len(data)
        yield begin, end
        i = find(needle, end)
