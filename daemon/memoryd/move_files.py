"""The file primitives a journaled move is made of: a regular file's hash and bytes read
without following a final symlink, a durable unlink, and the private names (temp copy,
source set aside) the crash table of :mod:`memoryd.mover` finds after a crash.

Pure but for the file system calls; nothing here writes the journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from .fsutil import NotRegularFile, fsync_dir, open_regular, read_regular, side_name

_CHUNK = 1 << 20


class MoveError(Exception):
    """An operation was refused or could not be done; no file was changed."""


def make_folders(folder: Path, check: Callable[[Path], object]) -> None:
    """Create ``folder``'s missing folders one by one from the top, each checked by ``check``
    (the mover's ``check_path``) as soon as it exists: a symlink swapped in on the way is
    refused before anything is written under it."""
    missing: list[Path] = []
    cur = folder
    while not os.path.lexists(cur):
        missing.append(cur)
        cur = cur.parent
    for f in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(f)
        check(f)


def fingerprint(path: Path | str) -> tuple[str, int, os.stat_result]:
    """(hex sha256, size, stat) of a regular file, refusing to follow a final symlink."""
    try:
        with open_regular(path) as (fd, st):
            h = hashlib.sha256()
            size = 0
            while chunk := os.read(fd, _CHUNK):
                h.update(chunk)
                size += len(chunk)
            return h.hexdigest(), size, st
    except NotRegularFile as exc:
        raise MoveError(str(exc)) from None


def sha256_file(path: Path | str) -> tuple[str, int]:
    """(hex sha256, size) of a regular file, refusing to follow a final symlink."""
    sha, size, _ = fingerprint(path)
    return sha, size


def read_regular_file(path: Path | str) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes and its stat, in one read, refusing to follow a final symlink."""
    try:
        return read_regular(path)
    except NotRegularFile as exc:
        raise MoveError(str(exc)) from None


def _unlink_durably(path: Path) -> None:
    """Remove a name and make the removal survive a power cut (fsync its folder)."""
    os.unlink(path)
    fsync_dir(path.parent)


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _temp_name(dst: Path, move_id: int) -> Path:
    return side_name(dst, ".", f".memoryd-{move_id}.tmp")


def _aside_name(src: Path, move_id: int) -> Path:
    """Where a source waits, renamed aside, between its check and its unlink."""
    return side_name(src, ".", f".memoryd-{move_id}.aside")


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What says "the same file, unchanged" besides its hash: inode, size and mtime."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
