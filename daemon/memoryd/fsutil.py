"""The file primitives every part of memoryd shares: read without following, write atomically.

Why one module: a path memoryd reads may sit in a folder a person (or an agent)
can write, so a final symlink must never be followed (``O_NOFOLLOW``), and only
regular files are read. A file memoryd writes for others to read (refcount.json,
reports, a service unit) must be whole or absent after a crash: a temporary file
in the same folder, fsynced, renamed over the old one, and the folder fsynced.
These rules used to be written out in four readers and three writers; they are
written here once.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CHUNK = 1 << 16


class NotRegularFile(OSError):
    """The path names something other than a regular file (a folder, a FIFO, a device)."""


@contextlib.contextmanager
def open_regular(path: Path | str) -> Iterator[tuple[int, os.stat_result]]:
    """(descriptor, stat) of a regular file opened read-only, never through a final symlink.

    Raises :class:`OSError` (``ELOOP`` for a symlink) or :class:`NotRegularFile`.
    """
    fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{path}: not a regular file")
        yield fd, st
    finally:
        os.close(fd)


def read_regular(path: Path | str, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes (the first ``limit`` when given) and its stat, in one open."""
    with open_regular(path) as (fd, st):
        chunks: list[bytes] = []
        got = 0
        while limit is None or got < limit:
            want = _CHUNK if limit is None else min(_CHUNK, limit - got)
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if len(chunk) < want:  # a regular file reads short only at its end: no extra call
                break
        return b"".join(chunks), st


def read_text(path: Path | str, limit: int | None = None) -> str:
    """A regular file's text (undecodable bytes replaced), never through a final symlink."""
    return read_regular(path, limit)[0].decode("utf-8", errors="replace")


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (``os.write`` may write fewer than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(folder: Path | str) -> None:
    """Make the names in ``folder`` durable (a rename or unlink survives a power cut)."""
    try:
        fd = os.open(folder, os.O_RDONLY | DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def _write_synced(path: Path | str, data: bytes, flags: int, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | NOFOLLOW | flags, mode)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path | str, data: bytes, mode: int = 0o644) -> None:
    """Create ``path`` (it must not exist, and is never a symlink) with ``data``, fsynced."""
    _write_synced(path, data, os.O_EXCL, mode)


def temp_name(path: Path) -> Path:
    """The temporary name a write to ``path`` goes through (same folder, hidden, per process)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def replace_durably(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` over ``path`` and fsync the folder (the last step of an atomic write)."""
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data``: whole or not at all, even across a crash.

    Temporary file in the same folder, fsync, ``os.replace``, fsync the folder; a
    failure removes the temporary file and leaves the old content in place.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        _write_synced(tmp, data, os.O_TRUNC, mode)
        replace_durably(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
