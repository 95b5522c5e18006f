"""The file primitives every part of memoryd shares: read without following, write atomically.

A path memoryd reads may sit in a folder a person (or an agent) can write, so a final symlink
is never followed and only regular files are read; a file memoryd writes for others must be
whole or absent after a crash. These rules are written here once.

A note is opened with ``O_NONBLOCK`` and its type checked on the descriptor, never before: a
FIFO put in place of a note then fails at once instead of blocking forever with a lock held.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 16

# The counter (``counters`` table) a refused note read adds to, where a state database is open.
NOT_A_NOTE_COUNTER = "notes_not_regular"


class NotRegularFile(OSError):
    """The path names something other than a regular file (a folder, a FIFO, a device)."""


@contextlib.contextmanager
def open_regular(path: Path | str) -> Iterator[tuple[int, os.stat_result]]:
    """(descriptor, stat) of a regular file opened read-only, never through a final symlink.

    Raises :class:`OSError` (``ELOOP`` for a symlink) or :class:`NotRegularFile`.
    """
    fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC)
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


# This process's refused note reads: how many since the last take, and the paths already
# logged (one line per path and process: a FIFO the daemon meets at every search is one line).
_not_notes = 0
_logged: set[str] = set()


def _why_not(exc: OSError) -> str:
    if isinstance(exc, NotRegularFile):
        return "not a regular file (a FIFO, a device, a socket or a folder)"
    if exc.errno == errno.ELOOP:
        return "a symbolic link (memoryd never follows one)"
    return exc.strerror or type(exc).__name__


def not_a_note(path: Path | str, why: str) -> None:
    """Count and log (once per path) a path that was to be read as a note and is not one."""
    global _not_notes
    _not_notes += 1
    key = str(path)
    if key in _logged:
        return
    _logged.add(key)
    from .log import emit

    emit("note.not_a_note", "memoryd.notes", file=key, why=why)


def take_not_notes() -> int:
    """How many note reads were refused since the last call (for a counter); resets it."""
    global _not_notes
    n, _not_notes = _not_notes, 0
    return n


def read_note(path: Path | str, limit: int | None = None) -> tuple[bytes, int] | None:
    """(the first ``limit`` bytes, the file's size) of a note, or None when it is not one:
    anything but a regular file reached without a symlink is counted and logged once
    (:func:`not_a_note`); a file gone meanwhile is just skipped."""
    try:
        data, st = read_regular(path, limit)
    except FileNotFoundError:
        return None
    except OSError as exc:
        not_a_note(path, _why_not(exc))
        return None
    return data, st.st_size


BINARY = "binary: not text (a NUL byte, or not UTF-8)"


def looks_binary(data: bytes) -> bool:
    """Whether a note's bytes are not text: a NUL byte, or more than 1 in 100 characters
    undecodable as UTF-8 (a stray Latin-1 byte in a text note is still text)."""
    if b"\0" in data:
        return True
    text = data.decode("utf-8", errors="replace")
    return text.count("\ufffd") * 100 > max(len(text), 1)


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


def _write_synced(
    path: Path | str, data: bytes, flags: int, mode: int, exact: bool = False
) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | NOFOLLOW | flags, mode)
    try:
        if exact:
            os.fchmod(fd, mode)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path | str, data: bytes, mode: int = 0o644, *, exact: bool = False) -> None:
    """Create ``path`` (it must not exist, and is never a symlink) with ``data``, fsynced.
    ``exact``: with ``mode`` as it is, the umask not applied (a file's new version put under
    its name keeps the file's own permissions)."""
    _write_synced(path, data, os.O_EXCL, mode, exact)


NAME_MAX_BYTES = 255  # a file name's longest on ext4, APFS, XFS, btrfs (bytes)


def side_name(path: Path, before: str, after: str) -> Path:
    """``path``'s name between ``before`` and ``after``, beside it (``.x.md.memoryd-3.tmp``).

    A name near the file system's limit would not take the additions (``ENAMETOOLONG``:
    the move would fail half done, its rollback too): then the name's bytes are cut to fit,
    at a whole character, with a hash of the whole name after them, so that each note
    still has its own side file and finds it again after a crash."""
    name = path.name
    full = f"{before}{name}{after}"
    if len(os.fsencode(full)) <= NAME_MAX_BYTES:
        return path.with_name(full)
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    room = NAME_MAX_BYTES - len(os.fsencode(f"{before}~{digest}{after}"))
    head = os.fsencode(name)[: max(room, 0)].decode("utf-8", "ignore")
    return path.with_name(f"{before}{head}~{digest}{after}")


def temp_name(path: Path) -> Path:
    """The temporary name a write to ``path`` goes through (same folder, hidden, per process)."""
    return side_name(path, ".", f".{os.getpid()}.tmp")


def replace_durably(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` over ``path`` and fsync the folder (the last step of an atomic write)."""
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data``, whole or not at all across a crash (temporary file,
    fsync, ``os.replace``, fsync the folder); a failure leaves the old content in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        _write_synced(tmp, data, os.O_TRUNC, mode)
        replace_durably(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# renameat2(2)'s RENAME_EXCHANGE (Linux 3.15+) and renamex_np(2)'s RENAME_SWAP (macOS 10.12+)
# are both 2. What a file system that cannot swap answers: the caller then goes another way.
_SWAP_FLAG = 2
_AT_FDCWD = -100
# EPERM too: a sandbox (seccomp) may answer so for a system call it does not know; a failed swap
# changed nothing, and a real EPERM fails the rename the caller does instead the same way.
_CANNOT_SWAP = frozenset(
    {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EPERM}
)
_swap_call: object = None  # the libc function, found on first use (None: not looked for yet)


def exchange(a: Path | str, b: Path | str) -> bool:
    """Swap the files named ``a`` and ``b`` in one step: each name always names a file.

    Renaming the old note aside and the new one in leaves a moment with no ``MEMORY.md`` for
    a session starting then; a swap has none, and leaves the old file under the other name.
    False (nothing changed) where the system or file system cannot swap; other errors raise.
    """
    call = _libc_swap()
    if call is False:
        return False
    import ctypes  # (only here: the one-shot commands never swap)

    fa, fb = os.fsencode(a), os.fsencode(b)
    if b"\0" in fa or b"\0" in fb:  # (C would read the name only up to it)
        raise ValueError("embedded null byte")
    if sys.platform == "darwin":
        done = call(fa, fb, _SWAP_FLAG)  # type: ignore[operator]
    else:
        done = call(_AT_FDCWD, fa, _AT_FDCWD, fb, _SWAP_FLAG)  # type: ignore[operator]
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in _CANNOT_SWAP:
        return False
    raise OSError(err, os.strerror(err), os.fsdecode(a), None, os.fsdecode(b))


def _libc_swap() -> object:
    """libc's renameat2 (Linux) or renamex_np (macOS); False where there is none."""
    global _swap_call
    if _swap_call is None:
        _swap_call = False
        if sys.platform.startswith("linux") or sys.platform == "darwin":
            import ctypes

            try:
                libc = ctypes.CDLL(None, use_errno=True)
                if sys.platform == "darwin":
                    call = libc.renamex_np
                    call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
                else:
                    call = libc.renameat2
                    at, name = ctypes.c_int, ctypes.c_char_p
                    call.argtypes = [at, name, at, name, ctypes.c_uint]
                call.restype = ctypes.c_int
                _swap_call = call
            except (OSError, AttributeError):  # a libc without it (glibc before 2.28)
                _swap_call = False
    return _swap_call
